"""Every storage call of listing threads and of a garbage collection, failed in turn.

A workspace of six root threads: one recent, one old that the recent one points to, one old
that long-term memory names, one old with a sub-agent thread, and two old ones, the younger
pointing to the older. Listing the threads, planning a collection and applying one (planned
on the healthy store) each run once per store call of a clean run, with that call failing:
an ``OSError``, the process dying there, and for a removal or a write its reply lost.
Afterwards the listing and the plan are the clean run's or a ctxfs error; what a kept thread
holds, points to and what memory names is all there, byte for byte, and nothing left points
to what is gone; and two collections with the storage well again finish the job: exactly
the kept families are left.
"""

from __future__ import annotations

import contextlib
import itertools
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from _lifecycle_workspaces import (
    NOW,
    OUTSIDE,
    Model,
    Ref,
    Thread,
    build,
    check_nothing_dangles,
    check_retained,
    plan_files,
    snapshot,
    stamped_lister,
)

from ctxfs import Workspace, WorkspaceError
from ctxfs._layout import result_path
from ctxfs.lifecycle import GarbageCollector, list_threads
from ctxfs.subagents._record import child_thread_id
from tests._every_call import FailingAt, Killed, faults

RETENTION = {"older_than": timedelta(days=7)}
KEPT = {"recent", "pointed", "remembered"}

_fresh = itertools.count()


def model() -> Model:
    child = child_thread_id("parent", "call_0")
    found = Model(
        threads=[
            Thread("recent", None, 0.5, 1, 0, True),
            Thread("pointed", None, 15.0, 1, 0, True),
            Thread("remembered", None, 30.0, 1, 0, False),
            Thread("parent", None, 20.0, 1, 1, True),
            Thread(child, "parent", 20.0, 1, 0, True),
            Thread("older", None, 40.0, 2, 0, True),
            Thread("younger", None, 15.0, 1, 0, True),
        ],
        refs=[
            Ref("recent", "pointer", result_path("pointed", "c0", "x")),
            Ref("younger", "pointer", result_path("older", "c1", "x")),
            Ref("younger", "summary", result_path("older", "c0", "x")),
            Ref(child, "artifact", result_path("parent", "c0", "x")),
            Ref("", "memory", "remembered"),
        ],
    )
    plan_files(found)
    return found


def prepared(folder: Path | None = None) -> tuple[Model, Workspace]:
    """The workspace, in memory or in a new folder below ``folder`` (local disk)."""
    built = model()
    where = (
        f"memory://gc-every-call-{next(_fresh)}" if folder is None else folder / f"ws{next(_fresh)}"
    )
    raw = Workspace(where)
    build(raw, built)
    return built, raw


def collector(workspace: Workspace, built: Model) -> GarbageCollector:
    return GarbageCollector(workspace, RETENTION, clock=lambda: NOW, files=stamped_lister(built))


def listing(workspace: Workspace, built: Model) -> Any:
    return [(t.name, t.total_bytes) for t in list_threads(workspace, files=stamped_lister(built))]


def planning(workspace: Workspace, built: Model) -> Any:
    return collector(workspace, built).plan().to_json()


OPERATIONS = {"list threads": listing, "plan": planning}


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_every_store_call_of_a_listing_may_fail(name: str) -> None:
    operation = OPERATIONS[name]
    built, raw = prepared()
    store = FailingAt(raw.store)
    clean = operation(Workspace(store, check=False), built)
    for fault in faults(store.calls, wide=True):
        store = fault.store(raw.store)
        caught = Killed if fault.error is Killed else WorkspaceError
        with contextlib.suppress(caught):
            assert operation(Workspace(store, check=False), built) == clean, fault
        store.heal()
        assert operation(Workspace(store, check=False), built) == clean, fault


def kept_files(built: Model) -> set[str]:
    return {path for root in KEPT for path in built.family_files(root)}


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["memory", "local"])
def test_every_store_call_of_a_collection_may_fail(backend: str, tmp_path: Path) -> None:
    """Killed (a crash) and failed at every call, besides what else a store does (a reply
    lost, a write torn or refused as retried, a spurious "not found"): the next runs finish
    it, whatever the interrupted run's journal left."""
    folder = tmp_path if backend == "local" else None
    built, raw = prepared(folder)
    plan = collector(raw, built).plan()
    assert {k.thread.name for k in plan.kept} == KEPT
    store = FailingAt(raw.store)
    report = collector(Workspace(store, check=False), built).apply(plan)
    assert report.ok and len(report.removed) == 3, report
    methods = {call.method for call in store.calls}
    assert {"walk", "read_bytes", "write", "remove"} <= methods, methods
    # in memory both ways at each call; on disk, the two take turns (the disk is slower)
    for fault in faults(store.calls, both=folder is None, wide=True):
        built, raw = prepared(folder)
        before = snapshot(raw)
        store = fault.store(raw.store)
        caught = Killed if fault.error is Killed else WorkspaceError
        with contextlib.suppress(caught):
            collector(Workspace(store, check=False), built).apply(plan)
        store.heal()
        after = snapshot(raw)
        check_retained(built, before, after, KEPT)
        check_nothing_dangles(built, after)
        gc = collector(Workspace(store, check=False), built)  # the next runs finish it
        gc.run(apply=True)
        final = gc.run(apply=True)
        assert final.ok and not final.plan.collect, (fault, final)
        left = {p for p in snapshot(raw) if not p.startswith("/memories/") and p != OUTSIDE}
        assert left == kept_files(built), fault
