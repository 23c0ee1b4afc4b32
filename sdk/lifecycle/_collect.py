"""Garbage collection of whole threads: plan, then delete in an order that is safe to stop.

Applying a plan (:meth:`GarbageCollector.apply`) plans again, and removes only the families
both plans remove with the same files; then, family by family (a thread with its sub-agent
threads):

1. **Journal.** The files to delete are written, in order, to
   ``/transcripts/<thread>/gc.json`` (create-only; a journal left by an earlier run is
   replaced by compare-and-swap, so two collectors do not both take it over).
2. **Still idle?** The family's folders are listed again: a file added, rewritten or
   removed since the plan means an agent is working on it (a compaction, a sub-agent), and
   the family is left alone (the journal is removed).
3. **Delete** the planned files, pointing files first (:mod:`ctxfs.lifecycle._order`): the
   transcripts' records and index before the segments, the transcripts before the results
   and inputs they point to. Families pointing to each other are removed together (each
   with its journal), their files interleaved: a file holding a pointer before its target.
   A file added meanwhile is never deleted: only planned paths
   are, one by one, never a folder with what it holds.
4. **Done.** The journal goes last, then the folders left empty (local disk).

Cut short anywhere (a crash, a storage error), the workspace stays consistent: whatever is
left is either still pointed to by nothing removed yet, or unreferenced (but across a cycle of
files pointing to each other, which the plan's reasons name); and the journal
says the family's collection was started. The next run finishes it, whatever its settings,
unless something that stays points to what is left (then the journal is dropped and what is
left stays). Nothing a retained thread points to is deleted, by construction of the plan.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ctxfs._errors import ConflictError, PathExistsError, PathNotFoundError, WorkspaceError
from ctxfs._workspace._workspace import Workspace
from ctxfs.lifecycle._files import FileLister, StampedFile, list_files, prune_empty_folders
from ctxfs.lifecycle._plan import (
    Collection,
    GcPlan,
    journal_bytes,
    journal_path,
    make_plan,
    read_journal,
)
from ctxfs.lifecycle._retention import Retention
from ctxfs.lifecycle._rules import DEFAULT_RULES, RetentionRule
from ctxfs.lifecycle._threads import JOURNAL_NAME, ThreadInfo, scan

__all__ = ["GarbageCollector", "GcReport", "collect_garbage"]


@dataclass(frozen=True, slots=True, kw_only=True)
class GcReport:
    """What a garbage collection did (or, as a dry run, would do).

    Attributes:
        plan: The plan it applied (or would apply).
        applied: Whether anything was deleted (``False``: a dry run).
        removed: Threads removed whole (with their sub-agent threads), by name.
        deleted_files: Files deleted.
        freed_bytes: Their size.
        skipped: Threads left alone after all, and why (an agent wrote to them meanwhile,
            another collector took them over).
        failed: Threads whose collection failed, and the error; the next run finishes them.
    """

    plan: GcPlan
    applied: bool
    removed: tuple[str, ...] = ()
    deleted_files: int = 0
    freed_bytes: int = 0
    skipped: tuple[tuple[str, str], ...] = ()
    failed: tuple[tuple[str, str], ...] = ()

    @property
    def ok(self) -> bool:
        """Whether every planned collection that was tried succeeded."""
        return not self.failed

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-ready data (``ctxfs gc --json``)."""
        return {
            **self.plan.to_json(),
            "applied": self.applied,
            "removed": list(self.removed),
            "deleted_files": self.deleted_files,
            "freed_bytes": self.freed_bytes,
            "skipped": [{"thread": t, "reason": r} for t, r in self.skipped],
            "failed": [{"thread": t, "error": e} for t, e in self.failed],
        }


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class _Outcome:
    deleted: int
    freed: int
    skipped: str | None = None  # the whole unit was left alone, and why
    left: Mapping[str, str] = field(default_factory=dict)  # families not removed whole


