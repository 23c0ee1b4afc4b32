"""Where a sub-task is filed: its thread id, and the record tying it to its parent.

A sub-task runs on the thread ``<parent thread>/task-<tool call id>``, so parallel calls never
share one and a re-run after a crash finds the same one. Next to its transcripts, in
``/transcripts/<thread>/task.json``, a record names the parent thread, the call, the
sub-agent, the prompt and, once it ended, the :class:`~ctxfs.subagents.TaskResult`. The
record is written when the sub-task starts (``running``) and rewritten, atomically, when it
ends (once its transcript is written); a re-run of the same call with the same prompt returns
the recorded result instead of working again, and one whose record is still ``running`` (the
process died, or the transcript could not be written) starts over.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ctxfs._archive._transcripts import thread_transcript_dir
from ctxfs._errors import PathExistsError, PathNotFoundError
from ctxfs._json import loads_bounded
from ctxfs._layout import TRANSCRIPTS_DIR
from ctxfs._workspace._workspace import Workspace
from ctxfs.subagents._result import TaskResult

__all__ = [
    "RECORD_NAME",
    "TaskRecord",
    "child_thread_id",
    "claim_thread",
    "describe_relations",
    "joined_pairs",
    "read_record",
    "record_path",
    "same_task",
    "task_records",
    "write_record",
]

RECORD_NAME = "task.json"
"""File name of a sub-task's record, in its thread's transcript folder."""

_FORMAT = "ctxfs-subagent-task"
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")
_VERSION = 1


def child_thread_id(parent_thread_id: str, tool_call_id: str, attempt: int = 1) -> str:
    """The thread a sub-task runs on: derived from the parent's thread and the call id.

    ``attempt`` above 1 is for a provider that reuses a call id for another task: the
    record of the first says so, and the second takes ``...task-<id>.2``.

    Example:
        >>> child_thread_id("main", "call_7")
        'main/task-call_7'
    """
    base = f"{parent_thread_id}/task-{tool_call_id}"
    return base if attempt == 1 else f"{base}.{attempt}"


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskRecord:
    """A sub-task's record (see the module docstring).

    Attributes:
        thread_id: The sub-task's thread.
        parent_thread_id: The thread that handed it the task.
        tool_call_id: The parent's ``task`` call.
        subagent: The sub-agent's name.
        prompt: The task it was handed.
        result: How it ended, or ``None`` while it runs (or if the process died).
    """

    thread_id: str
    parent_thread_id: str
    tool_call_id: str
    subagent: str
    prompt: str
    result: TaskResult | None = None

    @property
    def status(self) -> str:
        """``running`` until it ended, then the result's status."""
        return "running" if self.result is None else self.result.status

    def to_json(self) -> dict[str, Any]:
        """The record file's content."""
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "thread_id": self.thread_id,
            "parent_thread_id": self.parent_thread_id,
            "tool_call_id": self.tool_call_id,
            "subagent": self.subagent,
            "prompt": self.prompt,
            "status": self.status,
            "result": None if self.result is None else self.result.to_json(),
        }

    @classmethod
    def from_json(cls, data: Any) -> TaskRecord:
        """Reads a record file's content.

        Raises:
            ValueError: It is not a task record.
        """
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise ValueError("not a sub-task record")
        try:
            raw = data["result"]
            return cls(
                thread_id=str(data["thread_id"]),
                parent_thread_id=str(data["parent_thread_id"]),
                tool_call_id=str(data["tool_call_id"]),
                subagent=str(data["subagent"]),
                prompt=str(data["prompt"]),
                result=None if raw is None else TaskResult.from_json(raw),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a sub-task record: {type(exc).__name__}: {exc}") from None


def joined_pairs(text: str) -> str:
    """``text`` with each two halves of a UTF-16 pair joined into the character they make.

    JSON readers join them when a record is read back, so a prompt is compared with its
    record in this form; a lone half stays as it is.

    >>> joined_pairs("\\ud83d\\ude00 \\ud800") == "\\U0001f600 \\ud800"
    True
    """
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def record_path(thread_id: str) -> str:
    """The record file of the sub-task running on ``thread_id``."""
    return f"{thread_transcript_dir(thread_id)}/{RECORD_NAME}"


def read_record(workspace: Workspace, thread_id: str) -> TaskRecord | None:
    """The record of the sub-task on ``thread_id``, or ``None`` if there is none.

    A record that cannot be parsed counts as none (it is rewritten when the sub-task runs).

    Raises:
        WorkspaceError: The storage could not be asked.
    """
    try:
        data = workspace.read_bytes(record_path(thread_id))
    except PathNotFoundError:
        return None
    try:
        return TaskRecord.from_json(loads_bounded(data))
    except ValueError:  # not JSON, nested too deep, or not a record
        return None


def write_record(workspace: Workspace, record: TaskRecord, *, create_only: bool = False) -> None:
    """Writes (or rewrites, atomically) the record of ``record.thread_id``.

    ``create_only``: only if there is none yet (the claim of the thread, see
    :class:`~ctxfs.subagents.SubAgents`).

    Raises:
        PathExistsError: ``create_only`` and a record is there.
        WorkspaceError: It could not be written.
    """
    data = json.dumps(record.to_json(), indent=1, ensure_ascii=False, sort_keys=True)
    # A lone surrogate (a model's reply, a prompt may hold one) is written as its escape: the
    # file stays valid UTF-8 JSON and reads back to the same text.
    data = _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", data)
    path = record_path(record.thread_id)
    workspace.write_bytes(path, data.encode("utf-8") + b"\n", create_only=create_only)


def claim_thread(workspace: Workspace, record: TaskRecord) -> bool | None:
    """Claims ``record.thread_id`` for the task of ``record`` against other processes on the
    workspace, by writing its record create-only.

    Returns:
        ``True``: claimed (the record is written); ``None``: another run of the same task
        (same parent, call id, sub-agent and prompt) wrote it first, or what is there cannot
        be read (it is rewritten when the task runs): the thread is this task's too;
        ``False``: it is another task's.

    Raises:
        WorkspaceError: The storage could not be asked.
    """
    try:
        write_record(workspace, record, create_only=True)
    except PathExistsError:
        there = read_record(workspace, record.thread_id)
        return None if there is None or same_task(there, record) else False
    return True


def same_task(a: TaskRecord, b: TaskRecord) -> bool:
    """Whether two records are of one task: parent, call id, sub-agent and prompt."""
    return (a.parent_thread_id, a.tool_call_id, a.subagent, a.prompt) == (
        b.parent_thread_id,
        b.tool_call_id,
        b.subagent,
        b.prompt,
    )


def task_records(workspace: Workspace) -> tuple[TaskRecord, ...]:
    """Every sub-task record in the workspace, sorted by parent thread, then thread.

    Raises:
        WorkspaceError: The storage could not be asked.
    """
    try:
        folders = [e.path for e in workspace.ls(TRANSCRIPTS_DIR) if e.is_dir]
    except PathNotFoundError:
        return ()
    found = []
    for folder in folders:
        try:
            data = workspace.read_bytes(f"{folder}/{RECORD_NAME}")
        except PathNotFoundError:
            continue
        try:
            found.append(TaskRecord.from_json(loads_bounded(data)))
        except ValueError:  # not JSON, nested too deep, or not a record
            continue
    return tuple(sorted(found, key=lambda r: (r.parent_thread_id, r.thread_id)))


def describe_relations(workspace: Workspace) -> dict[str, list[str]]:
    """Lines saying how threads relate, for ``ctxfs transcripts``, by thread id: the
    sub-agent a thread runs (and for whom), and the sub-agent threads a thread started.

    Raises:
        WorkspaceError: The storage could not be asked.
    """
    lines: dict[str, list[str]] = {}
    records = task_records(workspace)
    for record in records:
        lines.setdefault(record.thread_id, []).append(
            f"  sub-agent {record.subagent!r} for thread {record.parent_thread_id!r} "
            f"(task call {record.tool_call_id!r}): {record.status}"
        )
    for record in records:
        lines.setdefault(record.parent_thread_id, []).append(
            f"  -> sub-agent thread {record.thread_id!r} ({record.subagent}, {record.status})"
        )
    return lines
