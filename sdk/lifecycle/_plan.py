"""Which threads a garbage collection removes, and why each of the others stays: the plan.

Planning only reads. It works on whole threads, each with its sub-agent threads (a family):

1. Past retention: families idle longer than ``older_than``; and families whose earlier
   collection was interrupted (some of their files are gone already).
2. What stays keeps what it points to: every rule (:mod:`ctxfs.lifecycle._rules`) is asked
   what the workspace holds, then what each family that stays holds; a family any of it
   reaches stays, and is asked in turn, until nothing new is reached.
3. ``max_bytes``: while the families that stay hold more, the oldest one idle at least
   ``min_idle`` that nothing staying points to goes too, and so on.
4. Order (:mod:`ctxfs.lifecycle._order`): the families to remove, oldest first, except
   that a family pointing to another one that goes is removed before it (so what is left
   never points to what is gone); families pointing to each other are removed together,
   their files ordered file by file (a cycle of files that cannot be ordered is said in
   their reasons).

A family whose activity is unknown (a store without modification times) always stays.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from ctxfs._errors import PathNotFoundError, WorkspaceError
from ctxfs._json import NewerFormatError, check_format_version, loads_bounded
from ctxfs._layout import TRANSCRIPTS_DIR
from ctxfs._workspace._workspace import Workspace
from ctxfs.lifecycle._order import unit_order, units
from ctxfs.lifecycle._retention import Retention, format_duration
from ctxfs.lifecycle._rules import Reference, RetentionRule, RuleContext
from ctxfs.lifecycle._threads import JOURNAL_NAME, Scan, ThreadInfo, key_of_folder

__all__ = ["Collection", "GcPlan", "Journal", "Kept", "make_plan", "read_journal"]

_JOURNAL_FORMAT = "ctxfs-gc-journal"
_JOURNAL_VERSION = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class Collection:
    """A thread (with its sub-agent threads) the plan removes.

    Attributes:
        thread: The thread, its sub-agent threads as children.
        reason: Why it is past retention.
        files: Every file to delete, in the order they are deleted.
        bytes: Their size.
        resumed: An earlier collection of it was interrupted; this one finishes it.
        points_to: The keys of the other threads of the plan it points to: it is removed
            before them, and while it is not removed whole, they are not removed.
        together: When threads of the plan point to each other (a cycle): the keys of all
            of them, itself included, in plan order. They are removed in one go, their
            files interleaved (``interleaved``); empty for a thread removed on its own.
        interleaved: With ``together``: the files of all of them, in the order they are
            deleted (its own ``files`` are in the same order).
    """

    thread: ThreadInfo
    reason: str
    files: tuple[str, ...]
    bytes: int
    resumed: bool = False
    points_to: frozenset[str] = frozenset()
    together: tuple[str, ...] = ()
    interleaved: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Kept:
    """A thread (with its sub-agent threads) the plan keeps, and why.

    Attributes:
        thread: The thread.
        reason: Why it stays (recent activity, a reference to it, ``keep``...).
        referenced: Whether something that stays points to it (then it stays whatever its
            age; the reason says who, and where).
    """

    thread: ThreadInfo
    reason: str
    referenced: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class GcPlan:
    """What a garbage collection removes and keeps (nothing is changed by making one).

    Attributes:
        now: The time the plan was made at (the collector's clock).
        retention: The settings it applied.
        collect: The threads to remove, in order: oldest first, but one pointing to another
            before it (threads pointing to each other side by side, see ``together``).
        kept: The threads that stay, with their reasons.
        bytes_before: Bytes of every thread's files.
    """

    now: datetime
    retention: Retention
    collect: tuple[Collection, ...]
    kept: tuple[Kept, ...]
    bytes_before: int

    @property
    def bytes_freed(self) -> int:
        """Bytes the collections remove."""
        return sum(c.bytes for c in self.collect)

    @property
    def bytes_after(self) -> int:
        """Bytes left once the collections are done."""
        return self.bytes_before - self.bytes_freed

    def names(self, keys: Iterable[str]) -> list[str]:
        """The names of the threads of the plan with these keys."""
        by_key = {c.thread.key: c.thread.name for c in self.collect}
        return [by_key.get(key, key) for key in keys]

    def to_json(self) -> dict[str, Any]:
        """The plan as JSON-ready data (``ctxfs gc --json``)."""
        return {
            "now": self.now.isoformat(),
            "older_than_seconds": _seconds(self.retention.older_than),
            "max_bytes": self.retention.max_bytes,
            "bytes_before": self.bytes_before,
            "bytes_freed": self.bytes_freed,
            "bytes_after": self.bytes_after,
            "collect": [
                {
                    "thread": c.thread.name,
                    "threads": [t.name for t in c.thread.walk()],
                    "reason": c.reason,
                    "files": len(c.files),
                    "bytes": c.bytes,
                    "resumed": c.resumed,
                    "together": [n for n in self.names(c.together) if n != c.thread.name],
                }
                for c in self.collect
            ],
            "kept": [
                {"thread": k.thread.name, "reason": k.reason, "bytes": k.thread.total_bytes}
                for k in self.kept
            ],
        }


def _seconds(value: Any) -> float | None:
    return None if value is None else value.total_seconds()


def journal_path(key: str) -> str:
    """Where the collection of the family rooted at thread ``key`` keeps its journal."""
    return f"{TRANSCRIPTS_DIR}/{key}/{JOURNAL_NAME}"


def journal_bytes(collection: Collection, now: datetime) -> bytes:
    """The journal of a collection: the files it deletes, in order."""
    document = {
        "format": _JOURNAL_FORMAT,
        "version": _JOURNAL_VERSION,
        "thread": collection.thread.name,
        "started": now.isoformat(),
        "files": list(collection.files),
    }
    return (json.dumps(document, indent=1, ensure_ascii=True) + "\n").encode("ascii")


def read_journal(workspace: Workspace, path: str) -> Journal | None:
    """The journal at ``path``, or ``None`` for a missing, torn or foreign one (never acted
    on).

    Raises:
        WorkspaceError: The storage could not be asked, or the journal is of a newer format
            (a newer ctxfs's collection, which this one neither finishes nor drops).
    """
    try:
        data = loads_bounded(workspace.read_bytes(path))
    except PathNotFoundError:
        return None
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or data.get("format") != _JOURNAL_FORMAT:
        return None
    try:
        check_format_version(data.get("version"), _JOURNAL_VERSION, path)
    except NewerFormatError as exc:
        raise WorkspaceError(str(exc), path=path) from None
    files, started = data.get("files"), data.get("started")
    if not isinstance(files, list) or not isinstance(started, str):
        return None
    try:
        when = datetime.fromisoformat(started)
    except ValueError:
        return None
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    return Journal(started=when, files=tuple(f for f in files if isinstance(f, str)))


@dataclass(frozen=True, slots=True)
class Journal:
    """A collection under way: when it started, and the files it deletes, in order."""

    started: datetime
    files: tuple[str, ...]


class _Targets:
    """Which families a reference reaches."""

    def __init__(self, families: Sequence[ThreadInfo]) -> None:
        self.family_of: dict[str, ThreadInfo] = {}
        self.by_name: dict[str, str] = {}
        self.in_area: dict[str, set[str]] = {}
        for family in families:
            for thread in family.walk():
                self.family_of[thread.key] = family
                self.by_name[thread.key] = thread.key
                if thread.thread_id is not None:
                    self.by_name[thread.thread_id] = thread.key
                for stamped in thread.files:
                    area = "/" + stamped.path.split("/")[1]
                    self.in_area.setdefault(area, set()).add(family.key)

    def __call__(self, reference: Reference) -> set[str]:
        """The keys of the families it reaches."""
        found: set[str] = set()
        if reference.thread_id is not None and reference.thread_id in self.by_name:
            found.add(self.family_of[self.by_name[reference.thread_id]].key)
        if reference.path is not None:
            parts = reference.path.strip("/").split("/")
            area = "/" + parts[0]
            if len(parts) == 1:
                found |= self.in_area.get(area, set())
            elif area in self.in_area:
                for folder in dict.fromkeys((parts[1], parts[1].rstrip("."))):
                    key, _ = key_of_folder(area, folder)
                    if key in self.family_of:
                        found.add(self.family_of[key].key)
        return found


def make_plan(
    workspace: Workspace,
    found: Scan,
    retention: Retention,
    rules: Iterable[RetentionRule],
    now: datetime,
) -> GcPlan:
    """Plans a collection of ``found`` (see the module docstring)."""
    rules = tuple(rules)
    families = {f.key: f for f in found.roots}
    every = tuple(found.threads())
    reach = _Targets(found.roots)
    interrupted = _interrupted(workspace, found)
    older_than = retention.older_than
    reasons: dict[str, str] = {}
    own: dict[str, str] = {}  # families that stay on their own account, and why
    for key, family in families.items():
        activity = family.family_activity
        if key in interrupted:
            reasons[key] = "an earlier collection of it was interrupted"
        elif not family.total_files:
            reasons[key] = "it holds no files"  # a name or a journal: nothing to delete
        elif older_than is not None and activity is not None and now - activity > older_than:
            # compared as idle time: now - older_than would leave the calendar for a
            # retention of a million weeks
            reasons[key] = (
                f"idle for {format_duration(now - activity)} "
                f"(retention {format_duration(older_than)})"
            )
        else:
            own[key] = _own_reason(family, now)
        if key in reasons and {t.name for t in family.walk()} & retention.keep:
            own[key] = "named in keep"
            del reasons[key]
    over = retention.max_bytes is not None and (
        sum(families[k].total_bytes for k in own) > retention.max_bytes
    )
    if not reasons and not over:  # everything stays: nothing to read
        return _plan(found, retention, now, families, {}, own, {})
    held: dict[str | None, list[tuple[str, Reference]]] = {}

    def references(key: str | None) -> list[tuple[str, Reference]]:
        if key not in held:
            threads = (None,) if key is None else tuple(families[key].walk())
            held[key] = [
                (target, _sourced(reference, thread))
                for thread in threads
                for rule in rules
                for reference in rule(RuleContext(workspace, thread, every))
                for target in reach(reference)
            ]
        return held[key]

    pinned = {target for target, _ in references(None)} | {
        key for key, family in families.items() if {t.name for t in family.walk()} & retention.keep
    }
    while True:
        kept = _closure(own, references)
        total = sum(families[k].total_bytes for k in kept)
        if retention.max_bytes is None or total <= retention.max_bytes:
            break
        victim = _oldest_free(families, own, kept, pinned, references, retention, now)
        if victim is None:
            break
        del own[victim]
        reasons[victim] = f"among the oldest while over {retention.max_bytes:,} bytes"
    return _plan(found, retention, now, families, reasons, own, kept, references)


def _sourced(reference: Reference, thread: ThreadInfo | None) -> Reference:
    """The reference with its source: unknown, the holding thread's transcript folder."""
    if reference.source is not None or thread is None:
        return reference
    return replace(reference, source=f"{TRANSCRIPTS_DIR}/{thread.key}/")


def _closure(
    own: dict[str, str], references: Callable[[str | None], list[tuple[str, Reference]]]
) -> dict[str, tuple[str, Reference] | None]:
    """Every family that stays: those in ``own``, those the workspace points to, and what
    any of them points to, with the first holder and reference that reached each."""
    kept: dict[str, tuple[str, Reference] | None] = dict.fromkeys(own)
    pending: list[str | None] = [None, *own]
    while pending:
        holder = pending.pop()
        for target, reference in references(holder):
            if target not in kept:
                kept[target] = (holder or "", reference)
                pending.append(target)
    return kept


def _oldest_free(
    families: dict[str, ThreadInfo],
    own: dict[str, str],
    kept: dict[str, tuple[str, Reference] | None],
    pinned: set[str],
    references: Callable[[str | None], list[tuple[str, Reference]]],
    retention: Retention,
    now: datetime,
) -> str | None:
    """The oldest family the cap may remove: idle long enough, and nothing that stays
    points to it."""
    pointed = {t for holder in kept for t, _ in references(holder) if t != holder}
    candidates = [
        key
        for key in own
        if key not in pinned
        and key not in pointed
        and (activity := families[key].family_activity) is not None
        and now - activity >= retention.min_idle
    ]
    return min(candidates, key=lambda k: (_when(families[k]), families[k].name), default=None)


def _plan(
    found: Scan,
    retention: Retention,
    now: datetime,
    families: dict[str, ThreadInfo],
    reasons: dict[str, str],
    own: dict[str, str],
    kept: dict[str, tuple[str, Reference] | None],
    references: Callable[[str | None], list[tuple[str, Reference]]] | None = None,
) -> GcPlan:
    stays: list[Kept] = []
    for key in set(own) | set(kept):
        reached = kept.get(key) or _pointed_by(key, kept, references)
        if reached is None:
            stays.append(Kept(thread=families[key], reason=own.get(key, "")))
            continue
        holder, reference = reached
        who = f"thread {families[holder].name!r}" if holder else "the workspace"
        detail = reference.why or reference.path or reference.thread_id
        reason = f"{who} points to it ({detail})"
        if key in own:
            reason = f"{own[key]}; {reason}"
        stays.append(Kept(thread=families[key], reason=reason, referenced=True))
    oldest_first = sorted(
        (k for k in reasons if k not in kept), key=lambda k: (_when(families[k]), families[k].name)
    )
    held = references or (lambda _: [])
    going = set(oldest_first)
    points_to = {k: {t for t, _ in held(k) if t in going and t != k} for k in oldest_first}
    collect = tuple(
        collection
        for unit in units(oldest_first, points_to)
        for collection in _collections(unit, families, reasons, points_to, held)
    )
    return GcPlan(
        now=now,
        retention=retention,
        collect=collect,
        kept=tuple(sorted(stays, key=lambda k: k.thread.name)),
        bytes_before=found.bytes,
    )


def _collections(
    unit: list[str],
    families: dict[str, ThreadInfo],
    reasons: dict[str, str],
    points_to: dict[str, set[str]],
    held: Callable[[str | None], list[tuple[str, Reference]]],
) -> list[Collection]:
    """The collections of a unit: one family, or families pointing to each other."""
    members = set(unit)
    order = unit_order(
        [families[key] for key in unit],
        [
            (reference.source, reference)
            for key in unit
            for target, reference in held(key)
            if target in members and reference.source is not None
        ],
    )
    note = ""
    if order.cycle:
        first, holder = order.cycle
        note = (
            f"; its files point to each other ({holder} points to {first}, which points "
            f"back to it): cut short between the two, {holder} is left pointing to {first}, "
            "gone, until the next run finishes the collection"
        )
    together = tuple(unit) if len(unit) > 1 else ()
    collections: list[Collection] = []
    for key in unit:
        own = {f.path for t in families[key].walk() for f in t.files}
        collections.append(
            Collection(
                thread=families[key],
                reason=reasons[key] + note,
                files=tuple(path for path in order.files if path in own),
                bytes=families[key].total_bytes,
                resumed=reasons[key].startswith("an earlier collection"),
                points_to=frozenset(points_to[key]),
                together=together,
                interleaved=order.files if together else (),
            )
        )
    return collections


def _pointed_by(
    key: str,
    kept: dict[str, tuple[str, Reference] | None],
    references: Callable[[str | None], list[tuple[str, Reference]]] | None,
) -> tuple[str, Reference] | None:
    """The first thing that stays (the workspace first) pointing to family ``key``."""
    if references is None:
        return None
    for holder in (None, *sorted(kept)):
        if holder == key:
            continue
        for target, reference in references(holder):
            if target == key:
                return holder or "", reference
    return None


def _when(family: ThreadInfo) -> datetime:
    return family.family_activity or datetime.max.replace(tzinfo=UTC)


def _own_reason(family: ThreadInfo, now: datetime) -> str:
    activity = family.family_activity
    if activity is None:
        return "its activity is unknown (the store does not say when all its files were written)"
    return f"active {format_duration(now - activity)} ago"


def _interrupted(workspace: Workspace, found: Scan) -> set[str]:
    """Families with a journal some of whose files are gone: a collection was cut short."""
    families: dict[str, str] = {}
    for family in found.roots:
        for thread in family.walk():
            families[thread.key] = family.key
    present = {f.path for t in found.threads() for f in t.files}
    out: set[str] = set()
    for key, stamped in found.journals.items():
        listed = read_journal(workspace, stamped.path)
        if listed is not None and any(path not in present for path in listed.files):
            out.add(families.get(key, key))
    return out
