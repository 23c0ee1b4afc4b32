"""The workflow state file: its format, and reading it back with errors that name the field.

One JSON file per workflow, ``/sessions/<workflow id>.json``, indented so a person can read
and edit it::

    {
      "format": "ctxfs.workflow/1",
      "workflow_id": "research-1",
      "version": 5,
      "task": "...",
      "stages": ["planner", "researcher", "writer"],
      "status": "running",            # running | halted | completed
      "current_stage": "writer",      # the first incomplete stage (null when completed)
      "completed_stages": [{"stage": "planner", "output": {...}, "output_path": "...",
                            "started_at": "...", "completed_at": "..."}, ...],
      "memory": ["facts retrieved for the task at the start"],
      "memory_snapshots": [{"stage": "planner", "summary": "..."}, ...],
      "halt": null,                   # or {"stage", "error", "raw_output", "at"}
      "errors": [],                   # every halt so far, kept after it was fixed
      "progress": null,               # or {"stage", "note", "at"}: the last checkpoint
      "runner": "...", "created_at": "...", "updated_at": "..."
    }

``version`` goes up by one on every write; a runner writes only over the version it wrote
last, so a second runner is detected (:class:`~ctxfs.WorkflowConflictError`).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ctxfs._errors import WorkflowStateError

__all__ = [
    "STATE_FORMAT",
    "CompletedStage",
    "MemorySnapshot",
    "Progress",
    "StageHalt",
    "WorkflowState",
    "WorkflowStatus",
    "dump_state",
    "load_state",
]

STATE_FORMAT: Final = "ctxfs.workflow/1"
"""The ``format`` field of every state file this version writes and reads."""

WorkflowStatus = Literal["running", "halted", "completed"]
"""``running`` (started or interrupted), ``halted`` (invalid output), ``completed``."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CompletedStage(_Record):
    """A stage that finished with a validated output.

    Attributes:
        stage: The stage's name.
        output: Its validated output, as JSON.
        output_path: The workspace file that holds the same output on its own.
        started_at: When the runner started it (for a hand-fixed output: when the fixed
            output was accepted).
        completed_at: When its output was validated.
    """

    stage: str
    output: dict[str, Any]
    output_path: str
    started_at: datetime
    completed_at: datetime


class MemorySnapshot(_Record):
    """What the workflow knew after a stage, in short.

    Attributes:
        stage: The stage's name.
        summary: Its output's summary (or the start of its JSON), cut short.
    """

    stage: str
    summary: str


class StageHalt(_Record):
    """The record of a stage whose output did not validate.

    Attributes:
        stage: The stage's name.
        error: The validation error, one line per problem, each naming its field.
        raw_output: What the agent returned: a JSON object as such, other text as a string.
            Fix it here and resume: the fixed output is validated and, if it passes, taken
            as the stage's output without running the stage again.
        at: When the output was rejected.
    """

    stage: str
    error: str
    raw_output: Any
    at: datetime


class Progress(_Record):
    """The last checkpoint a running stage reported.

    Attributes:
        stage: The stage's name.
        note: What the stage said it had done so far.
        at: When it was written.
    """

    stage: str
    note: str
    at: datetime


class WorkflowState(_Record):
    """The whole state file (see the module docstring for its layout)."""

    format: Literal["ctxfs.workflow/1"] = STATE_FORMAT
    workflow_id: str
    version: int
    task: str
    stages: list[str]
    status: WorkflowStatus
    current_stage: str | None
    completed_stages: list[CompletedStage]
    memory: list[str]
    memory_snapshots: list[MemorySnapshot]
    halt: StageHalt | None
    errors: list[StageHalt]
    progress: Progress | None
    runner: str
    created_at: datetime
    updated_at: datetime

    def outputs(self) -> dict[str, dict[str, Any]]:
        """Each completed stage's validated output, by stage name, in stage order."""
        return {done.stage: done.output for done in self.completed_stages}


def dump_state(state: WorkflowState) -> bytes:
    """The state file's bytes: indented JSON, fields in their documented order."""
    text = json.dumps(state.model_dump(mode="json"), indent=2, ensure_ascii=False)
    return (text + "\n").encode("utf-8")


def load_state(data: bytes, path: str) -> WorkflowState:
    """Parses a state file.

    Raises:
        WorkflowStateError: Not UTF-8 JSON, or a field is missing or wrong (named).
    """
    try:
        raw = json.loads(data.decode("utf-8"))
    except ValueError as exc:
        raise WorkflowStateError(f"{path} is not valid JSON: {exc}", path=path) from None
    try:
        return WorkflowState.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}"
            for e in exc.errors(include_url=False)
        )
        raise WorkflowStateError(
            f"{path} is not a ctxfs workflow state file ({problems})", path=path
        ) from None
