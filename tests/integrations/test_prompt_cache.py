"""Provider cache controls through create_agent (``ContextMiddleware(prompt_cache=...)``):
the requests carry them, the state never does, and nothing else of a request changes."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from ctxfs import ContextPolicy, Workspace, is_summary
from ctxfs._messages import message_text
from ctxfs.integrations._cache import EPHEMERAL, compaction_end
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.testing import ScriptedChatModel, tool_call


@tool
def fetch_page(n: int) -> str:
    """Returns page n of the manual (about 700 tokens)."""
    return "\n".join(
        f"page {n} line {i}: settle batches before the ledger closes" for i in range(60)
    )


POLICY = ContextPolicy(max_input_tokens=8_000, summarization={"keep": {"fraction": 0.2}})


def _run(name: str, prompt_cache: Any) -> tuple[ScriptedChatModel, list[BaseMessage]]:
    pages = [tool_call("fetch_page", {"n": n}) for n in range(16)]
    model = ScriptedChatModel(responses=[*pages, "done"])
    middleware = ContextMiddleware(Workspace(f"memory://{name}"), POLICY, prompt_cache=prompt_cache)
    agent = create_agent(model, [fetch_page], middleware=[middleware], checkpointer=InMemorySaver())
    out = agent.invoke(
        {"messages": [("user", "Read the manual.")]}, {"configurable": {"thread_id": "c1"}}
    )
    assert out["messages"][-1].text == "done"
    return model, out["messages"]


def _breakpoints(message: BaseMessage) -> list[int]:
    content = message.content
    if isinstance(content, str):
        return []
    return [i for i, b in enumerate(content) if isinstance(b, dict) and "cache_control" in b]


def _plain(request: list[BaseMessage]) -> list[tuple[str, str]]:
    return [(m.type, message_text(m)) for m in request]  # ids: uuids, one set per run


def test_anthropic_breakpoints_mark_the_end_and_the_last_compaction_only_in_requests() -> None:
    plain, _ = _run("cache-none", None)
    cached, state = _run("cache-anthropic", "anthropic")
    assert len(plain.requests) == len(cached.requests)
    # the same messages in every request: the breakpoints change nothing else
    assert [_plain(r) for r in plain.requests] == [_plain(r) for r in cached.requests]
    compacted = 0
    for request, unmarked in zip(cached.requests, plain.requests, strict=True):
        marked = [i for i, m in enumerate(request) if _breakpoints(m)]
        assert 1 <= len(marked) <= 2  # Anthropic allows four in a request
        assert marked[-1] == len(request) - 1  # the whole request, for the next call
        for i in marked:
            (block,) = [request[i].content[j] for j in _breakpoints(request[i])]
            assert block["cache_control"] == EPHEMERAL
            assert block is request[i].content[-1]
        end = compaction_end(unmarked)  # a marked copy no longer reads as ctxfs's
        if end is not None:
            compacted += 1
            assert end in marked
    assert compacted  # the run did compact, so the second breakpoint was exercised
    assert any(is_summary(m) for r in plain.requests for m in r)
    # the graph state keeps the messages as they are
    assert not any(_breakpoints(m) for m in state)


def test_openai_requests_carry_the_thread_as_prompt_cache_key() -> None:
    plain, _ = _run("cache-none-openai", None)
    cached, _ = _run("cache-openai", "openai")
    assert cached.request_settings
    assert all(s.get("prompt_cache_key") == "c1" for s in cached.request_settings)
    assert not any("prompt_cache_key" in s for s in plain.request_settings)
    assert [_plain(r) for r in plain.requests] == [_plain(r) for r in cached.requests]


def test_an_unknown_provider_is_refused() -> None:
    with pytest.raises(ValueError, match="prompt_cache must be"):
        ContextMiddleware(Workspace("memory://cache-bad"), POLICY, prompt_cache="gemini")  # type: ignore[arg-type]
