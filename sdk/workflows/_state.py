"""The workflow state file: its format, and reading it back with errors that name the field.

One JSON file per workflow, ``/sessions/<workflow id>.json``, indented so a person can read
and edit it::

    {
      "format": "ctxfs.workflow/1",
      "workflow_id": "research-1",
      "version": 5,
      "task": "...",
      "stages": ["planner", "researcher", "writer"],
      "status": "running",            # running | halted | interrupted | completed
      "current_stage": "writer",      # the first incomplete stage (null when completed)
      "completed_stages": [{"stage": "planner", "output": {...}, "output_path": "...",
                            "started_at": "...", "completed_at": "...",
                            "sha256": "..."}, ...],
      "memory": ["facts retrieved for the task at the start"],
      "memory_snapshots": [{"stage": "planner", "summary": "..."}, ...],
      "halt": null,                   # or {"stage", "error", "raw_output", "at"}
      "errors": [],                   # every halt so far, kept after it was fixed
      "set_aside": [],                # stage files the runner did not write, moved aside
      "progress": null,               # or {"stage", "note", "at"}: the last checkpoint
      "runner": "...", "host": "...", "pid": 4242,
      "created_at": "...", "updated_at": "..."
    }

``version`` goes up by one on every write; a runner writes only over the version it wrote
last, so a second runner is detected (:class:`~ctxfs.WorkflowConflictError`).

Reading a state file checks it whole (:func:`load_state`): its JSON nests at most
:data:`~ctxfs._json.MAX_JSON_DEPTH` levels, its fields have their types, and the
fields agree with each other (:mod:`ctxfs.workflows._checks`): a hand edit that leaves it
inconsistent is refused with one line per problem, each naming its field.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ctxfs._errors import WorkflowStateError
from ctxfs._json import NewerFormatError, check_format_version, loads_bounded
from ctxfs.workflows._checks import inconsistencies
from ctxfs.workflows._paths import dumps_json

__all__ = [
    "STATE_FORMAT",
    "CompletedStage",
    "MemorySnapshot",
    "Progress",
    "SetAside",
    "StageHalt",
    "WorkflowState",
    "WorkflowStatus",
    "dump_state",
    "load_state",
]

STATE_FORMAT: Final = "ctxfs.workflow/1"
"""The ``format`` field of every state file this version writes and reads."""

WorkflowStatus = Literal["running", "halted", "interrupted", "completed"]
"""``running`` (a runner is at it, or was killed outright: see
:func:`~ctxfs.workflows.runner_status`), ``halted`` (an invalid output), ``interrupted`` (a
stage's agent raised, or the process was interrupted; resume to go on), ``completed``."""


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
        sha256: The digest of ``output`` as the runner recorded it
            (:func:`~ctxfs.workflows._paths.output_digest`): an output changed by hand no
            longer matches and the state is refused. ``None`` (or removing it) accepts the
            output as it is; it is validated against the stage's schema on resume either way.
    """

    stage: str
    output: dict[str, Any]
    output_path: str
    started_at: datetime
    completed_at: datetime
    sha256: str | None = None


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


class SetAside(_Record):
    """A stage file the runner found but had not written, moved aside instead of trusted.

    The runner records an output in the state file before it writes the stage's file, so a
    file for a stage the state does not record as completed was written by someone else
    (an agent's own tool, a person, an older ctxfs): it is never taken as the stage's output.
    A completed stage's file that no longer holds the recorded output is moved aside too,
    and written again from the state.

    Attributes:
        stage: The stage whose output file it was.
        path: Where it was found.
        kept_as: Where it is now (same folder, ``.set-aside-<n>.json``).
        reason: Why it was not taken.
        at: When it was moved.
    """

    stage: str
    path: str
    kept_as: str
    reason: str
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
    """The whole state file (see the module docstring for its layout).

    ``runner`` is the id of the runner that wrote it last, ``host`` and ``pid`` the machine
    and process it ran in (``None`` in files of older versions).
    """

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
    set_aside: list[SetAside] = []
    progress: Progress | None
    runner: str
    host: str | None = None
    pid: int | None = None
    created_at: datetime
    updated_at: datetime

    def outputs(self) -> dict[str, dict[str, Any]]:
        """Each completed stage's validated output, by stage name, in stage order."""
        return {done.stage: done.output for done in self.completed_stages}


def dump_state(state: WorkflowState) -> bytes:
    """The state file's bytes: indented JSON, fields in their documented order."""
    return (dumps_json(state.model_dump(mode="json")) + "\n").encode("utf-8")


def _check_format(raw: object, path: str) -> None:
    """Refuses a state file of a newer format (``ctxfs.workflow/2``...), naming both."""
    found = raw.get("format") if isinstance(raw, dict) else None
    prefix, _, number = STATE_FORMAT.rpartition("/")
    if isinstance(found, str) and found.startswith(f"{prefix}/") and found != STATE_FORMAT:
        version = found.removeprefix(f"{prefix}/")
        if version.isdigit() and version.isascii():
            try:
                check_format_version(int(version), int(number), path)
            except NewerFormatError as exc:
                raise WorkflowStateError(f"{exc} (format {found!r})", path=path) from None


def load_state(data: bytes, path: str) -> WorkflowState:
    """Parses a state file and checks that its fields agree.

    Raises:
        WorkflowStateError: Not UTF-8 JSON, nested too deep, a key named twice, a field
            missing or wrong, fields that contradict each other (each named, one line per
            problem), or a newer format.
    """
    try:
        raw = loads_bounded(data.decode("utf-8"))
    except ValueError as exc:
        raise WorkflowStateError(f"{path} is not valid JSON: {exc}", path=path) from None
    _check_format(raw, path)
    try:
        state = WorkflowState.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}"
            for e in exc.errors(include_url=False)
        )
        raise WorkflowStateError(
            f"{path} is not a ctxfs workflow state file ({problems})", path=path
        ) from None
    found = inconsistencies(state)
    if found:
        lines = "\n".join(f"{path}: {problem}" for problem in found)
        raise WorkflowStateError(lines, path=path)
    return state
