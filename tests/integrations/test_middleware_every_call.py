"""Every storage call of an agent run through ``ContextMiddleware``, failed in turn.

A ``create_agent`` agent (a scripted model, a checkpointer) whose run offloads tool results
and tool inputs, clears old results and summarizes. Each store call of the run in turn fails:
with an ``OSError`` (the middleware keeps the graph going) or with an exception that is not
an error (the process dying there; the run is resumed from its checkpoint), taking turns.
Afterwards every tool result and tool input of the run is readable byte-exact from the store,
the index names only files it holds the SHA-256 of, and the next turn on the thread runs to
its answer.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from ctxfs import ContextPolicy, TranscriptArchive, Workspace, restore_messages
from ctxfs._archive._codec import sha
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.testing import ScriptedChatModel, tool_call
from tests._every_call import FailingAt, Killed

TURNS = 8
CONFIG: Any = {"configurable": {"thread_id": "c1"}}


def page(n: int) -> str:
    return "\n".join(f"page {n} line {i}: settle batches needle{n}y{i}" for i in range(60))


def note(n: int) -> str:
    return "\n".join(f"note {n} line {i}: remember fact{n}z{i}" for i in range(40))


@tool
def fetch_page(n: int) -> str:
    """Returns page n."""
    return page(n)


@tool
def save_note(n: int, content: str) -> str:
    """Saves a note."""
    return "saved"


def script() -> list[Any]:
    steps = [
        tool_call("fetch_page", {"n": n})
        if n % 2 == 0
        else tool_call("save_note", {"n": n, "content": note(n)})
        for n in range(TURNS)
    ]
    return [*steps, "read them all"]


def policy() -> ContextPolicy:
    summaries = ScriptedChatModel(script_id="sum", responses=[f"Summary {i}." for i in range(20)])
    return ContextPolicy(
        max_input_tokens=3_800,
        tool_results={"threshold": {"tokens": 400}},
        tool_inputs={"min_chars": 300, "keep_messages": 4},
        summarization={
            "trigger": {"fraction": 0.8},
            "keep": {"fraction": 0.25},
            "model": summaries,
        },
    )


def agent(store: FailingAt, saver: InMemorySaver, model: ScriptedChatModel) -> Any:
    middleware = ContextMiddleware(Workspace(store, check=False), policy())
    return create_agent(model, [fetch_page, save_note], middleware=[middleware], checkpointer=saver)


_fresh = itertools.count()


def run(at: int | None, error: type[BaseException]) -> tuple[Workspace, FailingAt, Any, bool]:
    raw = Workspace(f"memory://mw-every-call-{next(_fresh)}")
    store = FailingAt(raw.store, at, error)
    saver = InMemorySaver()
    graph = agent(store, saver, ScriptedChatModel(responses=script()))
    try:
        graph.invoke({"messages": [("user", "read the manual")]}, CONFIG)
    except Killed:
        return raw, store, graph, False
    return raw, store, graph, True


def check(raw: Workspace, graph: Any, turns: int) -> None:
    state = graph.get_state(CONFIG).values["messages"]
    restored = list(restore_messages(state, raw, thread_id="c1").values())
    results = {m.content for m in restored if isinstance(m, ToolMessage)}
    inputs = [c["args"] for m in restored if isinstance(m, AIMessage) for c in m.tool_calls]
    for n in range(turns):
        if n % 2 == 0:
            assert page(n) in results, f"page {n} is lost"
        else:
            assert {"n": n, "content": note(n)} in inputs, f"note {n} is lost"
    for segment in TranscriptArchive(raw, "c1").segments():
        assert sha(raw.read_bytes(segment.jsonl_path)) == segment.jsonl_sha256


@pytest.mark.slow
def test_every_store_call_of_an_agent_run_may_fail(caplog: pytest.LogCaptureFixture) -> None:
    """Each call fails once, the two ways taking turns (an agent run per call is the cost:
    the engine's own sweep, tests/sdk/test_fault_every_call.py, fails every call both ways)."""
    caplog.set_level(logging.CRITICAL, logger="ctxfs")
    raw, store, graph, _ = run(None, OSError)
    check(raw, graph, TURNS)
    calls = len(store.calls)
    paths = {call.path.split("/")[1] for call in store.calls}
    assert {"tool_results", "tool_inputs", "transcripts"} <= paths, paths
    for at in range(1, calls + 1):
        error: type[BaseException] = OSError if at % 2 else Killed
        raw, store, graph, finished = run(at, error)
        store.at = None
        if not finished:
            graph.invoke(None, CONFIG)  # resumed from the last checkpoint
        check(raw, graph, TURNS)
        # the next turn, with the next reply of another script
        replies = [tool_call("fetch_page", {"n": 99}), "ok"]
        answer = ScriptedChatModel(script_id="next", responses=replies)
        out = agent(store, graph.checkpointer, answer).invoke(
            {"messages": [("user", "one more")]}, CONFIG
        )
        assert out["messages"][-1].content == "ok", (at, error)
