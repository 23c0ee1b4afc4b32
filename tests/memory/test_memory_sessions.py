"""Memory in agents: two sessions of a create_agent agent, async, and the LangGraph nodes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _memory_helpers import FakeClock, FakeTime, extraction_reply, fact, replies_in_turn
from langchain.agents import create_agent
from langchain_core.messages import SystemMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from ctxfs import ContextEngine, ContextEvent, ContextPolicy, TiktokenCounter, Workspace
from ctxfs.integrations.langchain import ContextMeasured, ContextMiddleware
from ctxfs.memory import (
    LongTermMemory,
    MemoryMiddleware,
    memory_compaction_node,
    memory_node,
    remember_node,
    system_with_memory,
)
from ctxfs.testing import ScriptedChatModel, tool_call

COUNTER = TiktokenCounter()
DETAIL = "nightly export failed: disk quota exceeded on volume vol-7731"


@tool
def read_log(part: int) -> str:
    """Read part of the export job's log."""
    filler = "\n".join(f"{part:02d}:{n:03d} export step ok, rows copied" for n in range(60))
    return f"{filler}\n{DETAIL}" if part == 1 else filler


def _agent(
    workspace: Workspace,
    memory: LongTermMemory,
    model: ScriptedChatModel,
    events: list[ContextEvent],
) -> Any:
    policy = ContextPolicy(
        max_input_tokens=4_000,
        tool_results={"threshold": {"tokens": 3_000}},
        clearing={"enabled": False},
        summarization={"trigger": {"fraction": 0.6}, "keep": {"messages": 2}},
    )
    context = ContextMiddleware(
        workspace, policy, tools=False, on_event=lambda e, t: events.append(e)
    )
    return create_agent(
        model,
        [read_log],
        system_prompt="You are the ops assistant.",
        middleware=[MemoryMiddleware(memory), context],
        checkpointer=InMemorySaver(),
    )


def _memory(workspace: Workspace, clock: FakeClock, model: ScriptedChatModel) -> LongTermMemory:
    return LongTermMemory(workspace, ("alice",), model=model, clock=clock, now=FakeTime())


def test_two_sessions_facts_are_injected_and_a_transcript_detail_is_recalled() -> None:
    workspace = Workspace("memory://sessions")
    clock = FakeClock()
    extractor = ScriptedChatModel(
        responses=[
            replies_in_turn(
                extraction_reply(
                    fact("Alice's staging database listens on port 6543.", 0.9, tags=["infra"]),
                    fact("Alice may prefer dark mode.", 0.4),
                    user={"work": "Runs the data platform's nightly jobs."},
                )
            )
        ]
    )
    memory = _memory(workspace, clock, extractor)
    events: list[ContextEvent] = []
    script = [*(tool_call("read_log", {"part": n}) for n in range(1, 6)), "vol-7731 is full."]
    session1 = _agent(workspace, memory, ScriptedChatModel(responses=script), events)
    out = session1.invoke(
        {
            "messages": [
                ("user", "Our staging database is on port 6543. Why did the nightly export fail?")
            ]
        },
        {"configurable": {"thread_id": "s1"}},
    )
    assert out["messages"][-1].content == "vol-7731 is full."
    assert workspace.glob("segment-*.jsonl", "/transcripts").paths, "session 1 was archived"
    assert memory.queue.pending() == {"s1": 2}
    assert not workspace.exists(memory.file.path)  # not learned before the debounce

    clock.advance(30)
    model2 = ScriptedChatModel(responses=["Re-running it against port 6543."])
    session2 = _agent(workspace, memory, model2, events)
    events.clear()
    session2.invoke(
        {"messages": [("user", "Re-run the nightly export on the staging database.")]},
        {"configurable": {"thread_id": "s2"}},
    )
    (learned,) = memory.load().facts
    assert (
        learned.content == "Alice's staging database listens on port 6543."
        and learned.source == "s1"
    )
    request = model2.requests[0]
    system = request[0]
    assert isinstance(system, SystemMessage)
    text = system.content
    assert isinstance(text, str) and text.startswith("You are the ops assistant.\n\n<memory>\n")
    assert "- Work: Runs the data platform's nightly jobs." in text
    assert "- [knowledge, 0.90] Alice's staging database listens on port 6543." in text
    assert "dark mode" not in text
    recalled = text[text.index("<recalled>") :]
    assert DETAIL in recalled and "/transcripts/" in recalled
    # the memory is part of the request budget the context engine counts
    (measured,) = [e for e in events if isinstance(e, ContextMeasured)]
    assert measured.system_tokens == COUNTER.count_message(system)


