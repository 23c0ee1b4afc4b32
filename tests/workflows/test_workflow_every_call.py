"""Every storage call of a staged workflow, failed in turn: resume finishes it, the same.

The scripted four-stage workflow (``_scenario.py``) runs once per store call of a clean run,
with that call failing: an ``OSError`` (the run goes on or raises a ctxfs error), the process
dying there, and for a write or a removal its reply lost after it was done. Afterwards the
state file, if there is one, parses and contradicts nothing; then, with the storage well
again (a fresh runner after a death), the workflow is resumed (or started, if it never got a
state file) and completes with the outputs of an uninterrupted run, no stage recorded as
completed runs again, and every completed stage's file holds what the state records.
"""

from __future__ import annotations

import contextlib
import itertools
from typing import Any

import pytest
from _scenario import TASK, WORKFLOW_ID, outputs_json, run_to_end, workflow

from ctxfs import PathExistsError, Workspace, WorkspaceError
from ctxfs.testing import Fault, FaultyStore
from ctxfs.workflows import list_workflows, read_state
from ctxfs.workflows._checks import inconsistencies
from ctxfs.workflows._files import read_stage_file, stage_file_output, stage_path
from tests._every_call import FailingAt, Killed, faults

_fresh = itertools.count()


def fresh() -> Workspace:
    return Workspace(f"memory://workflow-every-call-{next(_fresh)}")


def completed(workspace: Workspace) -> set[str]:
    """The stages the state file records as completed; the file must parse and hold no
    contradiction."""
    if WORKFLOW_ID not in list_workflows(workspace):
        return set()
    state = read_state(workspace, WORKFLOW_ID)
    assert not inconsistencies(state), inconsistencies(state)
    return {record.stage for record in state.completed_stages}


def finish(workspace: Workspace) -> tuple[dict[str, Any], list[str]]:
    run, calls = run_to_end(workspace)
    for record in run.state.completed_stages:
        data = read_stage_file(workspace, record.output_path)
        assert data is not None, f"{record.output_path} is missing"
        assert stage_file_output(data) == record.output, record.output_path
    return outputs_json(run.outputs), calls


@pytest.mark.slow
def test_every_store_call_of_a_workflow_may_fail() -> None:
    raw = fresh()
    store = FailingAt(raw.store)
    expected = outputs_json(
        workflow(Workspace(store, check=False)).run(TASK, workflow_id=WORKFLOW_ID).outputs
    )
    calls = store.calls
    assert {"read_versioned", "write", "info"} <= {c.method for c in calls}
    for fault in faults(calls, both=False, wide=True):
        raw = fresh()
        store = fault.store(raw.store)
        caught = Killed if fault.error is Killed else WorkspaceError
        with contextlib.suppress(caught):
            workflow(Workspace(store, check=False)).run(TASK, workflow_id=WORKFLOW_ID)
        store.heal()
        done_before = completed(raw)
        outputs, ran = finish(Workspace(store, check=False))
        assert outputs == expected, fault
        assert not done_before & set(ran), fault
        assert len(ran) == len(set(ran)), fault


class Stop(BaseException):
    """The process stopped inside a stage's agent."""


def interrupted() -> Workspace:
    """A workflow stopped in its third stage; then the first stage's file was lost and a
    file for the fourth, which the runner did not write, turned up."""
    raw = fresh()
    flow = workflow(raw)
    analyst = flow.stages[2]

    def stopped(stage_input: Any) -> Any:
        raise Stop

    object.__setattr__(analyst, "agent", stopped)
    with contextlib.suppress(Stop):
        flow.run(TASK, workflow_id=WORKFLOW_ID)
    state = read_state(raw, WORKFLOW_ID)
    assert [r.stage for r in state.completed_stages] == ["planner", "researcher"]
    raw.rm(state.completed_stages[0].output_path)
    raw.write_text(stage_path(WORKFLOW_ID, 3, "writer"), '{"output": {"summary": "forged"}}')
    return raw


