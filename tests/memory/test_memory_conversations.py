"""Conversation logs: a session that never compacted is recalled at the next session's start."""

from __future__ import annotations

import pytest
from _memory_helpers import FakeTime
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from ctxfs import TranscriptArchive, Workspace
from ctxfs.memory import (
    KeywordRetriever,
    LongTermMemory,
    MemoryMiddleware,
    MemorySettings,
    Scope,
    StoreRetriever,
)
from ctxfs.memory._conversations import conversation_path, read_conversation
from ctxfs.testing import FaultyStore, ScriptedChatModel


def _config(thread: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread}}


def test_a_session_that_never_compacted_is_recalled_at_the_next_start() -> None:
    workspace = Workspace("memory://never-compacted")
    memory = LongTermMemory(workspace, ("alice",))  # no model: nothing is ever learned
    model = ScriptedChatModel(responses=["Noted: the release is frozen until March 3.", "ok"])
    agent = create_agent(
        model, [], middleware=[MemoryMiddleware(memory)], checkpointer=InMemorySaver()
    )
    agent.invoke(
        {"messages": [("user", "Remember that the release freeze lasts until March 3.")]},
        _config("s1"),
    )
    assert not workspace.exists("/transcripts")  # nothing was archived
    state = agent.invoke(
        {"messages": [("user", "When does the release freeze end?")]}, _config("s2")
    )
    recalled = state["memory_recalled"]
    assert "release freeze lasts until March 3" in recalled
    assert "When does the release freeze end" not in recalled  # its own message is in context


def test_the_log_holds_each_conversational_message_once() -> None:
    workspace = Workspace("memory://log-once")
    memory = LongTermMemory(workspace, ("alice",))
    turn: list[BaseMessage] = [HumanMessage("hello", id="h1")]
    memory.record("t", turn)
    turn += [
        AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "c"}], id="a0"),
        AIMessage("Hi there.", id="a1"),
    ]
    memory.record("t", turn)
    memory.record("t", turn)
    lines = read_conversation(workspace, conversation_path(("alice",), "t"))
    assert [(line.role, line.text) for line in lines] == [
        ("user", "hello"),
        ("assistant", "Hi there."),
    ]


@pytest.mark.parametrize("cut", [1, 10])
def test_a_log_whose_last_line_was_cut_short_keeps_every_line_appended_after_it(
    cut: int,
) -> None:
    # the first line appended ran into the cut line: both read as one broken line, skipped
    # (a last line that lost only its newline took the whole next turn with it)
    workspace = Workspace(f"memory://cut-log-{cut}")
    memory = LongTermMemory(workspace, ("alice",))
    memory.record("t", [HumanMessage("first question", id="1"), AIMessage("first answer", id="2")])
    path = conversation_path(("alice",), "t")
    workspace.write_bytes(path, workspace.read_bytes(path)[:-cut])
    later = LongTermMemory(workspace, ("alice",))  # a fresh process
    later.record("t", [HumanMessage("second question", id="3"), AIMessage("second answer", id="4")])
    texts = [line.text for line in read_conversation(workspace, path)]
    kept = ["first question", "first answer"] if cut == 1 else ["first question"]
    assert texts == [*kept, "second question", "second answer"]


def test_keep_conversations_off_logs_nothing() -> None:
    workspace = Workspace("memory://log-off")
    memory = LongTermMemory(
        workspace, ("alice",), settings=MemorySettings(keep_conversations=False)
    )
    memory.record("t", [HumanMessage("hello")])
    assert not workspace.exists("/memories")


def test_a_storage_failure_is_logged_and_the_messages_are_logged_with_the_next_turn(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from ctxfs.testing import Fault

    store = FaultyStore(Workspace("memory://log-faults").store)
    workspace = Workspace(store)
    memory = LongTermMemory(workspace, ("alice",))
    store.add(Fault(method="write", kind="error", times=1))
    with caplog.at_level("WARNING", logger="ctxfs.memory"):
        memory.record("t", [HumanMessage("first", id="1")])
    assert "conversation not logged" in caplog.text
    memory.record("t", [HumanMessage("first", id="1"), HumanMessage("second", id="2")])
    lines = read_conversation(workspace, conversation_path(("alice",), "t"))
    assert [line.text for line in lines] == ["first", "second"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 6), st.integers(0, 6), st.booleans())
def test_a_message_logged_and_archived_is_found_once_in_every_retriever(
    logged: int, archived: int, store: bool
) -> None:
    """Compaction archived the first ``archived`` messages of a logged thread: each message is
    one hit, whether it is in both or only in the log."""
    workspace = Workspace("memory://log-and-archive")
    memory = LongTermMemory(workspace, ("alice",), now=FakeTime())
    messages: list[BaseMessage] = [
        HumanMessage(f"note {i} about the orchid greenhouse", id=f"m{i}") for i in range(logged)
    ]
    memory.record("t", messages)
    if archived:
        archive = TranscriptArchive(workspace, "t")
        segment, _ = archive.write_segment(messages[:archived], start=0, tokens=1)
        archive.commit(segment, summary=AIMessage("summary"))
    retriever: KeywordRetriever | StoreRetriever = KeywordRetriever(workspace)
    if store:
        retriever = StoreRetriever(InMemoryStore())
        retriever.sync(workspace)
    hits = retriever.search("orchid greenhouse", k=50, scope=Scope())
    assert sorted(h.text for h in hits) == sorted(str(m.content) for m in messages)
    own = retriever.search("orchid", k=50, scope=Scope(namespace=("alice",)))
    assert len(own) == logged
    assert retriever.search("orchid", k=50, scope=Scope(threads=("other",))) == []