def test_the_async_agent_learns_and_injects_the_same_way() -> None:
    workspace = Workspace("memory://async-sessions")
    clock = FakeClock()
    extractor = ScriptedChatModel(
        responses=[replies_in_turn(extraction_reply(fact("Alice ships on Thursdays.", 0.85)))]
    )
    memory = _memory(workspace, clock, extractor)
    first = ScriptedChatModel(responses=["Noted."])
    agent = create_agent(
        first, [], middleware=[MemoryMiddleware(memory)], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "a1"}}
    asyncio.run(agent.ainvoke({"messages": [("user", "We ship on Thursdays.")]}, config))
    clock.advance(30)
    second = ScriptedChatModel(responses=["Sure."])
    agent = create_agent(
        second, [], middleware=[MemoryMiddleware(memory)], checkpointer=InMemorySaver()
    )
    asyncio.run(
        agent.ainvoke(
            {"messages": [("user", "When do we ship?")]}, {"configurable": {"thread_id": "a2"}}
        )
    )
    system = second.requests[0][0]
    assert isinstance(system, SystemMessage) and "Alice ships on Thursdays." in str(system.content)


def test_a_malformed_memory_never_stops_the_agent(caplog: pytest.LogCaptureFixture) -> None:
    workspace = Workspace("memory://broken-memory")
    memory = LongTermMemory(workspace, ("alice",))
    workspace.write_bytes(memory.file.path, b'{"format": "ctxfs-memory"')
    model = ScriptedChatModel(responses=["Still here."])
    agent = create_agent(model, [], middleware=[MemoryMiddleware(memory)])
    out = agent.invoke({"messages": [("user", "hello")]})
    assert out["messages"][-1].content == "Still here."
    assert "/memories/alice/memory.json: not valid JSON" in caplog.text
    assert not any(isinstance(m, SystemMessage) for m in model.requests[0])


class _State(MessagesState):
    memory_prompt: str
    memory_recalled: str


def test_the_langgraph_nodes_count_the_memory_in_the_compaction_budget() -> None:
    workspace = Workspace("memory://graph-memory")
    extractor = ScriptedChatModel(responses=[extraction_reply()])  # not due in this test
    memory = LongTermMemory(workspace, ("alice",), model=extractor, now=FakeTime())
    from _memory_helpers import update

    memory.apply(update(fact("Alice's staging database listens on port 6543.")), thread_id="old")
    engine = ContextEngine(workspace, ContextPolicy(max_input_tokens=8_000))
    model = ScriptedChatModel(responses=["Port 6543.", "It ran."])
    measured: list[ContextEvent] = []
    base = "You are the ops assistant."

    def call_model(state: _State) -> dict[str, Any]:
        system = system_with_memory(base, state)
        return {"messages": [model.invoke([system, *state["messages"]])]}

    graph = StateGraph(_State)
    graph.add_node("memory", memory_node(memory))
    graph.add_node(
        "compact",
        memory_compaction_node(engine, system=base, on_event=lambda e, t: measured.append(e)),
    )
    graph.add_node("model", call_model)
    graph.add_node("remember", remember_node(memory))
    graph.add_edge(START, "memory")
    graph.add_edge("memory", "compact")
    graph.add_edge("compact", "model")
    graph.add_edge("model", "remember")
    graph.add_edge("remember", END)
    app = graph.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "g1"}}
    out = app.invoke({"messages": [("user", "Which port is the staging database on?")]}, config)
    system = model.requests[0][0]
    assert "Alice's staging database listens on port 6543." in str(system.content)
    assert out["memory_prompt"] in str(system.content)
    (event,) = [e for e in measured if isinstance(e, ContextMeasured)]
    assert event.system_tokens == COUNTER.count_message(system)
    assert memory.queue.pending() == {"g1": 2}
    asyncio.run(app.ainvoke({"messages": [("user", "And the export?")]}, config))
    assert memory.queue.pending() == {"g1": 4}
