"""Whether a state file's fields agree with each other: one line per problem, naming the field.

A state file is edited by hand (that is how a halted output is fixed), so reading one back
checks more than the types: the stages complete in order, ``status`` and ``current_stage``
say what ``completed_stages`` says, a halt is where the workflow stopped, every path is the
one the runner writes, and no completed output changed since it was recorded. The checks
need nothing but the file, so ``ctxfs session show`` and :meth:`Workflow.resume
<ctxfs.workflows.Workflow.resume>` refuse the same files with the same lines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxfs.workflows._paths import output_digest, stage_path

if TYPE_CHECKING:
    from ctxfs.workflows._state import WorkflowState

__all__ = ["inconsistencies"]


def inconsistencies(state: WorkflowState) -> list[str]:
    """What in ``state`` contradicts the rest of it, one line per problem (empty: none)."""
    problems: list[str] = []
    stages = state.stages
    if not stages:
        return ["stages is empty; a workflow has at least one stage"]
    repeated = sorted({name for name in stages if stages.count(name) > 1})
    if repeated:
        problems.append(f"stages names {', '.join(map(repr, repeated))} more than once")
    if state.version < 1:
        problems.append(f"version is {state.version}; versions count from 1")
    done = state.completed_stages
    if len(done) > len(stages):
        problems.append(
            f"completed_stages has {len(done)} records, but the workflow has {len(stages)} stages"
        )
    for number, record in enumerate(done[: len(stages)]):
        problems += _record_problems(state, number, record.stage)
    first_open = stages[len(done)] if len(done) < len(stages) else None
    problems += _status_problems(state, len(done), first_open)
    known = set(stages)
    for field, stage in [
        *((f"errors.{n}.stage", e.stage) for n, e in enumerate(state.errors)),
        *((f"memory_snapshots.{n}.stage", s.stage) for n, s in enumerate(state.memory_snapshots)),
        *((f"set_aside.{n}.stage", s.stage) for n, s in enumerate(state.set_aside)),
        *([("progress.stage", state.progress.stage)] if state.progress is not None else []),
    ]:
        if stage not in known:
            problems.append(f"{field} is {stage!r}, which is not one of the stages")
    return problems


def _record_problems(state: WorkflowState, number: int, name: str) -> list[str]:
    record = state.completed_stages[number]
    field = f"completed_stages.{number}"
    expected = state.stages[number]
    if name != expected:
        return [
            f"{field}.stage is {name!r}, but stage {number + 1} is {expected!r} "
            "(stages complete in order)"
        ]
    problems = []
    path = stage_path(state.workflow_id, number, name)
    if record.output_path != path:
        problems.append(
            f"{field}.output_path is {record.output_path!r}; the runner writes {path!r}"
        )
    if record.sha256 is not None and record.sha256 != output_digest(record.output):
        problems.append(
            f"{field}.output changed since stage {name!r} completed (it no longer matches "
            f"{field}.sha256): restore it from {path}, or remove {field}.sha256 to accept the "
            "edit (resume validates it against the stage's schema)"
        )
    return problems


def _status_problems(state: WorkflowState, done: int, first_open: str | None) -> list[str]:
    problems = []
    total = len(state.stages)
    if state.status == "completed" and first_open is not None:
        problems.append(
            f"status is 'completed', but {done} of {total} stages are in completed_stages "
            f"(the first incomplete one is {first_open!r}); set status to 'running' to resume"
        )
    if state.status != "completed" and first_open is None and done == total:
        problems.append(
            f"status is {state.status!r}, but all {total} stages are in completed_stages; "
            "set status to 'completed'"
        )
    if state.current_stage != first_open and done <= total:
        problems.append(
            f"current_stage is {_shown(state.current_stage)}, but the first incomplete stage is "
            f"{_shown(first_open)}"
        )
    if state.status == "halted" and state.halt is None:
        problems.append("status is 'halted', but halt is null (a halt records the invalid output)")
    if state.halt is not None:
        if state.status != "halted":
            problems.append(
                f"halt is set, but status is {state.status!r}; set status to 'halted' or halt "
                "to null"
            )
        elif state.halt.stage != first_open:
            problems.append(
                f"halt.stage is {state.halt.stage!r}, but the first incomplete stage is "
                f"{_shown(first_open)}"
            )
    return problems


def _shown(stage: str | None) -> str:
    return "null" if stage is None else repr(stage)