def _units(collect: tuple[Collection, ...]) -> list[list[Collection]]:
    """The plan's collections by unit: one family, or the families removed together."""
    out: list[list[Collection]] = []
    at = 0
    while at < len(collect):
        size = len(collect[at].together) or 1
        out.append(list(collect[at : at + size]))
        at += size
    return out


def _drop(workspace: Workspace, journals: list[str]) -> None:
    """Removes the journals this run wrote for a unit it leaves alone."""
    for path in journals:
        _remove(workspace, path)


class GarbageCollector:
    """Removes whole threads past retention from a workspace (see the module docstring).

    Example:
        >>> from datetime import UTC, datetime, timedelta
        >>> from ctxfs import Workspace
        >>> from ctxfs.lifecycle import GarbageCollector
        >>> ws = Workspace("memory://gc-doc")
        >>> _ = ws.write_text("/tool_results/old/call_1.txt", "x" * 100)
        >>> later = datetime.now(UTC) + timedelta(days=8)
        >>> gc = GarbageCollector(ws, {"older_than": "7d"}, clock=lambda: later)
        >>> [c.thread.name for c in gc.plan().collect]  # a dry run: nothing deleted
        ['old']
        >>> gc.run(apply=True).removed
        ('old',)
        >>> ws.exists("/tool_results/old/call_1.txt")
        False

    Args:
        workspace: The workspace, writable (the SDK's own, not the agent tools' view).
        retention: What is past retention (:class:`Retention`, or its fields as a dict).
        rules: What keeps a thread (default :data:`DEFAULT_RULES`: pointers in transcripts,
            long-term memory); add :func:`messages_rule` for the messages in agents'
            state, or your own.
        clock: Returns the current time (default: now, UTC); inject one for tests or for
            a service that plans against its own schedule.
        files: Lists a folder's files with their modification times (default
            :func:`list_files`).

    Raises:
        ValueError: Invalid retention settings.
    """

    def __init__(
        self,
        workspace: Workspace,
        retention: Retention | Mapping[str, Any],
        *,
        rules: Iterable[RetentionRule] = DEFAULT_RULES,
        clock: Callable[[], datetime] | None = None,
        files: FileLister | None = None,
    ) -> None:
        self._workspace = workspace
        self._retention = (
            retention if isinstance(retention, Retention) else Retention.model_validate(retention)
        )
        self._rules = tuple(rules)
        self._clock = clock or _now
        self._files = files or list_files

    @property
    def retention(self) -> Retention:
        """The settings it applies."""
        return self._retention

    def threads(self) -> tuple[ThreadInfo, ...]:
        """The workspace's threads, each with its sub-agent threads (see
        :func:`list_threads`)."""
        return scan(self._workspace, files=self._files).roots

    def plan(self) -> GcPlan:
        """What a collection would remove now, and why the rest stays; changes nothing.

        Raises:
            WorkspaceError: The storage could not be asked, or a file could not be read
                (then nothing can be planned: what it points to is unknown).
        """
        now = self._clock()
        found = scan(self._workspace, files=self._files)
        return make_plan(self._workspace, found, self._retention, self._rules, now)

    def run(self, *, apply: bool = False) -> GcReport:
        """Plans a collection, and with ``apply=True`` carries it out (:meth:`apply`).

        Raises:
            WorkspaceError: Planning failed (nothing was deleted).
        """
        plan = self.plan()
        return self.apply(plan) if apply else GcReport(plan=plan, applied=False)

    def apply(self, plan: GcPlan) -> GcReport:
        """Carries out ``plan`` (from :meth:`plan`, shown to someone, say), family by family
        (families pointing to each other together).

        The workspace is planned again first, and a family is removed only if that plan
        removes it too, with the same files: what changed since (a thread written to, a new
        reference to it) is left alone, and a listing that missed something (a flaky store)
        must miss it twice to matter. Each family's failure is reported, not raised, and the
        others go on; a failed or interrupted collection is finished by the next run.

        Raises:
            WorkspaceError: Planning again failed (nothing was deleted).
        """
        now = self._clock()
        found = scan(self._workspace, files=self._files)
        fresh = make_plan(self._workspace, found, plan.retention, self._rules, now)
        agreed = {c.thread.key: c for c in fresh.collect}
        removed: list[str] = []
        skipped: list[tuple[str, str]] = []
        failed: list[tuple[str, str]] = []
        deleted = freed = 0
        for kept in fresh.kept:  # a collection that will not be finished: its journal goes
            stale = found.journals.get(kept.thread.key)
            if stale is not None:
                try:
                    _remove(self._workspace, stale.path)
                except WorkspaceError as exc:
                    failed.append((kept.thread.name, str(exc)))
        # who points to whom among the families to remove, as either plan saw it
        pointers = {c.thread.key: set(c.points_to) for c in plan.collect}
        for c in fresh.collect:
            pointers.setdefault(c.thread.key, set()).update(c.points_to)
        unfinished: set[str] = set()  # families of the plan not removed whole (so far)
        for unit in _units(plan.collect):
            keys = {c.thread.key for c in unit}
            names = [c.thread.name for c in unit]
            unfinished |= keys
            fresh_unit = [agreed.get(c.thread.key) for c in unit]
            if any(
                f is None or set(f.files) != set(c.files) or set(f.together) != set(c.together)
                for f, c in zip(fresh_unit, unit, strict=True)
            ):
                reason = "changed since it was planned (it stays for now)"
                skipped.extend((name, reason) for name in names)
                continue
            if any(pointers.get(k, set()) & keys for k in unfinished - keys):
                # what still points to it stays: so does it, until the next run
                reason = "a thread pointing to it was not removed (it stays for now)"
                skipped.extend((name, reason) for name in names)
                continue
            try:
                outcome = self._collect(
                    [f for f in fresh_unit if f is not None], now, found.journals
                )
            except WorkspaceError as exc:
                failed.extend((name, str(exc)) for name in names)
                continue
            deleted += outcome.deleted
            freed += outcome.freed
            for c in unit:
                why = outcome.skipped or outcome.left.get(c.thread.key)
                if why is not None:
                    skipped.append((c.thread.name, why))
                else:
                    removed.append(c.thread.name)
                    unfinished.discard(c.thread.key)
        return GcReport(
            plan=plan,
            applied=True,
            removed=tuple(removed),
            deleted_files=deleted,
            freed_bytes=freed,
            skipped=tuple(skipped),
            failed=tuple(failed),
        )

    def _collect(
        self, unit: list[Collection], now: datetime, journals: Mapping[str, StampedFile]
    ) -> _Outcome:
        """Removes a unit: one family, or families pointing to each other, whose files
        are deleted interleaved in the plan's order."""
        workspace = self._workspace
        taken: list[str] = []
        chosen: set[str] = set()
        for collection in unit:
            family = collection.thread
            path = journal_path(family.key)
            if collection.resumed:
                journal_read = read_journal(workspace, path)
                if journal_read is None:
                    _drop(workspace, taken)
                    return _Outcome(0, 0, "its journal could not be read again")
                # what was rewritten since the collection started is left (an agent came back)
                stamps = {f.path: f.modified for t in family.walk() for f in t.files}
                chosen.update(
                    target
                    for target in journal_read.files
                    if (when := stamps.get(target)) is not None and when <= journal_read.started
                )
                continue
            existed = family.key in journals
            if not _take(workspace, path, journal_bytes(collection, now), existed):
                _drop(workspace, taken)
                return _Outcome(0, 0, "another collection of it is under way")
            taken.append(path)
            planned = {f.path: (f.size, f.modified) for t in family.walk() for f in t.files}
            if self._listing(family) != planned:
                _drop(workspace, taken)
                return _Outcome(0, 0, "written to since it was planned (an agent is at work)")
            chosen.update(collection.files)
        # the plan's order, a topological one of the files there now: cut short earlier,
        # nothing left pointed to what was gone, and so it stays
        order = unit[0].interleaved or unit[0].files
        files = tuple(path for path in order if path in chosen)
        sizes = {f.path: f.size for c in unit for t in c.thread.walk() for f in t.files}
        deleted = freed = 0
        for target in files:
            if not _remove(workspace, target):
                # listed a moment ago: another collector, or a storage that answers wrong.
                # Stop before what this file may point to goes; the next run finishes.
                raise WorkspaceError(
                    f"{target} was gone before it was deleted; the collection stops here "
                    "and the next run finishes it",
                    path=target,
                )
            deleted += 1
            freed += sizes.get(target, 0)
        left: dict[str, str] = {}
        for collection in unit:
            family = collection.thread
            kept = set(self._listing(family)) - set(files)
            if kept:
                left[family.key] = f"{len(kept)} file(s) written during the collection were kept"
            _remove(workspace, journal_path(family.key))
            for thread in family.walk():
                for folder in thread.folders():
                    prune_empty_folders(workspace, folder)
        return _Outcome(deleted, freed, left=left)

    def _listing(self, family: ThreadInfo) -> dict[str, tuple[int, datetime | None]]:
        found: dict[str, tuple[int, datetime | None]] = {}
        for thread in family.walk():
            for folder in thread.folders():
                for stamped in self._files(self._workspace, folder):
                    if stamped.path != f"{folder}/{JOURNAL_NAME}":
                        found[stamped.path] = (stamped.size, stamped.modified)
        return found


