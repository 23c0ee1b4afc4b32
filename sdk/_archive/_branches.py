"""The branches of a thread's archive: segments form a tree by their parents.

Every segment records the segment it continues (:attr:`ArchiveSegment.parent`, ``0`` for
the thread's start). A history that continues a committed segment adds a child to it; a
history that forks (time travel to an older checkpoint, a re-run turn, a rewind) adds a
second child to the last segment it shares, and that child starts a branch of its own. A
branch is a path from the thread's start to a segment nothing continues yet (a leaf); it is
named after its first segment of its own: the lowest-numbered child of a segment carries
its parent's branch on, every later child starts a new one. Numbers only grow, so a name
never changes once given (unless two writers race for the same parent: then the lower
number carries the line on, whichever committed first).

Pure functions over values: nothing here touches storage.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ctxfs._archive._codec import joined, sha
from ctxfs._archive._segment import ArchiveSegment

__all__ = ["TranscriptBranch", "branch_of", "branches", "chain", "held_prefix", "with_parents"]


@dataclass(frozen=True, slots=True)
class TranscriptBranch:
    """One branch of a thread's transcript: the segments one history is made of.

    Attributes:
        number: Its name: the number of its first segment of its own (the thread's first
            line is named after its first segment, usually 1).
        segments: Its segments from the thread's start, oldest first (shared ones too).
        forked_from: The last segment it shares with the branch it forked from (``0``: it
            shares none, or it is the first line).
    """

    number: int
    segments: tuple[ArchiveSegment, ...]
    forked_from: int = 0

    @property
    def leaf(self) -> ArchiveSegment:
        """Its latest segment."""
        return self.segments[-1]

    @property
    def numbers(self) -> tuple[int, ...]:
        """The numbers of its segments, oldest first."""
        return tuple(segment.number for segment in self.segments)


def with_parents(entries: Iterable[ArchiveSegment]) -> tuple[ArchiveSegment, ...]:
    """Returns ``entries`` sorted by number, each with its parent: an entry written before
    parents were recorded follows the latest earlier segment that ends where it starts."""
    out: list[ArchiveSegment] = []
    ends: dict[int, int] = {}  # stop -> latest segment number ending there
    for segment in sorted(entries, key=lambda s: s.number):
        if segment.parent is None:
            segment = replace(segment, parent=ends.get(segment.start, 0))
        out.append(segment)
        ends[segment.stop] = segment.number
    return tuple(out)


def _children(entries: Sequence[ArchiveSegment]) -> dict[int, list[ArchiveSegment]]:
    numbers = {segment.number for segment in entries}
    kids: dict[int, list[ArchiveSegment]] = {}
    for segment in sorted(entries, key=lambda s: s.number):
        parent = segment.parent or 0
        kids.setdefault(parent if parent in numbers else 0, []).append(segment)
    return kids


def chain(entries: Sequence[ArchiveSegment], number: int) -> tuple[ArchiveSegment, ...]:
    """Returns the segments from the thread's start to segment ``number``, oldest first
    (empty if it is not among ``entries``; a parent missing from them ends the walk)."""
    by_number = {segment.number: segment for segment in entries}
    out: list[ArchiveSegment] = []
    current = by_number.get(number)
    while current is not None and len(out) <= len(by_number):
        out.append(current)
        current = by_number.get(current.parent or 0)
    return tuple(reversed(out))


def branch_of(entries: Sequence[ArchiveSegment], number: int) -> int:
    """Returns the name of the branch segment ``number`` is on (see the module docstring)."""
    kids = _children(entries)
    by_number = {segment.number: segment for segment in entries}
    current = by_number.get(number)
    seen = 0
    while current is not None and seen <= len(by_number):
        parent = current.parent if current.parent in by_number else 0
        siblings = kids.get(parent or 0, [])
        if not siblings or siblings[0].number != current.number or not parent:
            return current.number
        current, seen = by_number[parent], seen + 1
    return number


def branches(entries: Sequence[ArchiveSegment]) -> tuple[TranscriptBranch, ...]:
    """Returns every branch of the tree ``entries`` make, by name."""
    kids = _children(entries)
    out = []
    for segment in entries:
        if kids.get(segment.number):
            continue  # continued: not a leaf
        path = chain(entries, segment.number)
        name = branch_of(entries, segment.number)
        first = next(i for i, s in enumerate(path) if s.number == name)
        forked = path[first - 1].number if first > 0 else 0
        out.append(TranscriptBranch(number=name, segments=path, forked_from=forked))
    return tuple(sorted(out, key=lambda b: b.number))


def held_prefix(
    entries: Sequence[ArchiveSegment], parent: int, lines: Sequence[str], start: int
) -> ArchiveSegment | None:
    """The last of the segments continuing ``parent`` that hold, byte for byte and one
    after the other, the first of ``lines`` (which start at position ``start``); ``None``
    if none does. Where several children would do, the one holding the most wins."""
    kids = _children(entries)
    position, node, held = start, parent, None
    while True:
        best = None
        for child in kids.get(node, ()):
            if child.start != position or child.stop <= position:
                continue
            if child.stop - start > len(lines):
                continue
            ours = joined(lines[position - start : child.stop - start])
            if len(ours) != child.jsonl_bytes or sha(ours) != child.jsonl_sha256:
                continue
            if best is None or child.stop > best.stop:
                best = child
        if best is None:
            return held
        held, node, position = best, best.number, best.stop
