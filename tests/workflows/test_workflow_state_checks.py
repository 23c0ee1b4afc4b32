"""A hand-edited state file is checked on reading: one clear line per inconsistency (24.11).

Also: a run whose agent raised, or that was interrupted, says so; a run killed outright is
told from a live one by its runner's process.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxfs import Workspace
from ctxfs._errors import WorkflowError, WorkflowStateError
from ctxfs.workflows import Stage, StageInput, Workflow, read_state, runner_status

NAMES = ["first", "second", "third"]
STATE = "/sessions/w.json"
_counter = iter(range(10**9))


def _flow(workspace: Workspace, calls: list[str] | None = None) -> Workflow:
    def agent(stage_input: StageInput) -> Any:
        if calls is not None:
            calls.append(stage_input.stage)
        return {"summary": f"{stage_input.stage} done", "confidence": "high"}

    stages = [Stage(name=name, prompt=f"Do {name}.", agent=agent) for name in NAMES]
    return Workflow(stages=stages, workspace=workspace)


def _completed_state() -> tuple[Workspace, dict[str, Any]]:
    workspace = Workspace(f"memory://checks-{next(_counter)}")
    _flow(workspace).run("t", workflow_id="w")
    return workspace, json.loads(workspace.read_text(STATE))


def _write(workspace: Workspace, state: dict[str, Any]) -> None:
    workspace.write_text(STATE, json.dumps(state))


def _halt(stage: str) -> dict[str, Any]:
    return {"stage": stage, "error": "x", "raw_output": {}, "at": "2026-01-01T00:00:00+00:00"}


EXAMPLES = [
    (  # halted with every stage completed
        lambda s: s.update(status="halted", halt=_halt("third")),
        [
            "status is 'halted', but all 3 stages are in completed_stages; set status to "
            "'completed'",
            "halt.stage is 'third', but the first incomplete stage is null",
        ],
    ),
    (  # "completed" with none done
        lambda s: s.update(completed_stages=[], memory_snapshots=[]),
        [
            "status is 'completed', but 0 of 3 stages are in completed_stages (the first "
            "incomplete one is 'first'); set status to 'running' to resume",
            "current_stage is null, but the first incomplete stage is 'first'",
        ],
    ),
    (  # "running" with all done
        lambda s: s.update(status="running"),
        [
            "status is 'running', but all 3 stages are in completed_stages; set status to "
            "'completed'"
        ],
    ),
    (  # stages out of order
        lambda s: s["completed_stages"].reverse(),
        [
            "completed_stages.0.stage is 'third', but stage 1 is 'first' (stages complete in "
            "order)",
            "completed_stages.2.stage is 'first', but stage 3 is 'third' (stages complete in "
            "order)",
        ],
    ),
    (  # an output path pointing elsewhere
        lambda s: s["completed_stages"][1].update(output_path="/etc/passwd"),
        [
            "completed_stages.1.output_path is '/etc/passwd'; the runner writes "
            "'/sessions/w/stages/02-second.json'"
        ],
    ),
    (  # halted, but no halt record
        lambda s: s.update(
            status="halted",
            completed_stages=s["completed_stages"][:1],
            current_stage="second",
        ),
        ["status is 'halted', but halt is null (a halt records the invalid output)"],
    ),
]


@pytest.mark.parametrize(("edit", "lines"), EXAMPLES)
def test_each_inconsistency_is_one_line_naming_the_field(edit: Any, lines: list[str]) -> None:
    workspace, state = _completed_state()
    edit(state)
    _write(workspace, state)
    expected = "\n".join(f"{STATE}: {line}" for line in lines)
    for read in (lambda: read_state(workspace, "w"), lambda: _flow(workspace).resume("w")):
        with pytest.raises(WorkflowStateError) as caught:
            read()
        assert str(caught.value) == expected


_EDITS = st.fixed_dictionaries(
    {},
    optional={
        "status": st.sampled_from(["running", "halted", "interrupted", "completed"]),
        "keep": st.integers(0, 4),
        "current_stage": st.sampled_from([None, *NAMES, "ghost"]),
        "halt": st.sampled_from([None, *NAMES, "ghost"]),
        "progress": st.sampled_from([None, *NAMES, "ghost"]),
        "version": st.integers(-2, 3),
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits=_EDITS)
def test_any_hand_edit_is_accepted_consistently_or_refused_by_field(edits: dict[str, Any]) -> None:
    workspace, state = _completed_state()
    if "keep" in edits:
        state["completed_stages"] = state["completed_stages"][: edits["keep"]]
    for field in ("status", "current_stage", "version"):
        if field in edits:
            state[field] = edits[field]
    if "halt" in edits:
        state["halt"] = None if edits["halt"] is None else _halt(edits["halt"])
    if "progress" in edits:
        at = "2026-01-01T00:00:00+00:00"
        state["progress"] = edits["progress"] and {
            "stage": edits["progress"],
            "note": "n",
            "at": at,
        }
    _write(workspace, state)
    calls: list[str] = []
    try:
        read_state(workspace, "w")
    except WorkflowStateError as exc:
        assert all(line.startswith(f"{STATE}: ") for line in str(exc).split("\n"))
        with pytest.raises(WorkflowStateError):
            _flow(workspace, calls).resume("w")
        assert calls == []
        return
    run = _flow(workspace, calls).resume("w")  # a consistent state resumes: never IndexError
    done = len(state["completed_stages"])
    assert run.status in ("completed", "halted")
    assert calls == ([] if run.status == "halted" else NAMES[done:])


def test_an_agent_that_raises_or_a_stop_leaves_the_run_interrupted() -> None:
    workspace = Workspace(f"memory://checks-{next(_counter)}")

    def stopped(stage_input: StageInput) -> Any:
        raise KeyboardInterrupt

    flow = _flow(workspace)
    object.__setattr__(flow.stages[1], "agent", stopped)
    with pytest.raises(KeyboardInterrupt):
        flow.run("t", workflow_id="w")
    state = read_state(workspace, "w")
    assert state.status == "interrupted" and runner_status(state) == "interrupted"
    assert state.errors == []  # a stop is not a failed attempt of the stage
    assert state.current_stage == "second"
    calls: list[str] = []
    assert _flow(workspace, calls).resume("w").status == "completed"
    assert calls == ["second", "third"]


def test_a_run_killed_outright_shows_interrupted_not_running() -> None:
    workspace = Workspace(f"memory://checks-{next(_counter)}")
    seen: list[str] = []

    def looks(stage_input: StageInput) -> Any:
        seen.append(runner_status(read_state(workspace, "w")))
        return {"summary": "ok", "confidence": "high"}

    flow = _flow(workspace)
    object.__setattr__(flow.stages[0], "agent", looks)
    flow.run("t", workflow_id="w")
    assert seen[0].startswith("running (runner ")  # this process is alive
    assert f"process {os.getpid()} on {socket.gethostname()}" in seen[0]
    _, state = _completed_state()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    state.update(
        status="running",
        completed_stages=state["completed_stages"][:1],
        memory_snapshots=state["memory_snapshots"][:1],
        current_stage="second",
        pid=int(dead.stdout),
        host=socket.gethostname(),
    )
    workspace = Workspace(f"memory://checks-{next(_counter)}")
    _write(workspace, state)
    shown = runner_status(read_state(workspace, "w"))
    assert shown == (
        f"interrupted (its runner, process {int(dead.stdout)} on this machine, is gone; resume it)"
    )
    state["host"] = "another-machine"
    _write(workspace, state)
    assert runner_status(read_state(workspace, "w")).startswith("running (runner ")


def test_a_missing_workflow_and_foreign_stages_still_say_so() -> None:
    workspace, _ = _completed_state()
    with pytest.raises(WorkflowError, match="no workflow 'nope'"):
        _flow(workspace).resume("nope")


def test_session_show_names_each_inconsistency_and_lists_the_others(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from ctxfs._cli._main import main

    workspace = Workspace(str(tmp_path))
    _flow(workspace).run("t", workflow_id="good")
    _flow(workspace).run("t", workflow_id="w")
    state = json.loads(workspace.read_text(STATE))
    state.update(status="halted", halt=_halt("third"))
    _write(workspace, state)
    assert main(["session", "show", str(tmp_path)]) == 2
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("good  completed  3/3 stages")
    assert out[1] == (
        "w  unreadable: /sessions/w.json: status is 'halted', but all 3 stages are in "
        "completed_stages; set status to 'completed' (and 1 more)"
    )
    assert main(["session", "show", str(tmp_path), "w"]) == 2
    err = capsys.readouterr().err
    assert "status is 'halted', but all 3 stages are in completed_stages" in err
    assert "halt.stage is 'third', but the first incomplete stage is null" in err


def test_runner_status_reads_a_hand_written_time_without_a_timezone_as_utc() -> None:
    _, state = _completed_state()
    workspace = Workspace(f"memory://checks-{next(_counter)}")
    state.update(
        status="running",
        completed_stages=[],
        memory_snapshots=[],
        current_stage="first",
        host="another-machine",
        updated_at="2026-01-01T00:00:00",
    )
    _write(workspace, state)
    shown = runner_status(
        read_state(workspace, "w"), now=datetime(2026, 1, 1, 0, 1, 30, tzinfo=UTC)
    )
    assert shown.endswith("on another-machine, last wrote 90 s ago)")
