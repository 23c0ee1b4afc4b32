"""Append-only transcript archive: every message summarization drops, kept byte-exact.

Layout, per thread (``<thread>`` is :func:`ctxfs._layout.safe_name` of the thread id)::

    /transcripts/<thread>/segment-0001.jsonl   lossless: one message per line
    /transcripts/<thread>/segment-0001.md      readable twin, every text verbatim
    /transcripts/<thread>/segment-0001.json    its record: the index entry, on its own
    /transcripts/<thread>/index-0001.json      a full page: entries of segments 1-32
    /transcripts/<thread>/index.json           the head: the page count and later entries

The formats are in :mod:`~ctxfs._archive._codec`, the entry and the folder in
:mod:`~ctxfs._archive._segment`, the paged index in :mod:`~ctxfs._archive._index`, the tree
of branches in :mod:`~ctxfs._archive._branches`.

Write protocol (crash-safe, deterministic): the two segment files are written create-only
and read back (size and SHA-256) before anything else happens; then the segment's record is
written create-only (the commit itself); only then is the head of the index rewritten, as a
conditional write on the version that was read (compare-and-swap: another writer's entry is
never overwritten). So no index entry ever names a missing or half-written file, and the
index is a cache of the records: a missing, torn or incomplete index is rebuilt from them. A
write whose answer was lost is recognised by reading back what it wrote. The time in the
index comes from the ``clock`` argument; it appears nowhere else, so messages and segment
files do not depend on it.

Branches. Each segment records the segment it continues (its parent): the last one the
summary in context names, or the thread's start. Messages that committed segments
continuing it already hold byte for byte (a compaction whose result never reached the
agent's state, a re-run turn) are not archived again: the new segment continues the last of
them. A history that differs from every committed continuation gets a segment of its own
beside them: a fork, one branch per history, each compacting like any other. Two writers on
one branch at one moment are told apart by the compare-and-swap: the one that loses reads
the index again, sees the other's segment and keeps its own beside it (reported in
:attr:`TranscriptArchive.repairs`); nothing of either is lost and neither waits.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime

from langchain_core.messages import BaseMessage, messages_from_dict, messages_to_dict

from ctxfs._archive._branches import TranscriptBranch, branches, chain, held_prefix
from ctxfs._archive._codec import (
    decode_jsonl,
    encode_jsonl,
    encode_lines,
    joined,
    json_bytes,
    render_markdown,
    sha,
)
from ctxfs._archive._index import (
    INDEX_VERSION,
    PAGE_SIZE,
    RECORDS_SINCE,
    Head,
    PagedIndex,
    Unreadable,
)
from ctxfs._archive._segment import (
    INDEX_NAME,
    ArchiveSegment,
    ThreadFolder,
    segment_number,
    thread_transcript_dir,
)
from ctxfs._errors import ArchiveError, ConflictError, PathExistsError
from ctxfs._workspace._workspace import Workspace

__all__ = [
    "INDEX_NAME",
    "PAGE_SIZE",
    "ArchiveError",
    "ArchiveSegment",
    "TranscriptArchive",
    "TranscriptBranch",
    "decode_jsonl",
    "encode_jsonl",
    "render_markdown",
    "thread_transcript_dir",
]

_MAX_PROBES = 64
_COMMIT_ATTEMPTS = 16


def _default_clock() -> datetime:
    return datetime.now(UTC)


class TranscriptArchive:
    """The transcript segments of one thread in a workspace, and their branches.

    Args:
        workspace: The SDK's writable workspace.
        thread_id: The conversation; names the folder.
        clock: Returns the time stored in the index (default: now, UTC). Inject a fixed clock
            for byte-identical index files across runs.
    """

    def __init__(
        self,
        workspace: Workspace,
        thread_id: str,
        *,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._folder = ThreadFolder(workspace, thread_id)
        self._index = PagedIndex(self._folder)
        self._thread_id = thread_id
        self._clock = clock or _default_clock
        self._repairs: list[str] = []
        # The index as segments() last read it: the first compare-and-swap of a commit is
        # tried on it (a stale one only fails that first try), sparing one read per summary.
        self._loaded: tuple[Head, tuple[ArchiveSegment, ...]] | None = None
        # The latest of this thread's segments the summary in context names (given to
        # segments() or recent() as expected): the parent of the next segment.
        self._continued: int | None = None
        # The highest number of a segment the summary names of which nothing is left: never
        # given again, so that the summary's name never means other messages.
        self._gone_above = 0

    @property
    def workspace(self) -> Workspace:
        """The workspace the thread's transcripts are in."""
        return self._folder.workspace

    @property
    def directory(self) -> str:
        """The thread's transcript folder."""
        return self._folder.directory

    @property
    def index_path(self) -> str:
        """The thread's index file."""
        return self._folder.index_path

    def segment_paths(self, number: int) -> tuple[str, str]:
        """Returns the (JSONL, Markdown) paths of segment ``number``."""
        return self._folder.segment_paths(number)

    def record_path(self, number: int) -> str:
        """Returns the path of segment ``number``'s record: its index entry, on its own."""
        return self._folder.record_path(number)

    def page_path(self, page: int) -> str:
        """Returns the path of full index page ``page`` (1, 2, ...)."""
        return self._folder.page_path(page)

    @property
    def repairs(self) -> tuple[str, ...]:
        """What was found wrong with the index and rebuilt, and what other writers did
        meanwhile, in order."""
        return tuple(self._repairs)

    # -- reading --------------------------------------------------------------------------

    def segments(self, *, expected: Sequence[str] = ()) -> tuple[ArchiveSegment, ...]:
        """Returns the committed segments of every branch, by number (empty if nothing was
        archived), each with its parent.

        The index is a cache of the segments' own records, and never the only copy: when it
        is missing, torn or malformed, or lacks a segment that ``expected`` names, it is
        rebuilt from the records (what was done is added to :attr:`repairs`), so a lost or
        half-written index never makes committed segments disappear or their numbers reused.
        So is an index that lacks a segment whose record is in the folder (the index write
        after its commit failed): one listing of the folder finds it; an entry whose record
        and files are all gone is dropped (nothing is left of it to list).

        Args:
            expected: Markdown paths of segments known to be committed (a summary in the
                context names them, oldest first); each must be in the answer. The last of
                this thread's is the one the next segment continues.

        Raises:
            ArchiveError: The storage could not be asked, an expected segment has no
                record either, or the index is of a newer format (never rebuilt over).
        """
        expected = self._expect(expected)
        try:
            head, entries = self._index.load()
        except Unreadable as exc:
            return self._rebuild(exc.reason, expected, exc.version)
        if head.version is None:
            rebuilt = self._rebuild("the index was missing", expected, None)
            self._loaded = None if rebuilt else (head, ())
            return rebuilt
        listed = {segment.markdown_path for segment in entries}
        missing = [path for path in expected if path not in listed]
        if missing:
            reason = f"the index lacked {', '.join(missing)}"
            return self._rebuild(reason, expected, head.version, entries)
        if head.format_version < RECORDS_SINCE:
            if not self._index.read_only:
                self._index.migrate(entries, head.version)
            return entries
        unlisted, gone = self._index.against_listing(entries)
        if unlisted or gone:  # committed after the index's last write; or deleted
            reasons = []
            if unlisted:
                reasons.append(f"the index lacked segment(s) {', '.join(map(str, unlisted))}")
            if gone:
                numbers = ", ".join(map(str, gone))
                reasons.append(f"the index listed segment(s) {numbers}, whose files are gone")
            known = [segment for segment in entries if segment.number not in gone]
            return self._rebuild("; ".join(reasons), expected, head.version, known)
        self._loaded = (head, entries)
        return entries

    def recent(self, *, expected: Sequence[str] = ()) -> tuple[ArchiveSegment, ...]:
        """Returns the latest committed segments, by number: what a compaction needs.

        The head's entries and the last full page's (at least the last :data:`PAGE_SIZE`
        segments, or all of them), read in at most two requests however long the thread,
        so a summary's commit costs the same at its 500th segment as at its first. Pass the
        answer as ``committed`` to :meth:`write_segment` and :meth:`commit`. Anything
        unusual (a missing or torn index, an old format, an expected segment older than
        the last page) takes :meth:`segments`, which reads and rebuilds the whole index.

        Args:
            expected: As for :meth:`segments`.

        Raises:
            ArchiveError: As for :meth:`segments`.
        """
        own = self._expect(expected)
        try:
            head, entries = self._index.load(pages=1)
        except Unreadable:
            return self.segments(expected=expected)
        listed = {segment.markdown_path for segment in entries}
        if (
            head.version is None
            or head.format_version < INDEX_VERSION
            or any(path not in listed for path in own)
        ):
            return self.segments(expected=expected)
        self._loaded = (head, entries)
        return entries

    def _expect(self, expected: Sequence[str]) -> list[str]:
        # a summary may name segments of another thread (a forked or parent thread): only
        # this thread's own are vouched for here
        own = [path for path in expected if self._folder.owns(path)]
        numbers = [segment_number(path) for path in own]
        known = [n for n in numbers if n is not None]
        self._continued = known[-1] if known else None
        return own

    def _rebuild(
        self,
        reason: str,
        expected: Sequence[str],
        version: str | None,
        known: Sequence[ArchiveSegment] = (),
    ) -> tuple[ArchiveSegment, ...]:
        segments, lost, stored = self._index.rebuild(expected, version, known)
        if self._index.gone:
            self._repairs.append(
                f"{', '.join(self._index.gone)}, named by the summary in context, "
                "has no record and no file left (deleted): what it held cannot be read back; "
                "the thread goes on from the segments still there"
            )
            gone = [segment_number(path) or 0 for path in self._index.gone]
            self._gone_above = max(self._gone_above, *gone)
            there = {s.number for s in segments}
            own = [segment_number(path) for path in expected if path not in self._index.gone]
            self._continued = max((n for n in own if n in there), default=None)
        if lost:
            raise ArchiveError(
                f"{reason}, and the records of {', '.join(lost)} could not be read either; "
                "nothing is dropped until they can"
            )
        if not segments:
            return ()  # a thread with nothing archived yet
        count = f"{len(segments)} segment record(s)"
        if stored:
            done = f"rebuilt from {count}"
        elif self._index.read_only:
            done = f"read from {count} instead (read-only here: the index is left as it is)"
        elif self._index.store_error is not None:
            done = (
                f"read from {count} (the index could not be written: {self._index.store_error};"
                " the next read rebuilds it)"
            )
        else:
            done = f"read from {count} (another writer rewrote the index meanwhile)"
        self._repairs.append(f"{reason}; {done}")
        return segments

    def branches(self) -> tuple[TranscriptBranch, ...]:
        """Returns the thread's branches, by name: each lists the segments one history is
        made of, from the thread's start (see :class:`~ctxfs.TranscriptBranch`).

        Raises:
            ArchiveError: As for :meth:`segments`.
        """
        return branches(self.segments())

    def branch_of(self, number: int) -> tuple[ArchiveSegment, ...]:
        """Returns the segments from the thread's start to segment ``number``, oldest first:
        the archived part of the history that segment ends (empty if there is none).

        Raises:
            ArchiveError: As for :meth:`segments`.
        """
        return chain(self.segments(), number)

    def continued(
        self, segment: ArchiveSegment, committed: Sequence[ArchiveSegment]
    ) -> tuple[str, ...]:
        """Returns the Markdown paths of the committed segments between the one the summary
        in context names and ``segment``: those that already held the first of its messages
        (see :meth:`write_segment`), so that the next summary names them too."""
        path = chain([*committed, segment], segment.number)[:-1]
        return tuple(s.markdown_path for s in path if s.number > (self._continued or 0))

    def read_segment(self, segment: ArchiveSegment) -> list[BaseMessage]:
        """Returns the messages of a segment, restored exactly from its JSONL file.

        Raises:
            ArchiveError: The file is missing or its SHA-256 does not match the index.
        """
        data = self._folder.read_bytes(segment.jsonl_path)
        if sha(data) != segment.jsonl_sha256:
            raise ArchiveError(f"{segment.jsonl_path} does not match its SHA-256 in the index")
        return decode_jsonl(data)

    def summary_of(self, segment: ArchiveSegment) -> BaseMessage | None:
        """Returns the summary message recorded with a committed segment, if any."""
        if segment.summary_message is None:
            return None
        try:
            return messages_from_dict([segment.summary_message])[0]
        except (KeyError, TypeError, ValueError):
            return None

    def read_all(self, *, branch: int | None = None) -> list[BaseMessage]:
        """Returns archived messages of the thread, oldest first.

        Args:
            branch: Only the history that segment ``branch`` ends (its branch up to it, from
                the thread's start); ``None``: every segment of every branch, by number.
        """
        segments = self.segments()
        if branch is not None:
            segments = chain(segments, branch)
        return [m for segment in segments for m in self.read_segment(segment)]

    # -- writing --------------------------------------------------------------------------

    def write_segment(
        self,
        messages: Sequence[BaseMessage],
        *,
        start: int,
        tokens: int,
        committed: Sequence[ArchiveSegment] | None = None,
    ) -> tuple[ArchiveSegment, bool]:
        """Writes and verifies a segment; does not touch the index (see :meth:`commit`).

        The segment continues the last segment of this thread that ``expected`` named (in
        :meth:`recent` or :meth:`segments`); without one, the latest segment that ends at
        ``start``, else the thread's start. Messages that committed segments continuing it
        already hold byte for byte, from ``start`` on, are not written again: the segment
        then holds only the messages after them and continues the last of those.

        Args:
            messages: The messages to archive, as the agent saw them.
            start: Absolute position of the first one in the original thread.
            tokens: Their token count, for the index.
            committed: The index as :meth:`recent` just returned it, to spare reading it
                again (pass the same to :meth:`commit`); read if omitted.

        Returns:
            The segment (with no summary yet), and whether it was already committed: the
            committed segments continuing the parent hold every one of ``messages``.

        Raises:
            ArchiveError: Writing or verifying failed; nothing refers to what was written.
        """
        if not messages:
            raise ValueError("nothing to archive: messages is empty")
        try:
            lines = encode_lines(messages)
        except (TypeError, ValueError) as exc:  # unserializable payload
            raise ArchiveError(f"the messages cannot be serialized: {exc}") from exc
        stop = start + len(messages)
        if committed is None:
            committed = self.segments()
        parent = self._parent(committed, start)
        held = held_prefix(committed, parent, lines, start)
        if held is not None and held.stop == stop:
            return held, True
        if held is not None:
            skip = held.stop - start
            messages, lines, start, parent = messages[skip:], lines[skip:], held.stop, held.number
        jsonl = joined(lines)
        try:
            continues = posixpath.basename(self.segment_paths(parent)[1]) if parent else ""
            markdown = render_markdown(
                messages, thread_id=self._thread_id, start=start, continues=continues
            ).encode(
                "utf-8",
                "backslashreplace",  # a lone surrogate must not block the archive
            )
        except (TypeError, ValueError) as exc:
            raise ArchiveError(f"the messages cannot be serialized: {exc}") from exc
        first = max((s.number for s in committed), default=0) + 1
        first = max(first, self._gone_above + 1)  # a deleted segment's number stays its own
        for number in range(max(first, parent + 1), first + _MAX_PROBES):
            jsonl_path, markdown_path = self.segment_paths(number)
            if not self._folder.put(jsonl_path, jsonl):
                self._adopt_leftover(number, committed)
                continue
            if self._folder.put(markdown_path, markdown):
                self._folder.verify(jsonl_path, jsonl)
                self._folder.verify(markdown_path, markdown)
                recorded = self._folder.read_record(self.record_path(number))
                if (
                    recorded is not None
                    and (recorded.start, recorded.stop, recorded.parent) == (start, stop, parent)
                    and recorded.jsonl_sha256 == sha(jsonl)
                ):
                    # committed by an earlier run whose index write failed: adopt it
                    return self._append(recorded, committed), True
                segment = ArchiveSegment(
                    number=number,
                    start=start,
                    stop=stop,
                    tokens=tokens,
                    created=self._clock().astimezone(UTC).isoformat(timespec="seconds"),
                    jsonl_path=jsonl_path,
                    jsonl_sha256=sha(jsonl),
                    jsonl_bytes=len(jsonl),
                    markdown_path=markdown_path,
                    markdown_sha256=sha(markdown),
                    markdown_bytes=len(markdown),
                    parent=parent,
                )
                return segment, False
        raise ArchiveError(f"no free segment number in {self.directory} after {_MAX_PROBES} tries")

    def _adopt_leftover(self, number: int, committed: Sequence[ArchiveSegment]) -> None:
        """Indexes segment ``number`` if its record was committed by a run that died before
        its index write (a killed process): a branch of its own, never left unlisted."""
        if any(s.number == number for s in committed):
            return
        recorded = self._folder.read_record(self.record_path(number))
        if recorded is not None and recorded.number == number:
            self._repairs.append(
                f"segment {number} of {self.directory} was committed by a run that stopped "
                "before indexing it; indexed now"
            )
            self._append(recorded, None)

    def _parent(self, committed: Sequence[ArchiveSegment], start: int) -> int:
        if self._continued is not None:
            return self._continued
        ending = [s.number for s in committed if s.stop == start]
        return max(ending, default=0)

    def commit(
        self,
        segment: ArchiveSegment,
        *,
        summary: BaseMessage,
        committed: Sequence[ArchiveSegment] | None = None,
    ) -> ArchiveSegment:
        """Adds a written segment to the index; a no-op if it is already there.

        The segment's record is written first (create-only: that is the commit), then the
        head of the index is rewritten on the condition that nobody changed it since it was
        read (compare-and-swap), read again and retried otherwise: an entry someone else
        added meanwhile is kept, never overwritten. When the head cannot be written at all,
        the record still stands, and the next read rebuilds the index from it.

        Args:
            segment: From :meth:`write_segment`.
            summary: The message that replaces the segment in the conversation; it is
                recorded once, in :attr:`ArchiveSegment.summary_message`.
            committed: The index as :meth:`recent` returned it before
                :meth:`write_segment`: a segment continuing the same parent that is in the
                index now but was not then was committed by another writer meanwhile (both
                are kept, and :attr:`repairs` says so).

        Returns:
            The committed segment: with the summary recorded first (an earlier run's, or
            another writer's of the very same segment, wins over ``summary``).

        Raises:
            ArchiveError: The record could not be written, or another one holds its number.
        """
        for existing in committed or ():
            if existing.number == segment.number:
                if existing.jsonl_sha256 != segment.jsonl_sha256:
                    raise ArchiveError(
                        f"segment {segment.number} of {self.directory} is already in the "
                        "index with different content"
                    )
                return existing
        final = replace(segment, summary_message=messages_to_dict([summary])[0])
        try:
            record = json_bytes(final.to_json())
        except (TypeError, ValueError) as exc:
            raise ArchiveError(f"the summary cannot be serialized: {exc}") from exc
        # The record is the commit; the index that follows is a cache rebuilt from records.
        path = self.record_path(final.number)
        recorded = self._folder.put_record(path, record)
        if recorded is not None:
            if recorded.jsonl_sha256 != final.jsonl_sha256:
                raise ArchiveError(f"{path} already holds a different record; nothing is dropped")
            final = recorded  # committed by an earlier run, or by a twin writer
        else:
            self._folder.verify(path, record)
        return self._append(final, committed)

    def _append(
        self, final: ArchiveSegment, committed: Sequence[ArchiveSegment] | None
    ) -> ArchiveSegment:
        """Adds a committed segment's entry to the index by compare-and-swap of its head."""
        seen = None if committed is None else {s.number for s in committed}
        failure: ArchiveError | None = None
        reported = False
        for _attempt in range(_COMMIT_ATTEMPTS):
            loaded, self._loaded = self._loaded, None
            try:
                head, entries = loaded if loaded is not None else self._index.load(pages=1)
            except Unreadable:
                return self._via_rebuild(final)
            except ArchiveError as exc:
                failure = exc
                continue
            if head.version is None and committed != ():
                return self._via_rebuild(final)  # lost since it was read
            for existing in entries:
                if existing.number == final.number:
                    # there already: a write whose answer was lost, or a twin writer's
                    if existing.jsonl_sha256 == final.jsonl_sha256:
                        return existing
                    return self._via_rebuild(final)  # a damaged entry: the records tell
            if seen is not None and not reported:
                reported = self._report_concurrent(final, entries, seen)
            in_pages = entries[: len(entries) - len(head.entries)]
            if in_pages and in_pages[-1].number > final.number:
                return self._via_rebuild(final)  # paged past it by another writer
            try:
                self._index.store_head(head, [*head.entries, final])
            except (ConflictError, PathExistsError):
                continue  # another commit got in first: read the head again
            except ArchiveError as exc:
                failure = exc  # it may have landed all the same: the next read tells
                continue
            return final
        self._repairs.append(
            f"the index of {self.directory} could not take segment {final.number} "
            f"({failure or 'it kept changing'}); its record is committed, and the next read "
            "rebuilds the index from the records"
        )
        return final

    def _report_concurrent(
        self, final: ArchiveSegment, entries: Sequence[ArchiveSegment], seen: set[int]
    ) -> bool:
        twins = [e for e in entries if e.number not in seen and e.parent == final.parent]
        if not twins:
            return False
        other = twins[0]
        after = f"after segment {final.parent}" if final.parent else "at the thread's start"
        self._repairs.append(
            f"another writer committed segment {other.number} (messages {other.start}-"
            f"{other.stop - 1}) {after} of {self.directory} while this one wrote segment "
            f"{final.number} (messages {final.start}-{final.stop - 1}); both are kept, as "
            "two branches"
        )
        return True

    def _via_rebuild(self, final: ArchiveSegment) -> ArchiveSegment:
        try:
            rebuilt = self.segments(expected=[final.markdown_path])
        except ArchiveError as exc:
            self._repairs.append(
                f"the index of {self.directory} could not be rebuilt with segment "
                f"{final.number} ({exc}); its record is committed, and the next read "
                "rebuilds the index from the records"
            )
            return final
        return next((s for s in rebuilt if s.number == final.number), final)
