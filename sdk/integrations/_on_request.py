"""What the model can ask for itself: a compaction now, and a search of what was archived.

- ``compact_conversation`` runs one compaction at the model's request
  (:meth:`~ctxfs.ContextEngine.compact_now`: archive first, as always), applied to the graph
  state by the tool's answer, a ``Command`` whose ``messages`` update turns the state into
  the compacted history followed by the tool's result. It refuses, as an ``Error:`` result,
  when there is nothing worth compacting.
- ``history_search`` and ``history_read`` (:mod:`ctxfs.tools._history`) over the current
  thread's archive and offloaded files.
- What to do when one of these tools, or a workspace tool, has the name of another tool of
  the agent (:func:`tool_conflict_message`).

The compaction tool is recognised by a mark ctxfs sets on it, never by its name: a tool of
the agent that happens to be called ``compact_conversation`` is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final, cast

from langchain_core.messages import AnyMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ctxfs._compaction._engine import ContextEngine
from ctxfs._compaction._escalation import NothingToCompact
from ctxfs._events import CompactionResult, Summarized
from ctxfs._summary._message import SummaryState, summary_state
from ctxfs.integrations._hooks import (
    ContextHooks,
    current_thread_id,
    plan_of,
    state_update,
)
from ctxfs.tools._budget import OutputBudget
from ctxfs.tools._history import history_functions
from ctxfs.tools._langchain import as_langchain_tool

__all__ = [
    "COMPACT_TOOL_NAME",
    "acompact_on_request",
    "compact_on_request",
    "compact_tool",
    "history_branch",
    "history_tools",
    "is_compact_tool",
    "tool_conflict_message",
]

COMPACT_TOOL_NAME: Final = "compact_conversation"
_MARK: Final = "ctxfs.compact_conversation"

_DESCRIPTION: Final = (
    "Archive the older part of this conversation now and replace it by a summary, keeping "
    "the most recent messages, your task and the user's words in view. Nothing is lost: "
    "history_search and history_read find every archived message. Use it when a phase of "
    "work is done and its details no longer need to be in view."
)


def history_tools(engine: ContextEngine, max_tokens: int | Callable[[], int]) -> list[BaseTool]:
    """``history_search`` and ``history_read`` over the current run's thread, and within it
    the branch the graph state is on (set by :func:`history_branch` around a tool call)."""
    budget = OutputBudget(max_tokens, engine.token_counter)
    functions = history_functions(
        engine.workspace, budget, thread_id=current_thread_id, branch=_current_leaf
    )
    return [as_langchain_tool(function) for function in functions]


_STATE: ContextVar[object] = ContextVar("ctxfs_tool_call_state", default=None)
_SEGMENT = re.compile(r"segment-(\d+)\.md$")


@contextmanager
def history_branch(state: object) -> Iterator[None]:
    """While a tool call runs, ``state`` is the graph state the history tools' branch is
    read from (only when one of them runs: see :func:`_current_leaf`)."""
    token = _STATE.set(state)
    try:
        yield
    finally:
        _STATE.reset(token)


def _current_leaf() -> int | None:
    """The last archived segment of the history in the running tool call's state (the one
    its ctxfs summary names; ``0`` with no summary; ``None`` outside a tool call)."""
    return _leaf_of(_STATE.get())


def _summary_in(messages: list[object]) -> SummaryState | None:
    for message in messages:
        if isinstance(message, BaseMessage):
            found = summary_state(message)
            if found is not None:
                return found
    return None


def _leaf_of(state: object) -> int | None:
    messages = state.get("messages") if isinstance(state, Mapping) else None
    if not isinstance(messages, list):
        return None  # not an agent's state: every branch is searched
    found = _summary_in(messages)  # in order: it follows the system prompt, so it comes early
    if found is None:
        return 0
    if not found.transcripts:
        return None
    match = _SEGMENT.search(found.transcripts[-1])
    return int(match.group(1)) if match else None


def compact_tool() -> BaseTool:
    """The ``compact_conversation`` tool; the middleware runs it (see the module docstring)."""

    def refuse() -> str:  # only reached when something other than the middleware runs it
        return "Error: compact_conversation runs only inside ctxfs's ContextMiddleware"

    return StructuredTool.from_function(
        func=refuse,
        name=COMPACT_TOOL_NAME,
        description=_DESCRIPTION,
        args_schema={"type": "object", "properties": {}, "additionalProperties": False},
        metadata={_MARK: True},
    )


def is_compact_tool(tool: object) -> bool:
    """Whether ``tool`` is ctxfs's own ``compact_conversation`` (by its mark, not its name)."""
    metadata = getattr(tool, "metadata", None)
    return isinstance(metadata, dict) and metadata.get(_MARK) is True


