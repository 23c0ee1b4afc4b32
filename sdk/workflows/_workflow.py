"""The workflow runner: stages in strict sequence, state saved after each, resumable."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar, overload

from pydantic import BaseModel, ValidationError

from ctxfs._errors import PathNotFoundError, WorkflowError, WorkflowStateError
from ctxfs._sections import one_line
from ctxfs._tokens import TokenCounter, as_token_counter
from ctxfs._workspace._workspace import Workspace
from ctxfs.workflows._checks import inconsistencies
from ctxfs.workflows._context import StageInput, StoredOutput, pack_memory, pack_previous
from ctxfs.workflows._files import (
    create_state,
    read_stage_file,
    read_state,
    replace_state,
    set_aside,
    stage_file_output,
    write_stage_file,
)
from ctxfs.workflows._outputs import (
    StageOutput,
    check_output,
    confidence_of,
    error_text,
    raw_record,
    summary_of,
)
from ctxfs.workflows._paths import output_digest, stage_path, state_path, workflow_folder
from ctxfs.workflows._stage import (
    MemoryRetriever,
    MemorySearch,
    Stage,
    WorkflowPolicy,
    check_name,
    check_stages,
    retrieve,
)
from ctxfs.workflows._state import (
    CompletedStage,
    MemorySnapshot,
    Progress,
    SetAside,
    StageHalt,
    WorkflowState,
    WorkflowStatus,
)

__all__ = ["Workflow", "WorkflowRun"]

Clock = Callable[[], datetime]
_Output = TypeVar("_Output", bound=BaseModel)


_log = logging.getLogger("ctxfs.workflows")
_NOTE_CHARS = 2_000
"""The longest checkpoint note kept in the state file."""


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class WorkflowRun:
    """Where a run or a resume left a workflow.

    Attributes:
        workflow_id: The workflow's id (pass it to :meth:`Workflow.resume`).
        status: ``completed``, or ``halted`` when a stage's output did not validate (see
            ``halt``).
        outputs: Each completed stage's validated output (an instance of its schema), by
            stage name, in stage order.
        halt: The record of the invalid output, when halted.
        state_path: The state file in the workspace.
        state: The state file's content.
    """

    workflow_id: str
    status: WorkflowStatus
    outputs: Mapping[str, BaseModel]
    halt: StageHalt | None
    state_path: str
    state: WorkflowState

    @overload
    def output(self, stage: str) -> StageOutput: ...

    @overload
    def output(self, stage: str, schema: type[_Output]) -> _Output: ...

    def output(self, stage: str, schema: type[BaseModel] = StageOutput) -> BaseModel:
        """One completed stage's output, typed as its schema (default :class:`StageOutput`).

        Raises:
            KeyError: The stage has not completed.
            TypeError: Its output is not a ``schema``.
        """
        if stage not in self.outputs:
            raise KeyError(
                f"stage {stage!r} has not completed; completed: {', '.join(self.outputs) or 'none'}"
            )
        output = self.outputs[stage]
        if not isinstance(output, schema):
            raise TypeError(
                f"stage {stage!r} returns {type(output).__name__}, not {schema.__name__}; "
                f"pass its schema: run.output({stage!r}, {type(output).__name__})"
            )
        return output


class _Progress:
    """One call's moving parts: the state last written, and when."""

    def __init__(self, state: WorkflowState, written_at: datetime) -> None:
        self.state = state
        self.written_at = written_at