@pytest.mark.slow
def test_every_store_call_of_a_resume_may_fail() -> None:
    raw = fresh()
    expected = outputs_json(workflow(raw).run(TASK, workflow_id=WORKFLOW_ID).outputs)
    raw = interrupted()
    store = FailingAt(raw.store)
    outputs, ran = finish(Workspace(store, check=False))
    assert outputs == expected and ran == ["analyst", "writer"]
    assert read_state(raw, WORKFLOW_ID).set_aside, "the forged file was not set aside"
    for fault in faults(store.calls, both=False, wide=True):
        raw = interrupted()
        store = fault.store(raw.store)
        caught = Killed if fault.error is Killed else WorkspaceError
        with contextlib.suppress(caught):
            workflow(Workspace(store, check=False)).resume(WORKFLOW_ID)
        store.heal()
        done_before = completed(raw)
        outputs, ran = finish(Workspace(store, check=False))
        assert outputs == expected, fault
        assert not done_before & set(ran), fault
        forged = [a for a in read_state(raw, WORKFLOW_ID).set_aside if a.stage == "writer"]
        assert forged and all(raw.exists(a.kept_as) for a in forged), fault


def test_a_start_whose_state_write_lost_its_reply_runs_on() -> None:
    """The first state file was written and its reply lost: the run reads it back, finds it
    whole, and goes on (it raised, and the next run said the workflow already existed)."""
    raw = fresh()
    store = FailingAt(raw.store)
    workflow(Workspace(store, check=False)).run(TASK, workflow_id=WORKFLOW_ID)
    first = next(
        n for n, c in enumerate(store.calls, 1) if c.method == "write" and "/sessions/" in c.path
    )
    raw = fresh()
    store = FailingAt(raw.store, first, OSError, lost=True)
    run = workflow(Workspace(store, check=False)).run(TASK, workflow_id=WORKFLOW_ID)
    assert run.status == "completed"


def test_a_state_write_torn_mid_way_is_undone_and_the_run_resumes() -> None:
    """A store without atomic writes cut each write of the state file in turn: the file is
    put back as it was (it stayed half-written: every resume failed on its JSON), and the
    next run finishes with the outputs of an uninterrupted one."""
    raw = fresh()
    store = FailingAt(raw.store)
    expected = outputs_json(
        workflow(Workspace(store, check=False)).run(TASK, workflow_id=WORKFLOW_ID).outputs
    )
    path = f"/sessions/{WORKFLOW_ID}.json"
    writes = sum(1 for c in store.calls if c.method == "write" and c.path == path)
    assert writes > 5
    for number in range(1, writes + 1):
        raw = fresh()
        torn = FaultyStore(raw.store)
        torn.add(Fault(method="write", kind="torn_write", nth=number, path=path))
        with pytest.raises(WorkspaceError):
            workflow(Workspace(torn, check=False)).run(TASK, workflow_id=WORKFLOW_ID)
        torn.heal()
        completed(raw)  # parses, and contradicts nothing
        outputs, _ = finish(Workspace(torn, check=False))
        assert outputs == expected, number


def test_a_start_whose_state_write_was_retried_and_refused_runs_on() -> None:
    """The first state file was written, its answer lost, and the client's retry refused
    (create-only: it exists): the run finds its own state there and goes on (it said the
    workflow already existed, and the next run said so too)."""
    raw = fresh()
    path = f"/sessions/{WORKFLOW_ID}.json"

    class Retried(FailingAt):
        def write(self, at: str, data: bytes, **options: Any) -> None:
            super().write(at, data, **options)
            if at == path and options.get("create_only"):
                raise PathExistsError(f"{at}: already exists", path=at)

    run = workflow(Workspace(Retried(raw.store), check=False)).run(TASK, workflow_id=WORKFLOW_ID)
    assert run.status == "completed"