def compact_on_request(
    hooks: ContextHooks, request: ToolCallRequest, thread: str
) -> ToolMessage | Command[Any]:
    """Runs ``compact_conversation``: the compacted state and the tool's answer."""
    messages, call = _split(request)
    try:
        result = hooks.engine.compact_now(messages, thread_id=thread, plan=plan_of(request.state))
    except NothingToCompact as exc:
        return _answer(request, f"Error: {exc}")
    return _applied(hooks, request, messages, result, thread, call)


async def acompact_on_request(
    hooks: ContextHooks, request: ToolCallRequest, thread: str
) -> ToolMessage | Command[Any]:
    """The async twin of :func:`compact_on_request`."""
    messages, call = _split(request)
    try:
        result = await hooks.engine.acompact_now(
            messages, thread_id=thread, plan=plan_of(request.state)
        )
    except NothingToCompact as exc:
        return _answer(request, f"Error: {exc}")
    return _applied(hooks, request, messages, result, thread, call)


def _split(request: ToolCallRequest) -> tuple[list[BaseMessage], list[BaseMessage]]:
    """The state's messages before the AI message that made this call, and from it on.

    The calling message and what follows it are kept out of the compaction, so its call is
    answered by the result this tool returns (never archived without its answer).
    """
    state = request.state
    found = state.get("messages") if isinstance(state, dict) else getattr(state, "messages", None)
    messages = list(found or [])
    call_id = request.tool_call.get("id")
    for at in range(len(messages) - 1, -1, -1):
        calls = getattr(messages[at], "tool_calls", None) or []
        if any(c.get("id") == call_id for c in calls):
            return messages[:at], messages[at:]
    return messages, []


def _answer(request: ToolCallRequest, text: str) -> ToolMessage:
    return ToolMessage(
        content=text, tool_call_id=request.tool_call["id"] or "", name=COMPACT_TOOL_NAME
    )


def _applied(
    hooks: ContextHooks,
    request: ToolCallRequest,
    before: list[BaseMessage],
    result: CompactionResult,
    thread: str,
    call: list[BaseMessage],
) -> Command[Any]:
    for event in result.events:
        hooks.report(event, thread)
    summary = next(e for e in result.events if isinstance(e, Summarized))
    text = (
        f"Compacted: {summary.messages_archived} earlier messages were archived "
        f"({summary.segment_paths[0]}) and replaced by a summary; the context went from "
        f"{result.tokens_before:,} to {result.tokens_after:,} tokens. history_search and "
        "history_read find anything in them."
    )
    answer = _answer(request, text)
    update = state_update(before, result.messages)
    changes: list[AnyMessage] = list(update["messages"]) if update else []
    if changes and getattr(changes[0], "id", None) == REMOVE_ALL_MESSAGES:
        changes += cast(list[AnyMessage], call)  # rebuilt: what followed comes back
    return Command(update={"messages": [*changes, answer]})


def tool_conflict_message(names: Sequence[str]) -> str:
    """Why ctxfs's tools ``names`` cannot be offered, and how to choose."""
    listed = ", ".join(names)
    return (
        f"ContextMiddleware's tools {listed} have the names of other tools of this agent (with "
        "Deep Agents: its own filesystem tools), and only one of each can be offered. Choose "
        "with ContextMiddleware(..., on_tool_conflict='keep') to keep the others, or "
        "on_tool_conflict='replace' to use ctxfs's; or pass tools=False. With Deep Agents, "
        "keep its tools and give it the workspace: create_deep_agent(..., "
        "backend=ctxfs.integrations.deepagents.WorkspaceBackend(workspace))"
    )
