"""Staged workflows on every backend: running, the state file, halting, resuming."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from _scenario import TASK, WORKFLOW_ID, memory, outputs_json, workflow
from pydantic import BaseModel

from ctxfs import Workspace
from ctxfs._errors import (
    ConflictError,
    WorkflowConflictError,
    WorkflowError,
    WorkflowStateError,
)
from ctxfs._tokens import TiktokenCounter
from ctxfs.workflows import (
    Stage,
    StageInput,
    StageOutput,
    Workflow,
    WorkflowPolicy,
    list_workflows,
    read_state,
    state_path,
)

STATE = state_path(WORKFLOW_ID)


def _state_json(workspace: Workspace) -> dict[str, Any]:
    return json.loads(workspace.read_text(STATE))


def _write_state(workspace: Workspace, state: dict[str, Any]) -> None:
    workspace.write_text(STATE, json.dumps(state, indent=2))


def test_a_run_passes_validated_outputs_through_the_state_file(workspace: Workspace) -> None:
    run = workflow(workspace).run(TASK, workflow_id=WORKFLOW_ID)
    assert run.status == "completed" and run.halt is None
    assert list(run.outputs) == ["planner", "researcher", "analyst", "writer"]
    assert all(isinstance(o, StageOutput) for o in run.outputs.values())
    state = _state_json(workspace)
    assert state["workflow_id"] == WORKFLOW_ID and state["task"] == TASK
    assert state["status"] == "completed" and state["current_stage"] is None
    assert [s["stage"] for s in state["completed_stages"]] == list(run.outputs)
    assert {s["stage"]: s["output"] for s in state["completed_stages"]} == outputs_json(run.outputs)
    assert [m["stage"] for m in state["memory_snapshots"]] == list(run.outputs)
    assert all(len(m["summary"]) <= 280 for m in state["memory_snapshots"])
    assert state["memory"] == memory(TASK)
    assert state["halt"] is None and state["errors"] == []
    for record in state["completed_stages"]:  # each output also on its own, same content
        alone = json.loads(workspace.read_text(record["output_path"]))
        assert alone["stage"] == record["stage"] and alone["output"] == record["output"]
    assert workspace.read_text(STATE).startswith('{\n  "format": "ctxfs.workflow/1"')
    assert list_workflows(workspace) == [WORKFLOW_ID]
    assert read_state(workspace, WORKFLOW_ID).outputs() == outputs_json(run.outputs)


def test_a_stage_gets_only_its_prompt_the_task_earlier_outputs_and_memory() -> None:
    seen: list[StageInput] = []

    def agent(stage_input: StageInput) -> dict[str, Any]:
        seen.append(stage_input)
        confidence = "low" if stage_input.stage == "first" else "high"
        return {"summary": f"{stage_input.stage} done", "confidence": confidence}

    flow = Workflow(
        stages=[Stage(name=n, prompt=f"Do {n}.", agent=agent) for n in ("first", "second")],
        workspace=Workspace("memory://only"),
        memory=lambda task: [f"remembered for {task}"],
    )
    flow.run("the task", workflow_id="w")
    first, second = seen
    assert (first.prompt, first.task, first.previous, first.previous_text) == (
        "Do first.",
        "the task",
        (),
        "",
    )
    assert first.memory == second.memory == ("remembered for the task",)
    assert first.memory_text == (
        "<memory>\nLong-term memory retrieved for this task:\n- remembered for the task\n</memory>"
    )
    (prior,) = second.previous
    assert (prior.stage, prior.form, prior.confidence) == ("first", "full", "low")
    assert prior.path == "/sessions/w/stages/01-first.json"
    assert second.previous_text == (  # exactly what the next stage reads
        "<previous_stages>\n"
        "Earlier stages (each stage's full output is in /sessions/w/stages/):\n\n"
        "## first (confidence: LOW, check it before relying on it)\n"
        "Full output: /sessions/w/stages/01-first.json\n"
        '<stage_output stage="first" form="full">\n'
        "{\n"
        '  "summary": "first done",\n'
        '  "key_findings": [],\n'
        '  "confidence": "low",\n'
        '  "next_stage_recommendations": [],\n'
        '  "raw_data_refs": []\n'
        "}\n"
        "</stage_output>\n"
        "</previous_stages>"
    )
    assert second.render() == "\n\n".join(
        ["Task:\nthe task", second.previous_text, second.memory_text]
    )
    assert "Do second." in second.instructions() and '"confidence"' in second.instructions()


def test_the_budgets_hold_in_a_run(workspace: Workspace) -> None:
    counter = TiktokenCounter()
    seen: list[StageInput] = []
    flow = workflow(workspace)
    for stage in flow.stages:
        inner = stage.agent
        object.__setattr__(stage, "agent", lambda i, inner=inner: seen.append(i) or inner(i))
    flow.run(TASK, workflow_id=WORKFLOW_ID)
    assert [len(i.previous) for i in seen][:2] == [0, 1]
    assert any(p.form == "summary" for i in seen for p in i.previous)  # the budget bit
    for stage_input in seen:
        assert counter.count_text(stage_input.previous_text) <= flow.policy.previous_outputs_tokens
        assert counter.count_text(stage_input.memory_text) <= flow.policy.memory_tokens
        assert len(stage_input.memory) == 2  # the long third item does not fit 60 tokens


def test_an_invalid_output_halts_with_the_record_and_a_hand_fix_resumes(
    workspace: Workspace,
) -> None:
    run = workflow(workspace, broken="analyst").run(TASK, workflow_id=WORKFLOW_ID)
    assert run.status == "halted" and list(run.outputs) == ["planner", "researcher"]
    state = _state_json(workspace)
    assert state["status"] == "halted" and state["current_stage"] == "analyst"
    assert state["halt"]["stage"] == "analyst"
    assert state["halt"]["error"] == "confidence: Field required"
    assert state["halt"]["raw_output"] == {"summary": "forgot the confidence"}
    assert state["errors"] == [state["halt"]]
    assert not workspace.exists("/sessions/settlement/stages/03-analyst.json")

    state["halt"]["raw_output"]["confidence"] = "medium"  # the hand fix
    _write_state(workspace, state)
    resumed = workflow(workspace).resume(WORKFLOW_ID)
    assert resumed.status == "completed"
    assert resumed.outputs["analyst"] == StageOutput(
        summary="forgot the confidence", confidence="medium"
    )
    assert list(resumed.outputs) == ["planner", "researcher", "analyst", "writer"]
    assert resumed.outputs["planner"] == run.outputs["planner"]
    after = _state_json(workspace)
    assert after["halt"] is None and len(after["errors"]) == 1  # the history stays


def test_a_fix_that_still_does_not_validate_halts_again_and_retry_reruns_the_stage(
    workspace: Workspace,
) -> None:
    workflow(workspace, broken="planner").run(TASK, workflow_id=WORKFLOW_ID)
    state = _state_json(workspace)
    state["halt"]["raw_output"]["confidence"] = "certain"
    _write_state(workspace, state)
    again = workflow(workspace).resume(WORKFLOW_ID)
    assert again.status == "halted" and again.halt is not None
    assert again.halt.error.startswith("confidence: Input should be 'high', 'medium' or 'low'")
    assert again.halt.raw_output["confidence"] == "certain"
    assert len(again.state.errors) == 2
    retried = workflow(workspace).resume(WORKFLOW_ID, retry=True)
    assert retried.status == "completed"
    clean = workflow(Workspace("memory://clean")).run(TASK, workflow_id=WORKFLOW_ID)
    assert outputs_json(retried.outputs) == outputs_json(clean.outputs)


def test_text_replies_in_a_code_fence_and_plain_text_records(workspace: Workspace) -> None:
    replies = iter(['```json\n{"summary": "s", "confidence": "high"}\n```', "no JSON at all"])
    flow = Workflow(
        stages=[Stage(name=n, prompt="p", agent=lambda _: next(replies)) for n in "ab"],
        workspace=workspace,
    )
    run = flow.run("t", workflow_id="fence")
    assert run.outputs["a"].summary == "s"
    assert run.halt is not None and run.halt.raw_output == "no JSON at all"
    assert run.halt.error.startswith("(the whole output): Invalid JSON")


def test_a_stage_with_its_own_schema(workspace: Workspace) -> None:
    class Plan(BaseModel):
        steps: list[str]

    flow = Workflow(
        stages=[
            Stage(name="plan", prompt="p", agent=lambda _: Plan(steps=["a"]), schema=Plan),
            Stage(
                name="use",
                prompt="p",
                agent=lambda i: {"summary": i.previous_text, "confidence": "high"},
            ),
        ],
        workspace=workspace,
    )
    run = flow.run("t", workflow_id="own")
    assert run.outputs["plan"] == Plan(steps=["a"])
    assert '"steps": [\n    "a"\n  ]' in run.outputs["use"].summary  # type: ignore[attr-defined]


def test_a_second_runner_is_detected(workspace: Workspace) -> None:
    second = workflow(workspace)
    first = workflow(workspace)
    analyst = next(s for s in first.stages if s.name == "analyst")
    inner = analyst.agent

    def analyst_while_another_runner_resumes(stage_input: StageInput) -> Any:
        finished = second.resume(WORKFLOW_ID)  # the other runner takes over and finishes
        assert finished.status == "completed"
        return inner(stage_input)

    object.__setattr__(analyst, "agent", analyst_while_another_runner_resumes)
    with pytest.raises(WorkflowConflictError, match="another runner wrote") as caught:
        first.run(TASK, workflow_id=WORKFLOW_ID)
    assert isinstance(caught.value, ConflictError)
    state = _state_json(workspace)  # the second runner's work is intact
    assert state["status"] == "completed" and len(state["completed_stages"]) == 4
    clean = workflow(Workspace("memory://clean2")).run(TASK, workflow_id=WORKFLOW_ID)
    assert read_state(workspace, WORKFLOW_ID).outputs() == outputs_json(clean.outputs)


def test_resuming_a_completed_workflow_writes_nothing(workspace: Workspace) -> None:
    done = workflow(workspace).run(TASK, workflow_id=WORKFLOW_ID)
    before = workspace.read_bytes(STATE)
    again = workflow(workspace).resume(WORKFLOW_ID)
    assert again.status == "completed" and again.outputs == done.outputs
    assert workspace.read_bytes(STATE) == before


def test_an_agent_that_raises_is_recorded_and_the_stage_runs_again_on_resume(
    workspace: Workspace,
) -> None:
    calls: list[str] = []

    def flaky(stage_input: StageInput) -> dict[str, Any]:
        calls.append(stage_input.stage)
        if len(calls) == 1:
            raise RuntimeError("the provider timed out")
        return {"summary": "ok", "confidence": "high"}

    def make() -> Workflow:
        return Workflow(stages=[Stage(name="only", prompt="p", agent=flaky)], workspace=workspace)

    with pytest.raises(RuntimeError, match="timed out"):
        make().run("t", workflow_id="flaky")
    state = read_state(workspace, "flaky")
    assert state.status == "interrupted" and state.current_stage == "only"
    assert [e.error for e in state.errors] == [
        "the agent raised RuntimeError: the provider timed out"
    ]
    assert make().resume("flaky").status == "completed" and calls == ["only", "only"]


def test_checkpoints_are_written_at_the_interval(workspace: Workspace) -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    seen: list[str | None] = []
    step = [timedelta(seconds=1)]

    def slow(stage_input: StageInput) -> dict[str, Any]:
        for n in range(6):
            now[0] += step[0]
            stage_input.checkpoint(f"step {n}")
            progress = read_state(workspace, stage_input.workflow_id).progress
            seen.append(None if progress is None else f"{progress.stage}: {progress.note}")
        return {"summary": "ok", "confidence": "high"}

    def flow(policy: WorkflowPolicy) -> Workflow:
        stages = [Stage(name="slow", prompt="p", agent=slow)]
        return Workflow(stages=stages, workspace=workspace, policy=policy, clock=lambda: now[0])

    run = flow(WorkflowPolicy(checkpoint_interval=3)).run("t", workflow_id="cp")
    begun = "slow: started (attempt 1)"  # written when the stage starts: where a run is
    assert seen == [begun, begun, "slow: step 2", "slow: step 2", "slow: step 2", "slow: step 5"]
    assert run.state.progress is None  # cleared when the stage completed
    seen.clear()
    flow(WorkflowPolicy(checkpoint_interval=None)).run("t", workflow_id="cp2")  # none written
    assert seen == [begun] * 6
    seen.clear()
    step[0] = timedelta(seconds=6)  # by default, a note is written every 30 seconds
    flow(WorkflowPolicy()).run("t", workflow_id="cp3")
    assert seen == [begun] * 4 + ["slow: step 4"] * 2


def test_misuse_is_refused_with_a_clear_message(workspace: Workspace) -> None:
    agent = lambda _: {}  # noqa: E731
    with pytest.raises(ValueError, match="at least one stage"):
        Workflow(stages=[], workspace=workspace)
    with pytest.raises(ValueError, match="unique; repeated: a"):
        Workflow(stages=[Stage(name="a", prompt="p", agent=agent)] * 2, workspace=workspace)
    with pytest.raises(ValueError, match="stage name 'a/b' must be"):
        Stage(name="a/b", prompt="p", agent=agent)
    with pytest.raises(TypeError, match="agent must be callable"):
        Stage(name="a", prompt="p", agent="gpt")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="did you mean 'memory_tokens'"):
        WorkflowPolicy(memory_token=5)  # type: ignore[call-arg]
    flow = Workflow(stages=[Stage(name="a", prompt="p", agent=agent)], workspace=workspace)
    with pytest.raises(ValueError, match=r"workflow_id '\.\./x' must be"):
        flow.run("t", workflow_id="../x")
    with pytest.raises(WorkflowError, match="no workflow 'nope'"):
        flow.resume("nope")
    flow.run("t", workflow_id="taken")
    with pytest.raises(WorkflowError, match="already exists"):
        flow.run("t", workflow_id="taken")
    other = Workflow(stages=[Stage(name="b", prompt="p", agent=agent)], workspace=workspace)
    with pytest.raises(WorkflowError, match="has the stages"):
        other.resume("taken")


def test_a_broken_hand_edit_is_named(workspace: Workspace) -> None:
    workflow(workspace, broken="analyst").run(TASK, workflow_id=WORKFLOW_ID)
    state = _state_json(workspace)
    state["completed_stages"][0]["output"]["confidence"] = "sure"
    _write_state(workspace, state)
    # The runner recorded the output's digest: the edit is seen without the stage's schema.
    changed = r"completed_stages\.0\.output changed since stage 'planner' completed"
    with pytest.raises(WorkflowStateError, match=changed):
        workflow(workspace).resume(WORKFLOW_ID)
    with pytest.raises(WorkflowStateError, match=changed):
        read_state(workspace, WORKFLOW_ID)  # what `ctxfs session show` reads
    del state["completed_stages"][0]["sha256"]  # the edit accepted: the schema decides
    _write_state(workspace, state)
    with pytest.raises(WorkflowStateError, match=r"completed_stages\.0\.output .*confidence"):
        workflow(workspace).resume(WORKFLOW_ID)
    del state["task"]
    _write_state(workspace, state)
    with pytest.raises(WorkflowStateError, match=r"settlement\.json .*task: Field required"):
        workflow(workspace).resume(WORKFLOW_ID)
    workspace.write_text(STATE, "{ not json")
    with pytest.raises(WorkflowStateError, match="is not valid JSON"):
        workflow(workspace).resume(WORKFLOW_ID)


def test_a_runner_taken_over_stops_at_its_next_state_write(workspace: Workspace) -> None:
    first, second = workflow(workspace), workflow(workspace)
    analyst = next(s for s in first.stages if s.name == "analyst")
    inner = analyst.agent
    second_analyst = next(s for s in second.stages if s.name == "analyst")

    def fails(stage_input: StageInput) -> Any:
        raise RuntimeError("the second runner's model is down")

    object.__setattr__(second_analyst, "agent", fails)

    def analyst_while_another_runner_takes_over(stage_input: StageInput) -> Any:
        with pytest.raises(RuntimeError, match="model is down"):
            second.resume(WORKFLOW_ID)  # claims the workflow, records its failure
        return inner(stage_input)

    object.__setattr__(analyst, "agent", analyst_while_another_runner_takes_over)
    with pytest.raises(
        WorkflowConflictError,
        match=r"another runner wrote /sessions/settlement\.json \(version 13, runner "
        r"[0-9a-f]{12}\) since this one wrote version 10",
    ):
        first.run(TASK, workflow_id=WORKFLOW_ID)
    state = read_state(workspace, WORKFLOW_ID)
    assert [e.error for e in state.errors] == [
        "the agent raised RuntimeError: the second runner's model is down"
    ]
    assert [s.stage for s in state.completed_stages] == ["planner", "researcher"]
    # The first runner's analyst output was never written: the state file records an output
    # before its file is written, and that state write failed. A resume runs the stage.
    assert not workspace.exists("/sessions/settlement/stages/03-analyst.json")
    resumed = workflow(workspace).resume(WORKFLOW_ID)
    clean = workflow(Workspace("memory://clean3")).run(TASK, workflow_id=WORKFLOW_ID)
    assert outputs_json(resumed.outputs) == outputs_json(clean.outputs)
