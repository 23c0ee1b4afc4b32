"""Threads branch in a real LangGraph graph (issue 23): time travel from several older
checkpoints and a rewind by ``update_state``, each followed by 20 turns, on InMemorySaver and
SqliteSaver. Every request stays within the window, and every message of every branch is in
a committed segment of its chain or in that branch's state (read from the store directly)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph

from ctxfs import ContextEngine, ContextPolicy, TranscriptArchive, Workspace
from ctxfs.integrations.langgraph import compaction_node
from tests.sdk._branch_check import check_branch, named_segments

WINDOW = 4_000
POLICY = ContextPolicy(
    max_input_tokens=WINDOW,
    clearing={"enabled": False},
    summarization={"trigger": {"tokens": 2_000}, "keep": {"messages": 4}},
)
THREAD = "lg"


@pytest.fixture(params=["memory", "sqlite"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseCheckpointSaver[Any]]:
    if request.param == "memory":
        yield InMemorySaver()
        return
    connection = sqlite3.connect(tmp_path / "checkpoints.sqlite", check_same_thread=False)
    try:
        yield SqliteSaver(connection)
    finally:
        connection.close()


def _words(tag: str) -> str:
    return " ".join(f"{tag}w{i}" for i in range(60))


def test_time_travel_and_a_rewind_each_compact_within_the_window_and_lose_nothing(
    saver: BaseCheckpointSaver[Any],
) -> None:
    ws = Workspace("memory://langgraph-branches")
    engine = ContextEngine(ws, POLICY)
    requests: list[int] = []

    def model(state: MessagesState) -> dict[str, list[BaseMessage]]:
        messages = state["messages"]
        requests.append(engine.token_counter.count_messages(messages))
        last = messages[-1]
        return {
            "messages": [AIMessage(f"reply {last.id}: {_words(str(last.id))}", id=f"ai-{last.id}")]
        }

    builder = StateGraph(MessagesState)
    builder.add_node("compact", compaction_node(engine))
    builder.add_node("model", model)
    builder.add_edge(START, "compact")
    builder.add_edge("compact", "model")
    graph = builder.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": THREAD}}
    # what each line of the thread saw, by the id of its latest message
    originals: dict[str | None, list[BaseMessage]] = {None: []}
    ends: list[tuple[list[BaseMessage], list[BaseMessage]]] = []

    def turns(line: str, count: int, start: Any = None) -> None:
        for n in range(count):
            state = graph.get_state(start if (n == 0 and start is not None) else config)
            before = state.values.get("messages", [])
            seen = originals[before[-1].id if before else None]
            human = HumanMessage(f"{line} {n}: {_words(f'{line}{n}')}", id=f"{line}-{n}")
            graph.invoke({"messages": [human]}, start if n == 0 and start is not None else config)
            after = graph.get_state(config).values["messages"]
            originals[human.id] = [*seen, human]
            originals[after[-1].id] = [*seen, human, after[-1]]
        final = graph.get_state(config).values["messages"]
        ends.append((originals[final[-1].id], final))

    turns("main", 25)
    done = [s for s in graph.get_state_history(config) if not s.next and s.values.get("messages")]
    done.reverse()  # oldest first
    assert len(done) >= 25
    for index in (4, 11, 19):  # before the first summary, and after some
        turns(f"travel{index}", 20, start=done[index].config)
    # a rewind: a human edit on an older checkpoint (update_state), then 20 more turns
    old = done[15]
    edit = HumanMessage(f"edited: {_words('edit')}", id="edit")
    rewound = graph.update_state(old.config, {"messages": [edit]}, as_node="compact")
    originals[edit.id] = [*originals[old.values["messages"][-1].id], edit]
    graph.invoke(None, rewound)  # the model answers the edit
    after = graph.get_state(config).values["messages"]
    assert after[-1].id == "ai-edit"
    originals[after[-1].id] = [*originals[edit.id], after[-1]]
    turns("rewind", 20)

    assert requests and max(requests) <= WINDOW, max(requests)
    for everything, context in ends:
        check_branch(ws, THREAD, everything, context)
    archive = TranscriptArchive(ws, THREAD)
    branches = archive.branches()
    assert len(branches) >= 4
    # each line's summary names only segments of its own branch
    for _, context in ends:
        named = named_segments(context, THREAD)
        assert named, "a line never summarized"
        chain = [s.number for s in archive.branch_of(named[-1])]
        assert named == chain[-len(named) :]
