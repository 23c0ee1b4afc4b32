"""Sub-agents: isolated context windows, one shared workspace, artifacts handed back.

A parent agent hands a task to a named sub-agent with the ``task`` tool. The sub-agent runs on
a fresh thread with its own context engine and policy, sees only the task, and returns its
final answer, the files it wrote and where its transcript is; the parent's context grows by
the call and the answer only, and anything the sub-agent saw stays readable in the workspace.

- :class:`SubAgents`: the registry (``general-purpose`` and your own :class:`SubAgent` s) and
  the runner (:meth:`SubAgents.run` / :meth:`SubAgents.arun` in plain Python).
- :func:`task_tool`: the ``task`` tool, for a hand-written LangGraph graph's ``ToolNode``.
- :class:`SubAgentMiddleware`: the same for ``create_agent`` (needs the ``langchain`` extra;
  imported on first use).
- :class:`TaskResult`, :class:`TaskProgress`, :func:`merge_artifacts` (the ``artifacts``
  reducer), :func:`task_records` (how threads relate).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxfs._errors import TaskLimitError, TaskRecordError, UnknownSubAgentError
from ctxfs.subagents._record import TaskRecord, child_thread_id, task_records
from ctxfs.subagents._result import TaskProgress, TaskResult, TaskStatus, merge_artifacts
from ctxfs.subagents._runner import DEFAULT_MAX_PARALLEL, DEFAULT_MAX_TASKS, SubAgents
from ctxfs.subagents._spec import DEFAULT_MAX_TURNS, GENERAL_PURPOSE, SubAgent
from ctxfs.subagents._tool import TaskArgs, task_tool

if TYPE_CHECKING:
    from ctxfs.subagents._middleware import SubAgentMiddleware, SubAgentState

__all__ = [
    "DEFAULT_MAX_PARALLEL",
    "DEFAULT_MAX_TASKS",
    "DEFAULT_MAX_TURNS",
    "GENERAL_PURPOSE",
    "SubAgent",
    "SubAgentMiddleware",
    "SubAgentState",
    "SubAgents",
    "TaskArgs",
    "TaskLimitError",
    "TaskProgress",
    "TaskRecord",
    "TaskRecordError",
    "TaskResult",
    "TaskStatus",
    "UnknownSubAgentError",
    "child_thread_id",
    "merge_artifacts",
    "task_records",
    "task_tool",
]


def __getattr__(name: str) -> object:
    # The middleware needs LangChain (an extra): imported only when asked for.
    if name in ("SubAgentMiddleware", "SubAgentState"):
        from ctxfs.subagents import _middleware

        return getattr(_middleware, name)
    raise AttributeError(f"module 'ctxfs.subagents' has no attribute {name!r}")
