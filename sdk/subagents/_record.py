"""Where a sub-task is filed: its thread id, and the record tying it to its parent.

A sub-task runs on the thread ``<parent thread>/task-<tool call id>``, so parallel calls never
share one and a re-run after a crash finds the same one. Next to its transcripts, in
``/transcripts/<thread>/task.json``, a record names the parent thread, the call, the
sub-agent, the prompt and, once it ended, the :class:`~ctxfs.subagents.TaskResult`. The
record is written when the sub-task starts (``running``) and rewritten when it ends (once its
transcript is written); a re-run of the same call with the same prompt returns the recorded
result instead of working again, and one whose record is still ``running`` (the process died,
or the transcript could not be written) starts over.

Every write of a record goes through :meth:`~ctxfs.Workspace.update`: a write a store tore
mid-way (one without atomic writes) is undone, so the file holds the record before or the
record after, never a part of one. A record that cannot be read all the same (torn while the
storage failed, edited by hand, written by a newer ctxfs) raises
:class:`~ctxfs.TaskRecordError` naming the file: the task is not run again over it, since it
may have ended and its result would be lost, or its work done twice.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from ctxfs._archive._transcripts import thread_transcript_dir
from ctxfs._errors import PathNotFoundError, TaskRecordError
from ctxfs._json import NewerFormatError, check_format_version, loads_bounded
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
    "parse_record",
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
_log = logging.getLogger("ctxfs.subagents")


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
            ValueError: It is not a task record, or of a newer format version
                (:class:`~ctxfs._json.NewerFormatError`).
        """
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise ValueError("not a sub-task record")
        check_format_version(data.get("version"), _VERSION, "the sub-task record")
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

    Raises:
        TaskRecordError: There is one, and it cannot be read (see the module docstring).
        WorkspaceError: The storage could not be asked.
    """
    path = record_path(thread_id)
    try:
        data = workspace.read_bytes(path)
    except PathNotFoundError:
        return None
    return parse_record(data, path)


def parse_record(data: bytes, path: str) -> TaskRecord:
    """The record in ``data``, the bytes of the file at ``path``.

    Raises:
        TaskRecordError: It is not one (torn, not JSON, a key named twice, nested too deep,
            a field missing or wrong, a newer format), naming the file and why.
    """
    try:
        value = loads_bounded(data)
    except UnicodeDecodeError as exc:
        why = f"not UTF-8 text: {exc.reason}"
    except json.JSONDecodeError as exc:
        why = f"not valid JSON: {exc}"
    else:
        try:
            return TaskRecord.from_json(value)
        except NewerFormatError as exc:  # nothing to delete: a newer ctxfs reads it
            raise TaskRecordError(f"{path}: {exc}", path=path) from None
        except ValueError as exc:
            why = str(exc)
    raise TaskRecordError(
        f"{path}: the sub-task record cannot be read ({why}); the task is not run again over "
        "it: read it, then delete it to run the task again",
        path=path,
    )


def _record_bytes(record: TaskRecord) -> bytes:
    data = json.dumps(record.to_json(), indent=1, ensure_ascii=False, sort_keys=True)
    # A lone surrogate (a model's reply, a prompt may hold one) is written as its escape: the
    # file stays valid UTF-8 JSON and reads back to the same text.
    data = _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", data)
    return data.encode("utf-8") + b"\n"


def write_record(workspace: Workspace, record: TaskRecord) -> None:
    """Writes (or rewrites) the record of ``record.thread_id``, whole or not at all.

    Raises:
        TaskRecordError: The record there cannot be read (it is kept).
        WorkspaceError: It could not be written (a write torn mid-way is undone).
    """
    path = record_path(record.thread_id)
    data = _record_bytes(record)

    def change(current: bytes | None) -> bytes:
        if current is not None and current != data:
            parse_record(current, path)  # never written over: it may hold a result
        return data

    workspace.update(path, change)


def claim_thread(workspace: Workspace, record: TaskRecord) -> bool | None:
    """Claims ``record.thread_id`` for the task of ``record`` against other processes on the
    workspace, by writing its record if there is none yet.

    Returns:
        ``True``: claimed (the record is written); ``None``: another run of the same task
        (same parent, call id, sub-agent and prompt) wrote it first: the thread is this
        task's too; ``False``: it is another task's.

    Raises:
        TaskRecordError: The record there cannot be read (it is kept).
        WorkspaceError: The storage could not be asked.
    """
    path = record_path(record.thread_id)
    data = _record_bytes(record)
    found: list[bytes | None] = [None]

    def change(current: bytes | None) -> bytes:
        found[0] = current
        return data if current is None else current

    workspace.update(path, change)
    there = found[0]
    if there is None:
        return True
    return None if same_task(parse_record(there, path), record) else False


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

    A record that cannot be read is left out, with a warning on the ``ctxfs.subagents``
    logger naming it and why.

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
            found.append(parse_record(data, f"{folder}/{RECORD_NAME}"))
        except TaskRecordError as exc:  # listed without it, and said so
            _log.warning("ctxfs: %s", exc)
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
