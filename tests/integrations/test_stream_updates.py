"""stream_mode="updates" gives one update per node, compacting turns included (issue 24.13).

LangGraph users read ``chunk["model"]["messages"]``; on a turn where ctxfs compacted, the
model node's update used to be a list of two updates (the answer, then ctxfs's command).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, RemoveMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from ctxfs import ContextPolicy, Summarized, Workspace
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.testing import ScriptedChatModel, tool_call

POLICY = ContextPolicy(
    max_input_tokens=16_000, summarization={"trigger": {"messages": 6}, "keep": {"messages": 2}}
)


@tool
def lookup(n: int) -> str:
    """Looks a row up."""
    return f"row {n}: " + "ok " * 200


def _agent(name: str) -> tuple[Any, list[object]]:
    events: list[object] = []
    model = ScriptedChatModel(
        responses=[*(tool_call("lookup", {"n": n}) for n in range(5)), "All rows are ok."]
    )
    middleware = ContextMiddleware(
        Workspace(f"memory://updates-{name}"), POLICY, on_event=lambda e, _: events.append(e)
    )
    agent = create_agent(model, [lookup], middleware=[middleware], checkpointer=InMemorySaver())
    return agent, events


def _check(chunks: list[dict[str, Any]], events: list[object]) -> None:
    assert any(isinstance(e, Summarized) for e in events)  # the run did compact
    compacting = 0
    for chunk in chunks:
        assert len(chunk) == 1
        ((node, update),) = chunk.items()
        assert isinstance(update, dict), (node, update)  # one update, never a list
        messages = update["messages"]
        if node == "model":
            # the answer comes first, as a node's own answer does
            assert isinstance(messages[0], AIMessage)
            if any(isinstance(m, RemoveMessage) for m in messages):
                compacting += 1
    assert compacting >= 1
    last = chunks[-1]["model"]["messages"][0]
    assert last.text == "All rows are ok."


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_every_node_gives_one_update_on_compacting_turns(mode: str) -> None:
    agent, events = _agent(mode)
    config = {"configurable": {"thread_id": mode}}
    request = {"messages": [("user", "check the rows")]}
    if mode == "sync":
        chunks = list(agent.stream(request, config, stream_mode="updates"))
    else:

        async def collect() -> list[dict[str, Any]]:
            return [c async for c in agent.astream(request, config, stream_mode="updates")]

        chunks = asyncio.run(collect())
    _check(chunks, events)
    # the state the updates built is the compacted one: a summary, the answer last
    state = agent.get_state(config).values["messages"]
    assert state[-1].text == "All rows are ok."
    assert len(state) < 13  # 1 question + 5 calls and results + answer, had nothing gone
