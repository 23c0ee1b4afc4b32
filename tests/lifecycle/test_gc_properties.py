"""Garbage collection on generated workspaces, on memory, local disk and S3 (moto server).

The expected outcome comes from the model the workspace was generated from (who points to
what), never from the code under test: a collection removes exactly the families nothing
kept reaches, never a file a retained thread or long-term memory points to; a dry run
changes nothing; applying twice is applying once; and faults during apply lose nothing
retained, leave nothing pointing to what is gone, and the next runs finish the job.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any, TypeVar

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
    models,
    plan_files,
    snapshot,
    stamped_lister,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxfs import Workspace, WorkspaceError
from ctxfs._layout import safe_name
from ctxfs.lifecycle import GarbageCollector, GcPlan, list_threads
from ctxfs.testing import Fault, FaultyStore

F = TypeVar("F", bound=Callable[..., None])

_SETTINGS = settings(
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
_EXAMPLES = 12
"""Examples of each property on memory and on local disk."""
_S3_EXAMPLES = 3
"""Examples on S3, of workspaces of at most two root threads: an example costs seconds there
(moto over HTTP, requests per file), and what S3 adds (listings of implicit folders, its own
errors) shows in any generated workspace."""


def _on_each_store(**strategies: st.SearchStrategy[Any]) -> Callable[[F], F]:
    """Makes the property a test on memory and local disk (``_EXAMPLES`` each), and a second
    one, named with ``_s3``, on S3 (``_S3_EXAMPLES``, smaller workspaces)."""

    def register(test: F) -> F:
        on_s3 = pytest.mark.parametrize("make_workspace", ["s3"], indirect=True)
        small = strategies | {"model": models(max_roots=2)}
        globals()[f"{test.__name__}_s3"] = pytest.mark.slow(
            on_s3(settings(_SETTINGS, max_examples=_S3_EXAMPLES)(given(**small)(test)))
        )
        on_disk = pytest.mark.parametrize("make_workspace", ["memory", "local"], indirect=True)
        return on_disk(settings(_SETTINGS, max_examples=_EXAMPLES)(given(**strategies)(test)))

    return register


def _collector(workspace: Workspace, model: Model, **retention: object) -> GarbageCollector:
    return GarbageCollector(workspace, retention, clock=lambda: NOW, files=stamped_lister(model))


def _keys(names: Iterable[str]) -> set[str]:
    """The transcript folder names of these threads: what identifies a thread even when
    only a hashed results folder is left of it (its id is then unknown)."""
    return {safe_name(name) for name in names}


def _collected(plan: GcPlan) -> set[str]:
    return {c.thread.key for c in plan.collect}


def _kept(plan: GcPlan) -> set[str]:
    return {k.thread.key for k in plan.kept}


def _root(model: Model, key: str) -> str:
    return next(root for root in model.roots() if safe_name(root) == key)


@_on_each_store(model=models(), older_than=st.sampled_from([1, 7, 30]))
def test_collects_exactly_what_nothing_kept_reaches(
    make_workspace: object, model: Model, older_than: int
) -> None:
    workspace = make_workspace()  # type: ignore[operator]
    build(workspace, model)
    expected_kept = model.expected_kept(older_than)
    before = snapshot(workspace)
    gc = _collector(workspace, model, older_than=timedelta(days=older_than))

    dry = gc.run()
    assert not dry.applied and snapshot(workspace) == before  # a dry run changes nothing
    assert _collected(dry.plan) == _keys(set(model.roots()) - expected_kept)
    assert _kept(dry.plan) == _keys(expected_kept)

    report = gc.run(apply=True)
    after = snapshot(workspace)
    assert report.ok and not report.skipped
    assert len(report.removed) == len(set(model.roots()) - expected_kept)
    check_retained(model, before, after, expected_kept)
    for root in set(model.roots()) - expected_kept:
        assert not model.family_files(root) & set(after), f"{root!r} was not removed whole"
    assert report.freed_bytes == sum(len(before[p]) for p in set(before) - set(after))

    again = gc.run(apply=True)  # applying is idempotent
    assert not again.plan.collect and again.removed == ()
    assert snapshot(workspace) == after


@_on_each_store(model=models(), cap=st.integers(0, 6_000))
def test_the_byte_cap_never_takes_what_is_pointed_to(
    make_workspace: object, model: Model, cap: int
) -> None:
    workspace = make_workspace()  # type: ignore[operator]
    build(workspace, model)
    before = snapshot(workspace)
    gc = _collector(workspace, model, max_bytes=cap, min_idle=timedelta(days=1))
    report = gc.run(apply=True)
    after = snapshot(workspace)
    kept = {_root(model, key) for key in _kept(report.plan)}
    removed = {_root(model, key) for key in _collected(report.plan)}
    assert kept | removed == set(model.roots()) and not kept & removed
    assert len(report.removed) == len(removed)
    check_retained(model, before, after, kept)
    check_nothing_dangles(model, after)
    for name in removed:  # the cap took only threads idle a day or more
        assert model.family_age(name) >= 1
    if report.plan.bytes_after > cap:  # over the cap: whatever is left may not go
        for kept_family in report.plan.kept:
            name = _root(model, kept_family.thread.key)
            assert model.family_age(name) < 1 or kept_family.referenced or _memory(model, name)


def _memory(model: Model, root: str) -> bool:
    return any(r.kind == "memory" and model.root_of(r.target) == root for r in model.refs)


_KINDS = {
    "error": ["walk", "read", "write", "remove"],
    "not_found": ["walk", "read", "remove"],
    "torn_write": ["write"],
    "lost_response": ["write", "remove"],
}


@st.composite
def faults(draw: st.DrawFn) -> Fault:
    kind = draw(st.sampled_from(sorted(_KINDS)))
    return Fault(
        method=draw(st.sampled_from(_KINDS[kind])),
        kind=kind,  # type: ignore[arg-type]
        nth=draw(st.integers(1, 30)),
        times=draw(st.integers(1, 4)),
        keep=draw(st.integers(0, 40)) if kind == "torn_write" else None,
    )


@_on_each_store(model=models(), schedule=st.lists(faults(), min_size=1, max_size=4))
def test_faults_during_apply_lose_nothing_retained(
    make_workspace: object, model: Model, schedule: list[Fault]
) -> None:
    healthy = make_workspace()  # type: ignore[operator]
    build(healthy, model)
    before = snapshot(healthy)
    retention = {"older_than": timedelta(days=7)}
    plan = _collector(healthy, model, **retention).plan()
    kept = {_root(model, key) for key in _kept(plan)}

    store = FaultyStore(healthy.store)
    for fault in schedule:
        store.add(fault)
    with contextlib.suppress(WorkspaceError):  # planning again failed: nothing is deleted
        _collector(Workspace(store), model, **retention).apply(plan)
    after = snapshot(healthy)
    check_retained(model, before, after, kept)
    check_nothing_dangles(model, after)

    gc = _collector(healthy, model, **retention)  # the faults are over: the next runs
    gc.run(apply=True)
    final = gc.run(apply=True)
    assert final.ok and not final.plan.collect
    left = {p for p in snapshot(healthy) if not p.startswith("/memories/") and p != OUTSIDE}
    assert left == {p for root in kept for p in model.family_files(root)}


@_on_each_store(model=models(), cut=st.integers(1, 40))
def test_a_collection_cut_short_anywhere_leaves_nothing_dangling(
    make_workspace: object, model: Model, cut: int
) -> None:
    # every deletion from the cut-th on fails, as if the process died there
    healthy = make_workspace()  # type: ignore[operator]
    build(healthy, model)
    before = snapshot(healthy)
    retention = {"older_than": timedelta(days=7)}
    plan = _collector(healthy, model, **retention).plan()
    kept = {_root(model, key) for key in _kept(plan)}
    store = FaultyStore(healthy.store)
    store.add(Fault(method="remove", nth=cut, times=None))
    report = _collector(Workspace(store), model, **retention).apply(plan)
    assert report.ok == (store.fired == [])
    after = snapshot(healthy)
    check_retained(model, before, after, kept)
    check_nothing_dangles(model, after)
    final = _collector(healthy, model, **retention).run(apply=True)  # the next run finishes
    assert final.ok
    left = {p for p in snapshot(healthy) if not p.startswith("/memories/") and p != OUTSIDE}
    assert left == {p for root in kept for p in model.family_files(root)}


def _pointing_pair(make_workspace: object) -> tuple[Model, Workspace]:
    """'b' (15 days idle) points to a result of 'a' (40 days): both go, b first."""
    model = Model(
        threads=[Thread("a", None, 40.0, 1, 0, True), Thread("b", None, 15.0, 1, 0, True)],
        refs=[Ref("b", "pointer", "/tool_results/a/c0.txt")],
    )
    plan_files(model)
    healthy = make_workspace()  # type: ignore[operator]
    build(healthy, model)
    return model, healthy


@pytest.mark.slow
def test_a_thread_pointing_to_an_older_one_goes_first(make_workspace: object) -> None:
    # so that a collection cut short after any deletion leaves nothing pointing to what is
    # gone; every cut on memory and local disk, a few on S3 (each costs a second there)
    s3 = make_workspace.backend == "s3"  # type: ignore[attr-defined]
    for cut in (1, 7, 13) if s3 else range(1, 14):
        model, healthy = _pointing_pair(make_workspace)
        gc = _collector(healthy, model, older_than=timedelta(days=7))
        plan = gc.plan()
        assert [c.thread.name for c in plan.collect] == ["b", "a"]
        store = FaultyStore(healthy.store)
        store.add(Fault(method="remove", nth=cut, times=None))
        _collector(Workspace(store), model, older_than=timedelta(days=7)).apply(plan)
        check_nothing_dangles(model, snapshot(healthy))
        assert gc.run(apply=True).ok and not list_threads(healthy)


@pytest.mark.parametrize("make_workspace", ["memory", "local"], indirect=True)
@pytest.mark.parametrize("kind", ["error", "not_found", "lost_response"])
def test_a_referrer_not_removed_keeps_what_it_points_to(make_workspace: object, kind: str) -> None:
    # one deletion fails, any one: if it is b's, b stays, and so must a (b points to it),
    # though nothing fails once b is given up
    for point in range(1, 12):
        model, healthy = _pointing_pair(make_workspace)
        gc = _collector(healthy, model, older_than=timedelta(days=7))
        plan = gc.plan()
        store = FaultyStore(healthy.store)
        store.add(Fault(method="remove", kind=kind, nth=point, times=1))  # type: ignore[arg-type]
        report = _collector(Workspace(store), model, older_than=timedelta(days=7)).apply(plan)
        after = snapshot(healthy)
        check_nothing_dangles(model, after)
        if "b" not in report.removed:
            assert "a" not in report.removed, (point, report)
        assert gc.run(apply=True).ok and not list_threads(healthy), point


def _families_in_a_cycle(make_workspace: object) -> tuple[Model, Workspace]:
    """'main' points to an input of a sub-agent thread of 'job.7', and a sub-agent thread
    below that points to main's transcript: the two families point to each other (files
    do not: main's transcript goes after the sub-agent's, before the input)."""
    worker, grandchild = "job.7/task-call_0", "job.7/task-call_0/task-call_9"
    model = Model(
        threads=[
            Thread("main", None, 8.0, 0, 0, True),
            Thread("job.7", None, 8.0, 0, 0, True),
            Thread(worker, "job.7", 8.0, 1, 1, True),
            Thread(grandchild, worker, 8.0, 0, 1, True),
            Thread("t2", None, 0.01, 1, 0, False),
        ],
        refs=[],
    )
    plan_files(model)

    def file_of(owner: str, prefix: str) -> str:
        return next(
            p for p, o in sorted(model.files.items()) if o == owner and p.startswith(prefix)
        )

    model.refs = [
        *[Ref("main", "pointer", file_of(worker, "/tool_inputs/"))] * 3,
        Ref(grandchild, "pointer", file_of("main", "/transcripts/").replace(".md", ".jsonl")),
        Ref(grandchild, "pointer", file_of(grandchild, "/tool_inputs/")),
    ]
    healthy = make_workspace()  # type: ignore[operator]
    build(healthy, model)
    return model, healthy


@pytest.mark.parametrize("make_workspace", ["memory", "local"], indirect=True)
def test_families_pointing_to_each_other_cut_short_anywhere(make_workspace: object) -> None:
    # every cut, from the first deletion to past the last: what is left never points to
    # what is gone, and the next run finishes the job
    retention = {"older_than": timedelta(days=7)}
    for cut in range(1, 40):
        model, healthy = _families_in_a_cycle(make_workspace)
        plan = _collector(healthy, model, **retention).plan()
        assert _collected(plan) == _keys(["main", "job.7"])
        store = FaultyStore(healthy.store)
        store.add(Fault(method="remove", nth=cut, times=None))
        _collector(Workspace(store), model, **retention).apply(plan)
        check_nothing_dangles(model, snapshot(healthy))
        final = _collector(healthy, model, **retention).run(apply=True)
        assert final.ok, (cut, final)
        left = {p for p in snapshot(healthy) if not p.startswith("/memories/") and p != OUTSIDE}
        assert left == model.family_files("t2"), cut
