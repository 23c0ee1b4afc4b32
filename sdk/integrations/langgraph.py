"""Building blocks for a hand-written langgraph ``StateGraph`` whose state has ``messages``.

Two pieces, placed around the usual model / tools loop::

    graph = StateGraph(MessagesState)
    graph.add_node("compact", compaction_node(engine))           # before the model
    graph.add_node("model", call_model)
    graph.add_node("tools", offload_tool_node(ToolNode(tools), engine))
    graph.add_edge(START, "compact")
    graph.add_edge("compact", "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "compact")

A ``ToolNode`` can also offload through its own hook:
``ToolNode(tools, wrap_tool_call=offloader.wrap_tool_call,
awrap_tool_call=offloader.awrap_tool_call)`` with ``offloader = ToolResultOffloader(engine)``.

The compaction node writes its result to the state like
:class:`~ctxfs.integrations.langchain.ContextMiddleware` (see :func:`state_update`): replaced
messages by id, archived ones removed by id, the summary in the place of the first of them.
It only removes what it archived, so a message a parallel branch adds in the same step is
kept. A parallel branch must not remove messages in that step, though: langgraph applies both
updates, and removing a message the compaction also archived (or the one whose id the summary
takes over) fails the step or drops the summary from the state (the archive keeps every
message either way). Run a node that removes messages before or after compaction, not beside
it. The checkpoint shrinks, and earlier messages change only when a trigger fires.

Every block works in sync and async graphs; run asynchronously, the engine's blocking work
(workspace I/O, tokenizing) goes to a worker thread, and calls into one engine never overlap.
A run without a ``thread_id`` keeps its files under ``run-<run_id>`` if its config has a
``run_id``, else under ``default`` (see :func:`thread_id_from_config`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ctxfs._compaction._engine import ContextEngine
from ctxfs._compaction._request import Tool
from ctxfs.integrations._hooks import (
    DEFAULT_THREAD_ID,
    ContextHooks,
    ContextMeasured,
    EventHandler,
    RequestShape,
    current_thread_id,
    plan_of,
    state_update,
    thread_id_from_config,
)

__all__ = [
    "DEFAULT_THREAD_ID",
    "ContextMeasured",
    "EventHandler",
    "ToolResultOffloader",
    "compaction_node",
    "current_thread_id",
    "offload_tool_node",
    "state_update",
    "thread_id_from_config",
]

_ToolOutput = ToolMessage | Command[Any]
_State = Mapping[str, Any]
_Update = dict[str, Any]


class ToolResultOffloader:
    """``wrap_tool_call`` / ``awrap_tool_call`` hooks for a langgraph ``ToolNode``.

    Example:
        >>> from langgraph.prebuilt import ToolNode
        >>> from ctxfs import Workspace
        >>> from ctxfs._compaction._engine import ContextEngine
        >>> from ctxfs._policy._settings import ContextPolicy
        >>> from ctxfs.tools import workspace_tools
        >>> ws = Workspace("memory://graph")
        >>> engine = ContextEngine(ws, ContextPolicy(max_input_tokens=8_000))
        >>> offloader = ToolResultOffloader(engine)
        >>> node = ToolNode(workspace_tools(ws), wrap_tool_call=offloader.wrap_tool_call,
        ...                 awrap_tool_call=offloader.awrap_tool_call)

    Args:
        engine: The context engine.
        on_event: Optional callback for every event, with the thread id.
    """

    def __init__(self, engine: ContextEngine, *, on_event: EventHandler | None = None) -> None:
        self._hooks = ContextHooks(engine, on_event)

    # The same hooks as ContextMiddleware's: both delegate to the core.

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], _ToolOutput]
    ) -> _ToolOutput:
        """Runs the tool, then offloads its result if it is too large."""
        return self._hooks.wrap_tool_call(request, handler)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[_ToolOutput]],
    ) -> _ToolOutput:
        """The async twin of :meth:`wrap_tool_call` (the offload runs in a worker thread)."""
        return await self._hooks.awrap_tool_call(request, handler)


def offload_tool_node(
    node: Runnable[Any, Any] | Callable[..., Any],
    engine: ContextEngine,
    *,
    on_event: EventHandler | None = None,
) -> Runnable[Any, Any]:
    """Wraps any tool node so that large results are offloaded before they reach the state.

    The node's output (a ``ToolNode``'s ``{"messages": [...]}``, a list of ``Command`` and
    updates, a single ``Command`` or message) comes back with every large ``ToolMessage``
    replaced by a pointer; ``Command`` objects keep their ``goto``/``graph``/``resume``.
    Results of ctxfs's own recovery tools (:func:`~ctxfs.tools.workspace_tools`) in a
    ``ToolNode`` are not offloaded: they page instead; another node's are, whatever their
    tools are called.

    Args:
        node: A ``ToolNode``, another runnable, or a function (sync or async) of the state.
        engine: The context engine.
        on_event: Optional callback for every event, with the thread id.

    Returns:
        A runnable to pass to ``StateGraph.add_node``; sync and async.
    """
    inner: Runnable[Any, Any] = node if isinstance(node, Runnable) else RunnableLambda(node)
    hooks = ContextHooks(engine, on_event)
    # A ToolNode names its tools: ctxfs's recovery tools among them are told by identity.
    found = getattr(node, "tools_by_name", None)
    tools: dict[str, object] = dict(found) if isinstance(found, Mapping) else {}

    def run(state: Any, config: RunnableConfig) -> Any:
        return hooks.offload(inner.invoke(state, config), tools=tools)

    async def arun(state: Any, config: RunnableConfig) -> Any:
        return await hooks.aoffload(await inner.ainvoke(state, config), tools=tools)

    return RunnableLambda(run, afunc=arun, name=inner.get_name())


def compaction_node(
    engine: ContextEngine,
    *,
    messages_key: str = "messages",
    on_event: EventHandler | None = None,
    system: BaseMessage | str | None = None,
    tools: Sequence[Tool] = (),
    model: BaseChatModel | None = None,
) -> Runnable[Any, _Update]:  # Any: add_node accepts it whatever the state schema
    """A graph node that compacts the history before the model node.

    The budget is the request the model node sends: give the system message it prepends
    (when it is not in the state) and the tools it binds, so that they are counted too; give
    the model when the policy has no ``max_input_tokens`` and the model's profile has it.

    The node returns an empty update when nothing changed, so the state and the checkpoint
    stay untouched; otherwise the change (see :func:`state_update`), under ``messages_key``.

    Args:
        engine: The context engine.
        messages_key: The state key of the message list (reduced with ``add_messages``).
        on_event: Optional callback for every event, with the thread id.
        system: The system message the model node sends apart from the state's messages.
        tools: The tools the model node binds.
        model: The chat model, for its window when the policy has none.

    Returns:
        A runnable to pass to ``StateGraph.add_node``; sync and async.
    """
    hooks = ContextHooks(engine, on_event)
    shape = RequestShape(system=system, tools=tuple(tools), model=model)

    def run(state: _State) -> _Update:
        request = dataclasses.replace(shape, plan=plan_of(state))
        return _keyed(hooks.compact(state[messages_key], request=request), messages_key)

    async def arun(state: _State) -> _Update:
        request = dataclasses.replace(shape, plan=plan_of(state))
        return _keyed(await hooks.acompact(state[messages_key], request=request), messages_key)

    return RunnableLambda(run, afunc=arun, name="ctxfs_compact")


def _keyed(update: Mapping[str, Any] | None, key: str) -> _Update:
    return {} if update is None else {key: update["messages"]}
