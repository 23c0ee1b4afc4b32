"""Building blocks for long-term memory in a hand-written LangGraph ``StateGraph``.

Three nodes and a helper, placed around the usual compact / model / tools loop::

    class State(MessagesState):
        memory_prompt: str
        memory_recalled: str

    graph = StateGraph(State)
    graph.add_node("memory", memory_node(memory))                  # once per run, first
    graph.add_node("compact", memory_compaction_node(engine, system=SYSTEM, tools=tools))
    graph.add_node("model", call_model)       # sends system_with_memory(SYSTEM, state)
    graph.add_node("tools", ToolNode(tools))
    graph.add_node("remember", remember_node(memory))              # once per run, last
    graph.add_edge(START, "memory")
    graph.add_edge("memory", "compact")
    ...
    graph.add_edge("remember", END)

- :func:`memory_node` learns from due threads and writes the ``<memory>`` block (and, at the
  start of a session, the ``<recalled>`` block) to the state.
- :func:`system_with_memory` is the system message the model node sends: yours with the
  blocks from the state.
- :func:`memory_compaction_node` is :func:`ctxfs.integrations.langgraph.compaction_node`
  counting that same system message, so the memory is part of the request's budget.
- :func:`remember_node` queues the turn to be learned from.

Every node works in sync and async graphs (async: the same code in a worker thread).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import SystemMessage
from langchain_core.runnables import Runnable, RunnableLambda

from ctxfs._compaction._engine import ContextEngine
from ctxfs._compaction._request import Tool
from ctxfs.integrations._hooks import (
    ContextHooks,
    EventHandler,
    RequestShape,
    current_thread_id,
)
from ctxfs.memory._inject import with_memory
from ctxfs.memory._memory import LongTermMemory, session_query

__all__ = ["memory_compaction_node", "memory_node", "remember_node", "system_with_memory"]

_State = Mapping[str, Any]


def system_with_memory(system: SystemMessage | str | None, state: _State) -> SystemMessage | None:
    """``system`` with the state's ``<memory>`` and ``<recalled>`` blocks appended."""
    return with_memory(system, state.get("memory_prompt") or "", state.get("memory_recalled") or "")


def memory_node(
    memory: LongTermMemory, *, recall: bool = True, messages_key: str = "messages"
) -> Runnable[Any, dict[str, Any]]:
    """A node that learns from due threads and renders the memory into the state.

    It writes ``memory_prompt`` every time and, when the thread has no answer yet and the
    state has no ``memory_recalled``, recalls what is relevant to the user's request.
    """

    def run(state: _State) -> dict[str, Any]:
        # The user's new message is queued now: compaction may archive it before the turn
        # ends.
        memory.record(current_thread_id(), list(state.get(messages_key) or []))
        memory.process_due()
        document = memory.load()
        thread = current_thread_id()
        update: dict[str, Any] = {"memory_prompt": memory.prompt(document, thread_id=thread).text}
        if recall and not state.get("memory_recalled"):
            query = session_query(list(state.get(messages_key) or []))
            if query is not None:
                recalled = memory.recall_prompt(query, document=document, session=thread)
                update["memory_recalled"] = recalled.text
        return update

    async def arun(state: _State) -> dict[str, Any]:
        return await asyncio.to_thread(run, state)

    return RunnableLambda(run, afunc=arun, name="ctxfs_memory")


def remember_node(
    memory: LongTermMemory, *, messages_key: str = "messages"
) -> Runnable[Any, dict[str, Any]]:
    """A node that queues the turn's user messages and final answers, and learns from due
    threads. Place it after the model's final answer."""

    def run(state: _State) -> dict[str, Any]:
        memory.record(current_thread_id(), list(state.get(messages_key) or []))
        memory.process_due()
        return {}

    async def arun(state: _State) -> dict[str, Any]:
        return await asyncio.to_thread(run, state)  # the run's context goes with it

    return RunnableLambda(run, afunc=arun, name="ctxfs_remember")


def memory_compaction_node(
    engine: ContextEngine,
    *,
    system: SystemMessage | str | None = None,
    tools: Sequence[Tool] = (),
    model: BaseChatModel | None = None,
    messages_key: str = "messages",
    on_event: EventHandler | None = None,
) -> Runnable[Any, dict[str, Any]]:
    """A compaction node whose budget counts the system message with the memory blocks.

    Args:
        engine: The context engine.
        system: The system message the model node sends (before the memory is appended).
        tools: The tools the model node binds.
        model: The chat model, for its window when the policy has none.
        messages_key: The state key of the messages.
        on_event: Optional callback for every event, with the thread id.
    """
    hooks = ContextHooks(engine, on_event)

    def shape(state: _State) -> RequestShape:
        return RequestShape(
            system=system_with_memory(system, state), tools=tuple(tools), model=model
        )

    def keyed(update: Mapping[str, Any] | None) -> dict[str, Any]:
        return {} if update is None else {messages_key: update["messages"]}

    def run(state: _State) -> dict[str, Any]:
        return keyed(hooks.compact(state[messages_key], request=shape(state)))

    async def arun(state: _State) -> dict[str, Any]:
        return keyed(await hooks.acompact(state[messages_key], request=shape(state)))

    return RunnableLambda(run, afunc=arun, name="ctxfs_compact")
