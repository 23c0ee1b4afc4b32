"""stream_mode="updates" gives one update per node, compacting turns included (issue 24.13).

LangGraph users read ``chunk["model"]["messages"]``; on a turn where ctxfs compacted, the
model node's update used to be a list of two updates (the answer, then ctxfs's command).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, RemoveMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.message import REMOVE_ALL_MESSAGES

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


def _answer(messages: list[Any]) -> Any:
    """The model's answer in its node's update: first, before the compaction's edits; or
    last, after the state rebuilt whole (a summary that puts back more messages than it
    replaced, as a trigger of a few messages does, has no ids to put them at)."""
    first = messages[0]
    if isinstance(first, RemoveMessage) and first.id == REMOVE_ALL_MESSAGES:
        return messages[-1]
    return first


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    calls=st.integers(3, 8),
    trigger=st.integers(4, 8),
    keep=st.integers(1, 3),
    parallel=st.booleans(),
)
def test_one_update_per_node_over_generated_runs(
    calls: int, trigger: int, keep: int, parallel: bool
) -> None:
    # runs of any length, summaries at any trigger, parallel tool calls or one at a time:
    # every chunk is one update of one node, the model's answer first in its own
    policy = ContextPolicy(
        max_input_tokens=16_000,
        summarization={"trigger": {"messages": trigger}, "keep": {"messages": keep}},
    )
    steps: list[Any] = []
    for n in range(calls):
        if parallel and n % 2 == 0:
            steps.append(
                AIMessage(
                    "",
                    tool_calls=[
                        {"name": "lookup", "args": {"n": n}, "id": f"p{n}a"},
                        {"name": "lookup", "args": {"n": n + 100}, "id": f"p{n}b"},
                    ],
                )
            )
        else:
            steps.append(tool_call("lookup", {"n": n}))
    events: list[object] = []
    middleware = ContextMiddleware(
        Workspace("memory://updates-generated"), policy, on_event=lambda e, _: events.append(e)
    )
    model = ScriptedChatModel(responses=[*steps, "All rows are ok."])
    agent = create_agent(model, [lookup], middleware=[middleware], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": f"g{calls}-{trigger}-{keep}-{parallel}"}}
    chunks = list(agent.stream({"messages": [("user", "check")]}, config, stream_mode="updates"))
    for chunk in chunks:
        assert len(chunk) == 1
        ((node, update),) = chunk.items()
        assert isinstance(update, dict), (node, update)
        if node == "model":
            assert isinstance(_answer(update["messages"]), AIMessage)
    assert _answer(chunks[-1]["model"]["messages"]).text == "All rows are ok."
    if any(isinstance(e, Summarized) for e in events):
        assert any(
            isinstance(m, RemoveMessage)
            for c in chunks
            for m in c.get("model", {}).get("messages", [])
        )
