"""Summarization through the middleware: persisted to state, prefix-stable between triggers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from ctxfs import ContextEvent, ContextPolicy, Summarized, Workspace, is_summary
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.testing import ScriptedChatModel, tool_call

CONFIG = {"configurable": {"thread_id": "c1"}}
TURNS = 14


@tool
def fetch_page(n: int) -> str:
    """Returns page n of the manual (about 700 tokens)."""
    return "\n".join(
        f"page {n} line {i}: settle batches before the ledger closes" for i in range(60)
    )


def _run(run: str) -> tuple[dict[str, Any], ScriptedChatModel, list[ContextEvent], Workspace]:
    ws = Workspace(f"memory://compaction-{run}")
    policy = ContextPolicy(
        max_input_tokens=8_000,
        clearing={"enabled": False},  # so that the window is kept by summaries
        summarization={"trigger": {"fraction": 0.8}, "keep": {"fraction": 0.3}},
    )
    events: list[ContextEvent] = []
    model = ScriptedChatModel(
        responses=[*(tool_call("fetch_page", {"n": n}) for n in range(TURNS)), "read them all"]
    )
    agent = create_agent(
        model,
        [fetch_page],
        middleware=[ContextMiddleware(ws, policy, on_event=lambda e, _: events.append(e))],
        checkpointer=InMemorySaver(),
    )
    inputs: Any = {"messages": [("user", "read the manual")]}
    if run == "sync":
        out = agent.invoke(inputs, CONFIG)
    else:
        out = asyncio.run(agent.ainvoke(inputs, CONFIG))
    return out, model, events, ws


def _key(message: BaseMessage) -> tuple[str, str]:
    # What a provider is sent (and caches): the role and the text. Not the id: the summary is
    # persisted under the id of the first message it replaced (so that the reducer puts it in
    # that place), while the request it was made for carried its own id.
    return (message.type, message.text)


@pytest.mark.parametrize("run", ["sync", "async"])
def test_summaries_are_persisted_and_the_prefix_is_stable_between_them(run: str) -> None:
    out, model, events, ws = _run(run)
    summaries = [e for e in events if isinstance(e, Summarized)]
    assert summaries, "the window was crossed but nothing was summarized"
    assert out["messages"][-1].text == "read them all"
    # The state itself was compacted (not just the request): it starts with the summary.
    assert is_summary(out["messages"][0])
    assert len(out["messages"]) < 2 * TURNS + 2
    for event in summaries:
        assert all(ws.exists(path) for path in event.segment_paths)
    # Between two compactions the model is sent the previous request plus new messages only.
    changed = 0
    for before, after in zip(model.requests, model.requests[1:], strict=False):
        prefix = [_key(m) for m in after[: len(before)]]
        if prefix != [_key(m) for m in before]:
            changed += 1
    assert changed == len(summaries)