def _take(workspace: Workspace, path: str, data: bytes, existed: bool) -> bool:
    """Writes the journal: create-only, or over the one an earlier run left (compare-and-
    swap); False if another collector got there first."""
    try:
        if not existed:
            workspace.write_bytes(path, data, create_only=True)
            return True
        try:
            _, version = workspace.read_versioned(path)
        except PathNotFoundError:
            workspace.write_bytes(path, data, create_only=True)
            return True
        workspace.write_bytes(path, data, if_version=version)
    except (PathExistsError, ConflictError):
        return False
    return True


def _remove(workspace: Workspace, path: str) -> bool:
    """Deletes one file; False if it was gone already."""
    try:
        workspace.rm(path)
    except PathNotFoundError:
        return False
    return True


def collect_garbage(
    workspace: Workspace,
    *,
    older_than: timedelta | str | None = None,
    max_bytes: int | None = None,
    apply: bool = False,
    keep: Iterable[str] = (),
    rules: Iterable[RetentionRule] = DEFAULT_RULES,
    clock: Callable[[], datetime] | None = None,
) -> GcReport:
    """Plans, and with ``apply=True`` carries out, one garbage collection of ``workspace``:
    :class:`GarbageCollector` in one call, for a script or a scheduled job.

    Example:
        >>> from ctxfs import Workspace
        >>> from ctxfs.lifecycle import collect_garbage
        >>> ws = Workspace("memory://collect-doc")
        >>> _ = ws.write_text("/tool_results/t1/call_1.txt", "x" * 100)
        >>> report = collect_garbage(ws, older_than="7d")  # a dry run
        >>> report.applied, [k.reason for k in report.plan.kept]
        (False, ['active 0s ago'])

    Args:
        workspace: The workspace (writable when ``apply`` is true).
        older_than: Remove threads idle longer than this (``"7d"``, a timedelta).
        max_bytes: Then remove the oldest threads until the rest hold at most this many bytes.
        apply: Delete (default: only plan, a dry run).
        keep: Thread ids never removed.
        rules: What keeps a thread (default :data:`DEFAULT_RULES`).
        clock: Returns the current time (default: now, UTC).

    Raises:
        ValueError: Neither ``older_than`` nor ``max_bytes``, or an invalid value.
        WorkspaceError: Planning failed (nothing was deleted).
    """
    retention = Retention.model_validate(
        {"older_than": older_than, "max_bytes": max_bytes, "keep": frozenset(keep)}
    )
    collector = GarbageCollector(workspace, retention, rules=rules, clock=clock)
    return collector.run(apply=apply)
