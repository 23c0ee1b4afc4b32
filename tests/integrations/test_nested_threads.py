"""Nested agents: every agent invocation gets its own thread, and no commit is lost.

A tool that runs a ``create_agent`` sub-agent, called three times in parallel, gives each
sub-agent its own thread (the task id of its invocation is part of the name), even though
the three share one :class:`~ctxfs.integrations.langchain.ContextMiddleware` and so one
engine, whose lock is released while the summary model answers. Every summary's segment is
committed in its own thread's index; the archived messages plus what each sub-agent kept
reproduce its conversation.
"""

from __future__ import annotations

import threading
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from ctxfs import (
    ContextEvent,
    ContextPolicy,
    Summarized,
    TranscriptArchive,
    Workspace,
    is_summary,
    resolve_pointers,
)
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.testing import ScriptedChatModel, tool_call

TOPICS = ("alpha", "beta", "gamma")


@tool
def lookup(n: int = 0) -> str:
    """Looks record n up."""
    return f"record {n}: " + " ".join(f"w{n}_{i}" for i in range(120))


class _Summarizer(ScriptedChatModel):
    """A summary model that answers every request, from several threads at once."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        from langchain_core.outputs import ChatGeneration, ChatResult

        return ChatResult(generations=[ChatGeneration(message=AIMessage("SUMMARY so far."))])


def test_parallel_sub_agents_get_their_own_threads_and_lose_no_segment() -> None:
    ws = Workspace("memory://nested-threads")
    events: list[tuple[ContextEvent, str]] = []
    lock = threading.Lock()

    def record(event: ContextEvent, thread: str) -> None:
        with lock:
            events.append((event, thread))

    policy = ContextPolicy(
        max_input_tokens=3_000,
        summarization={
            "trigger": {"tokens": 600},
            "keep": {"messages": 2},
            "model": _Summarizer(responses=[]),
        },
        clearing={"enabled": False},
    )
    shared = ContextMiddleware(ws, policy, tools=False, on_event=record)
    finals: dict[str, list[BaseMessage]] = {}

    @tool
    def research(topic: str) -> str:
        """Researches a topic with a sub-agent."""
        script = [*(tool_call("lookup", {"n": i}) for i in range(6)), f"done {topic}"]
        child = create_agent(ScriptedChatModel(responses=script), [lookup], middleware=[shared])
        out = child.invoke({"messages": [HumanMessage(f"research {topic}", id=f"q-{topic}")]})
        with lock:
            finals[topic] = out["messages"]
        return str(out["messages"][-1].content)

    calls = AIMessage(
        "",
        tool_calls=[{"name": "research", "args": {"topic": t}, "id": f"call-{t}"} for t in TOPICS],
    )
    parent = create_agent(
        ScriptedChatModel(responses=[calls, "all done"]),
        [research],
        checkpointer=InMemorySaver(),
    )
    parent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "t1"}})

    summarized = [(e, t) for e, t in events if isinstance(e, Summarized)]
    threads = {t for _, t in summarized}
    assert len(threads) == len(TOPICS)  # one thread per sub-agent invocation
    assert all(t.startswith("t1/tools:") for t in threads)
    assert len(summarized) >= 2 * len(TOPICS)
    for thread in threads:
        archive = TranscriptArchive(ws, thread)
        indexed = {s.markdown_path for s in archive.segments()}
        theirs = [e for e, t in summarized if t == thread]
        assert {e.segment_paths[1] for e in theirs} <= indexed  # no commit lost
        assert len(indexed) == len(theirs)
    for topic, messages in finals.items():
        thread = next(t for t in threads if _asked(ws, t) == f"research {topic}")
        archived = TranscriptArchive(ws, thread).read_all()
        kept = [m for m in messages if not is_summary(m)]
        whole = resolve_pointers([*archived, *kept], ws)
        assert whole[0].id == f"q-{topic}"
        results = [m for m in whole if isinstance(m, ToolMessage)]
        assert [m.content for m in results] == [lookup.invoke({"n": i}) for i in range(6)]


def _asked(ws: Workspace, thread: str) -> str:
    first = TranscriptArchive(ws, thread).read_all()[0]
    assert isinstance(first, HumanMessage)
    return str(first.content)