class Workflow:
    """Ordered stages, each its own agent, passing validated outputs through a state file.

    Stages run in strict sequence. Each stage's agent gets only its prompt, the task, the
    earlier stages' validated outputs within ``policy.previous_outputs_tokens`` and the
    long-term memory retrieved for the task within ``policy.memory_tokens`` (a
    :class:`~ctxfs.workflows.StageInput`). After each stage, its output is validated against
    the stage's schema, recorded in the state file ``/sessions/<workflow id>.json`` and
    then copied to its own file. An output that does not validate halts the workflow
    with a record in the state file; fix the output there and :meth:`resume`.

    Example:
        >>> from ctxfs import Workspace
        >>> reply = {"summary": "Two sources agree.", "confidence": "high"}
        >>> flow = Workflow(
        ...     stages=[Stage(name="research", prompt="Research it.", agent=lambda _: reply)],
        ...     workspace=Workspace("memory://flow"),
        ... )
        >>> flow.run("Is the ledger balanced?", workflow_id="w1").status
        'completed'

    Args:
        stages: The stages, in order; names unique.
        workspace: Where the state file, the outputs and the agents' files live.
        policy: Budgets and the checkpoint interval (default :class:`WorkflowPolicy`).
        memory: Finds long-term memory for the task, once when the workflow starts (kept in
            the state file, so a resumed run sees the same): a retriever of
            :mod:`ctxfs.memory` (its ``search``), or any callable from the task to texts.
        counter: Counts tokens for the budgets (default: the project's tiktoken counter).
        clock: Returns the current time, timezone-aware (for the state file's timestamps and
            the checkpoint interval).

    Raises:
        ValueError: No stages, or two with one name.
        TypeError: Something that is not a :class:`Stage` among the stages.
    """

    def __init__(
        self,
        *,
        stages: Sequence[Stage],
        workspace: Workspace,
        policy: WorkflowPolicy | None = None,
        memory: MemoryRetriever | MemorySearch | None = None,
        counter: TokenCounter | Callable[[str], int] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._stages = check_stages(stages)
        self._workspace = workspace
        self._policy = policy or WorkflowPolicy()
        self._memory = memory
        self._counter = as_token_counter(counter)
        self._clock = clock or _utc_now

    @property
    def stages(self) -> tuple[Stage, ...]:
        """The stages, in order."""
        return self._stages

    @property
    def workspace(self) -> Workspace:
        """Where the workflow's files live."""
        return self._workspace

    @property
    def policy(self) -> WorkflowPolicy:
        """The budgets and the checkpoint interval."""
        return self._policy

    # -- entry points ----------------------------------------------------------------------

    def run(self, task: str, *, workflow_id: str | None = None) -> WorkflowRun:
        """Starts a new workflow on ``task`` and runs it until it completes or halts.

        Args:
            task: What the workflow is to do; every stage sees it.
            workflow_id: Its id (names its files); default: the start time plus a random
                suffix.

        Raises:
            WorkflowError: The id is taken.
            WorkflowConflictError: Another runner took the workflow over meanwhile.
            Exception: Whatever a stage's agent raised (recorded in the state file's
                ``errors`` first; resume to run that stage again).
        """
        if not isinstance(task, str) or not task.strip():
            raise ValueError("a workflow needs a task: what it is to do")
        now = self._now()
        if workflow_id is None:
            workflow_id = f"{now:%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
        check_name("workflow_id", workflow_id)
        memory = retrieve(self._memory, task, self._policy.memory_items)
        state = WorkflowState(
            workflow_id=workflow_id,
            version=1,
            task=task,
            stages=[stage.name for stage in self._stages],
            status="running",
            current_stage=self._stages[0].name,
            completed_stages=[],
            memory=memory,
            memory_snapshots=[],
            halt=None,
            errors=[],
            progress=None,
            **_runner(),
            created_at=now,
            updated_at=now,
        )
        create_state(self._workspace, state)
        return self._drive(_Progress(state, now))

    def resume(self, workflow_id: str, *, retry: bool = False) -> WorkflowRun:
        """Continues a workflow from its first incomplete stage.

        The state file is checked whole first (every contradiction a hand edit left is named,
        one line each). Completed stages are never run again; their files are written again
        from the state when missing or changed. A file for an incomplete stage was not
        written by the runner: it is moved aside and recorded (``set_aside``), never taken as
        the output. A completed workflow only gets its files written again. A halted
        stage's ``halt.raw_output`` (fixed by hand in the state file) is
        validated again: if it passes it becomes the stage's output, else the workflow stays
        halted with the new error. A ``running`` or ``interrupted`` workflow goes on from
        its first incomplete stage.

        Args:
            workflow_id: The workflow's id.
            retry: For a halted workflow, run the halted stage's agent again instead of
                validating the recorded output.

        Raises:
            WorkflowError: No such workflow, or its stages are not this workflow's.
            WorkflowStateError: The state file is malformed (the field is named).
            WorkflowConflictError: Another runner took the workflow over meanwhile.
        """
        check_name("workflow_id", workflow_id)
        state = read_state(self._workspace, workflow_id)
        names = [stage.name for stage in self._stages]
        if state.stages != names:
            raise WorkflowError(
                f"workflow {workflow_id!r} has the stages {state.stages}, but this Workflow has "
                f"{names}; resume it with the stages it was started with",
                path=state_path(workflow_id),
            )
        self._outputs(state)  # a hand edit that broke a completed output is named now
        progress = _Progress(state, self._now())
        if state.status == "completed":  # the last stage's file may never have been written
            for record in state.completed_stages:
                self._restore_file(progress, record)
            return self._result(progress.state)
        halt = state.halt  # read_state checked that it is the first incomplete stage's
        self._save(progress, status="running", halt=None, **_runner())
        for record in state.completed_stages:
            self._restore_file(progress, record)
        if halt is not None and not retry:
            index = len(state.completed_stages)
            stage = self._stages[index]
            try:
                output = check_output(stage.schema, halt.raw_output)
            except (ValueError, TypeError) as exc:
                return self._halt(progress, stage, halt.raw_output, exc)
            now = self._now()
            self._complete(progress, index, stage, output, now, now)
        return self._drive(progress)

    def state(self, workflow_id: str) -> WorkflowState:
        """Reads a workflow's state file (see :func:`~ctxfs.workflows.read_state`)."""
        return read_state(self._workspace, workflow_id)

    # -- running ---------------------------------------------------------------------------

    def _drive(self, progress: _Progress) -> WorkflowRun:
        for index in range(len(progress.state.completed_stages), len(self._stages)):
            stage = self._stages[index]
            self._set_aside_foreign(progress, index, stage)
            started = self._now()
            stage_input = self._input(progress, index, stage)
            note = f"started (attempt {stage_input.attempt})"
            self._save(progress, progress=Progress(stage=stage.name, note=note, at=started))
            try:
                reply = stage.agent(stage_input)
            except BaseException as exc:
                self._interrupted(progress, stage, exc)
                raise
            try:
                output = check_output(stage.schema, reply)
            except (ValueError, TypeError) as exc:
                return self._halt(progress, stage, raw_record(reply), exc)
            self._complete(progress, index, stage, output, started, self._now())
        return self._result(progress.state)

    def _interrupted(self, progress: _Progress, stage: Stage, exc: BaseException) -> None:
        """Records that the stage's agent raised (or the process is being stopped)."""
        failure = StageHalt(
            stage=stage.name,
            error=f"the agent raised {type(exc).__name__}: {exc}",
            raw_output=None,
            at=self._now(),
        )
        errors = progress.state.errors
        if isinstance(exc, Exception):  # an error of the stage, counted as an attempt
            errors = [*errors, failure]
        try:
            self._save(progress, status="interrupted", errors=errors, progress=None)
        except Exception:  # the agent's exception is the one to raise
            _log.warning(
                "ctxfs: workflow %s: the interruption could not be recorded",
                progress.state.workflow_id,
                exc_info=True,
            )

    def _restore_file(self, progress: _Progress, record: CompletedStage) -> None:
        """Writes a completed stage's file again when it is missing or differs from the state
        (the process died between the state write and the file's, or the file was changed:
        then the changed copy is moved aside and recorded first, not thrown away)."""
        data = read_stage_file(self._workspace, record.output_path)
        if data is not None:
            if stage_file_output(data) == record.output:
                return
            self._record_aside(
                progress,
                record.stage,
                record.output_path,
                data,
                "it no longer held the output the state file records for this completed "
                "stage; the runner wrote that output again",
            )
        write_stage_file(
            self._workspace,
            record.output_path,  # read_state checked it is the stage's path
            record.stage,
            record.output,
            record.started_at,
            record.completed_at,
        )

    def _record_aside(
        self, progress: _Progress, stage: str, path: str, data: bytes, reason: str
    ) -> None:
        # copied, recorded, then removed: a copy the state does not name is never left alone
        kept_as = set_aside(self._workspace, path, data)
        known = progress.state.set_aside
        if not any(a.path == path and a.kept_as == kept_as for a in known):
            at = self._now()
            record = SetAside(stage=stage, path=path, kept_as=kept_as, reason=reason, at=at)
            self._save(progress, set_aside=[*known, record])
        with contextlib.suppress(PathNotFoundError):
            self._workspace.rm(path)

    def _set_aside_foreign(self, progress: _Progress, index: int, stage: Stage) -> None:
        """Moves aside a file for this stage that the runner did not write (and records it).

        The runner writes a stage's file only after the state file records its output, so a
        file for a stage not yet completed is someone else's: never trusted as the output.
        """
        path = stage_path(progress.state.workflow_id, index, stage.name)
        data = read_stage_file(self._workspace, path)
        if data is None:
            return
        output = stage_file_output(data)
        why = "not a stage file" if output is None else "an output the runner did not record"
        self._record_aside(
            progress,
            stage.name,
            path,
            data,
            f"{why}: the state file does not record stage {stage.name!r} as completed, so the "
            "runner did not write it; the stage runs (to take this output, put it in "
            "halt.raw_output and resume)",
        )

    def _input(self, progress: _Progress, index: int, stage: Stage) -> StageInput:
        state = progress.state
        models = self._outputs(state)
        stored = [
            StoredOutput(
                stage=record.stage,
                output=record.output,
                path=record.output_path,
                summary=summary_of(models[record.stage]),
                confidence=confidence_of(models[record.stage]),
            )
            for record in state.completed_stages
        ]
        previous, previous_text = pack_previous(
            stored,
            self._policy.previous_outputs_tokens,
            self._counter,
            workflow_folder(state.workflow_id),
        )
        memory, memory_text = pack_memory(state.memory, self._policy.memory_tokens, self._counter)

        def checkpoint(note: str) -> None:
            interval = self._policy.checkpoint_interval
            if interval is None:
                return
            now = self._now()
            if (now - progress.written_at).total_seconds() >= interval:
                note = one_line(str(note))[:_NOTE_CHARS]
                self._save(progress, progress=Progress(stage=stage.name, note=note, at=now))

        return StageInput(
            workflow_id=state.workflow_id,
            stage=stage.name,
            prompt=stage.prompt,
            task=state.task,
            previous=previous,
            previous_text=previous_text,
            memory=memory,
            memory_text=memory_text,
            schema=stage.schema,
            attempt=1 + sum(1 for error in state.errors if error.stage == stage.name),
            checkpoint=checkpoint,
        )

    def _complete(
        self,
        progress: _Progress,
        index: int,
        stage: Stage,
        output: BaseModel,
        started: datetime,
        completed: datetime,
    ) -> None:
        state = progress.state
        path = stage_path(state.workflow_id, index, stage.name)
        output_json = output.model_dump(mode="json")
        record = CompletedStage(
            stage=stage.name,
            output=output_json,
            output_path=path,
            started_at=started,
            completed_at=completed,
            sha256=output_digest(output_json),
        )
        summary = summary_of(output) or json.dumps(output_json, ensure_ascii=False)
        limit = self._policy.snapshot_chars
        snapshot = MemorySnapshot(
            stage=stage.name,
            summary=summary if len(summary) <= limit else summary[: limit - 1] + "…",
        )
        following = self._stages[index + 1].name if index + 1 < len(self._stages) else None
        self._save(
            progress,
            completed_stages=[*state.completed_stages, record],
            memory_snapshots=[*state.memory_snapshots, snapshot],
            current_stage=following,
            status="running" if following is not None else "completed",
            progress=None,
        )
        # The state is the record; the file is a copy written after it (see _files).
        write_stage_file(self._workspace, path, stage.name, output_json, started, completed)

    def _halt(
        self, progress: _Progress, stage: Stage, raw: Any, error: ValueError | TypeError
    ) -> WorkflowRun:
        record = StageHalt(
            stage=stage.name, error=error_text(error), raw_output=raw, at=self._now()
        )
        self._save(
            progress,
            status="halted",
            halt=record,
            errors=[*progress.state.errors, record],
            progress=None,
        )
        return self._result(progress.state)

    def _save(self, current: _Progress, /, **changes: Any) -> None:
        previous = current.state
        now = self._now()
        state = previous.model_copy(
            update={**changes, "version": previous.version + 1, "updated_at": now}
        )
        # Round-trip through validation: a state that could not be read back is never written.
        state = WorkflowState.model_validate(state.model_dump(mode="json"))
        problems = inconsistencies(state)
        if problems:  # pragma: no cover - a defect of the runner
            raise AssertionError(f"the runner made an inconsistent state: {problems}")
        replace_state(self._workspace, previous, state)
        current.state, current.written_at = state, now

    # -- reading back ----------------------------------------------------------------------

    def _outputs(self, state: WorkflowState) -> dict[str, BaseModel]:
        schemas = {stage.name: stage.schema for stage in self._stages}
        outputs: dict[str, BaseModel] = {}
        path = state_path(state.workflow_id)
        for number, record in enumerate(state.completed_stages):
            schema = schemas[record.stage]
            try:
                outputs[record.stage] = schema.model_validate(record.output)
            except ValidationError as exc:
                raise WorkflowStateError(
                    f"{path}: completed_stages.{number}.output does not match the schema of "
                    f"stage {record.stage!r}: {error_text(exc)}",
                    path=path,
                ) from None
        return outputs

    def _result(self, state: WorkflowState) -> WorkflowRun:
        return WorkflowRun(
            workflow_id=state.workflow_id,
            status=state.status,
            outputs=self._outputs(state),
            halt=state.halt,
            state_path=state_path(state.workflow_id),
            state=state,
        )

    def _now(self) -> datetime:
        now = self._clock()
        if now.tzinfo is None:
            raise ValueError("the workflow's clock must return timezone-aware datetimes")
        return now


def _runner() -> dict[str, Any]:
    """The state fields naming this runner: its id, and the machine and process it runs in."""
    return {"runner": uuid.uuid4().hex[:12], "host": socket.gethostname(), "pid": os.getpid()}
