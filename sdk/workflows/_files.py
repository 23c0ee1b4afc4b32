"""Reading and writing a workflow's files: the state file under its version guard, and the
stage files (where they live: :mod:`ctxfs.workflows._paths`).

Every write is a whole-file atomic write of the workspace (a reader sees the old file or the
new one, on every backend). The state file is only ever written over the version its writer
read or wrote last: the check and the write are one compare-and-swap of the workspace, so of
two runners the second to write gets :class:`~ctxfs.WorkflowConflictError`.

The state file is the record; a stage file is a copy of one completed output, written after
the state file recorded it. So a stage file is never trusted on its own: one for a completed
stage that is missing or differs is written again from the state, and one for a stage the
state does not record as completed was not written by the runner and is moved aside
(:func:`set_aside`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ctxfs._errors import (
    IsADirectoryPathError,
    PathExistsError,
    PathNotFoundError,
    WorkflowConflictError,
    WorkflowError,
    WorkflowStateError,
)
from ctxfs._json import loads_bounded
from ctxfs._workspace._workspace import Workspace
from ctxfs.workflows._paths import (
    SESSIONS_DIR,
    dumps_json,
    stage_path,
    state_path,
    workflow_folder,
)
from ctxfs.workflows._state import WorkflowState, dump_state, load_state

__all__ = [
    "SESSIONS_DIR",
    "create_state",
    "list_workflows",
    "read_stage_file",
    "read_state",
    "replace_state",
    "set_aside",
    "stage_file_output",
    "stage_path",
    "state_path",
    "workflow_folder",
    "write_stage_file",
]


def read_state(workspace: Workspace, workflow_id: str) -> WorkflowState:
    """Reads a workflow's state file.

    Raises:
        WorkflowError: There is no such workflow in the workspace.
        WorkflowStateError: The file is malformed (the message names the field).
    """
    path = state_path(workflow_id)
    try:
        data = workspace.read_bytes(path)
    except PathNotFoundError:
        raise WorkflowError(
            f"no workflow {workflow_id!r} in {workspace.url}: {path} does not exist",
            path=path,
        ) from None
    except IsADirectoryPathError:
        raise WorkflowStateError(f"{path} is a folder, not a state file", path=path) from None
    state = load_state(data, path)
    if state.workflow_id != workflow_id:
        raise WorkflowStateError(
            f"{path}: workflow_id is {state.workflow_id!r}, but the file is named for "
            f"{workflow_id!r}",
            path=path,
        )
    return state


def list_workflows(workspace: Workspace) -> list[str]:
    """The ids of the workflows whose state files are in the workspace, sorted."""
    try:
        entries = workspace.ls(SESSIONS_DIR)
    except PathNotFoundError:
        return []
    suffix = ".json"
    # a folder named like a state file is listed too: reading it says what is wrong
    return sorted(entry.name[: -len(suffix)] for entry in entries if entry.name.endswith(suffix))


def create_state(workspace: Workspace, state: WorkflowState) -> None:
    """Writes a new workflow's first state file, refusing to overwrite any.

    Raises:
        WorkflowError: The id is taken (a state file or a folder of outputs exists).
    """
    path = state_path(state.workflow_id)
    taken = WorkflowError(
        f"workflow {state.workflow_id!r} already exists in {workspace.url} ({path}); "
        "resume it, or run with another workflow_id",
        path=path,
    )
    if workspace.exists(path) or workspace.exists(f"{SESSIONS_DIR}/{state.workflow_id}"):
        raise taken
    data = dump_state(state)

    def change(current: bytes | None) -> bytes:
        if current is not None:
            raise taken
        return data

    # create-only; a write whose reply was lost is recognised, a torn one removed
    workspace.update(path, change)


def replace_state(workspace: Workspace, previous: WorkflowState, state: WorkflowState) -> None:
    """Writes ``state`` over ``previous``, only if the file still holds ``previous.version``.

    Raises:
        WorkflowConflictError: Another runner (or a person) wrote the file meanwhile.
    """
    path = state_path(state.workflow_id)
    expected = previous.version
    if state.version != expected + 1:  # pragma: no cover - a defect of the runner
        raise AssertionError("a state is written over the version just before it")

    def change(current: bytes | None) -> bytes:
        if current is None:
            raise WorkflowConflictError(
                f"{path} was deleted while this runner worked on it", path=path
            )
        stored = _stored_version(current, path)
        if stored != expected:
            raise WorkflowConflictError(
                f"another runner wrote {path} (version {stored}, runner {_runner(current)}) "
                f"since this one wrote version {expected}; this runner stops here, and the "
                "file keeps the other's progress",
                path=path,
            )
        return dump_state(state)

    workspace.update(path, change)


def _stored_version(data: bytes, path: str) -> int:
    try:
        return load_state(data, path).version
    except WorkflowStateError as exc:
        raise WorkflowConflictError(
            f"{path} changed since this runner wrote it and is no longer a state file "
            f"({exc}); this runner stops here",
            path=path,
        ) from None


def _runner(data: bytes) -> str:
    try:
        return str(loads_bounded(data)["runner"])
    except (ValueError, KeyError, TypeError):
        return "unknown"


def write_stage_file(
    workspace: Workspace,
    path: str,
    stage: str,
    output: dict[str, Any],
    started_at: datetime,
    completed_at: datetime,
) -> None:
    """Writes (or writes again) one completed output on its own, as the state records it."""
    record = {
        "stage": stage,
        "output": output,
        "started_at": started_at.isoformat(),
        "completed_at": completed_at.isoformat(),
    }
    workspace.write_bytes(path, (dumps_json(record) + "\n").encode("utf-8"))


def read_stage_file(workspace: Workspace, path: str) -> bytes | None:
    """The bytes of a stage file, or ``None`` if there is none."""
    try:
        return workspace.read_bytes(path)
    except PathNotFoundError:
        return None


def stage_file_output(data: bytes) -> dict[str, Any] | None:
    """The output a stage file holds, or ``None`` if it does not parse as one."""
    try:
        record = loads_bounded(data)
    except ValueError:
        return None
    output = record.get("output") if isinstance(record, dict) else None
    return output if isinstance(output, dict) else None


def set_aside(workspace: Workspace, path: str, data: bytes) -> str:
    """Copies a stage file the runner did not write to ``<path>.set-aside-<n>.json``: the
    first free ``n``, or the one that holds these bytes already (a copy an interrupted
    runner made). The caller records the copy, then removes ``path``: cut short anywhere,
    no copy is lost and none is made twice.

    Returns:
        Where the copy is.
    """
    base = path.removesuffix(".json")
    for number in range(1, 1000):
        kept_as = f"{base}.set-aside-{number}.json"
        try:
            workspace.write_bytes(kept_as, data, create_only=True)
        except PathExistsError:
            if workspace.read_bytes(kept_as) == data:
                return kept_as
            continue
        return kept_as
    raise WorkflowError(f"{path}: 999 files were set aside next to it already", path=path)
