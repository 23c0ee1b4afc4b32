"""A scripted four-stage workflow, deterministic, shared by the tests and the crash worker.

Each stage's agent is a scripted chat model (one per stage, through ``model_agent``) whose
reply is a function of what it was sent: its summary carries a digest of its messages, so two
runs end with equal outputs only if every stage was given exactly the same input. The
researcher also stores raw material in the workspace and reports checkpoints, so the crash
tests kill the process inside a stage too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.messages import BaseMessage

from ctxfs import Workspace
from ctxfs.backends import Store
from ctxfs.testing import RecordingStore, ScriptedChatModel
from ctxfs.workflows import Stage, StageInput, Workflow, WorkflowPolicy, model_agent

TASK = "Find out why the nightly settlement job fails on the last day of the month."
WORKFLOW_ID = "settlement"
CONFIDENCE = {"planner": "high", "researcher": "medium", "analyst": "low", "writer": "high"}


def ticking_clock(start: datetime | None = None) -> Callable[[], datetime]:
    """A clock that moves one second per reading: deterministic, no sleeping."""
    ticks: Iterator[int] = iter(range(10**9))
    base = start or datetime(2026, 1, 1, tzinfo=UTC)
    return lambda: base + timedelta(seconds=next(ticks))


def digest(messages: Sequence[BaseMessage]) -> str:
    text = "\n".join(f"{m.type}:{m.text}" for m in messages)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _reply(stage: str) -> Callable[[Sequence[BaseMessage]], str]:
    def reply(messages: Sequence[BaseMessage]) -> str:
        seen = digest(messages)
        output: dict[str, Any] = {
            "summary": f"{stage} finished; it was sent {seen}. " + "Details follow. " * 12,
            "key_findings": [
                {"fact": f"{stage} fact {n}: the cut-off is computed in local time", "source": s}
                for n, s in enumerate(["/research/sources.md", "runbook.md"])
            ],
            "confidence": CONFIDENCE[stage],
            "next_stage_recommendations": [f"check what {stage} could not"],
            "raw_data_refs": ["/research/sources.md"] if stage == "researcher" else [],
        }
        return json.dumps(output)

    return reply


def stages(workspace: Workspace, *, broken: str | None = None) -> list[Stage]:
    """The four stages; ``broken`` names a stage whose model replies with an invalid output."""

    def agent(name: str) -> Callable[[StageInput], Any]:
        model = ScriptedChatModel(responses=[_reply(name)], script_id=name)
        ask = model_agent(model)

        def run(stage_input: StageInput) -> Any:
            if name == "researcher":
                stage_input.checkpoint("reading the sources")
                workspace.write_text("/research/sources.md", "cron runs at 00:00 UTC\n" * 20)
                stage_input.checkpoint("sources stored")
            if name == broken:
                return '{"summary": "forgot the confidence"}'
            return ask(stage_input)

        return run

    prompts = {
        "planner": "Plan the investigation.",
        "researcher": "Collect the evidence; store raw material under /research/.",
        "analyst": "Find the cause.",
        "writer": "Write the report.",
    }
    return [Stage(name=n, prompt=p, agent=agent(n)) for n, p in prompts.items()]


POLICY = WorkflowPolicy(previous_outputs_tokens=400, memory_tokens=60, checkpoint_interval=0)


def memory(task: str) -> list[str]:
    """A deterministic long-term memory retriever."""
    return [
        "The settlement job moved to UTC cron in March.",
        f"The last incident about {task.split()[4]} was a timezone bug.",
        "Month-end runs process three times the usual volume. " * 10,
    ]


def workflow(workspace: Workspace, *, broken: str | None = None) -> Workflow:
    return Workflow(
        stages=stages(workspace, broken=broken),
        workspace=workspace,
        policy=POLICY,
        memory=memory,
        clock=ticking_clock(),
    )


def outputs_json(outputs: Any) -> dict[str, Any]:
    return {name: output.model_dump(mode="json") for name, output in outputs.items()}


class WriteHookStore(RecordingStore):
    """Forwards every call; right after each write lands, calls ``after_write(count)``."""

    def __init__(self, inner: Store, after_write: Callable[[int], None]) -> None:
        super().__init__(inner)
        self.after_write = after_write
        self.writes = 0

    def write(self, path: str, data: bytes, **options: Any) -> None:
        super().write(path, data, **options)
        self.writes += 1
        self.after_write(self.writes)


def record_calls(flow: Workflow, calls: list[str]) -> Workflow:
    """Makes each stage's agent append its stage's name to ``calls`` when it runs."""
    for stage in flow.stages:
        inner = stage.agent

        def agent(stage_input: StageInput, inner: Callable[..., Any] = inner) -> Any:
            calls.append(stage_input.stage)
            return inner(stage_input)

        object.__setattr__(stage, "agent", agent)
    return flow


def run_to_end(workspace: Workspace) -> tuple[Any, list[str]]:
    """Resumes the workflow (or starts it, when its state file was never written) and runs
    it to the end: the run, and the stages whose agents ran, in order."""
    from ctxfs.workflows import list_workflows

    calls: list[str] = []
    flow = record_calls(workflow(workspace), calls)
    if WORKFLOW_ID in list_workflows(workspace):
        run = flow.resume(WORKFLOW_ID)
    else:
        run = flow.run(TASK, workflow_id=WORKFLOW_ID)
    assert run.status == "completed"
    return run, calls
