"""Property: a compaction beside parallel branches only removes what it archived.

Generated LangGraph graphs: each round, a ``grow`` node adds a turn; then, in one graph step,
``compaction_node`` runs beside one to three branch nodes that each add messages. Node names
are drawn too, because LangGraph applies the updates of one step in the order of the node
names: a compaction that reset the state ("remove all, then the new list") wiped a branch's
message or not depending on that order. Whatever the names, the number of rounds and the
messages, every message any node added is, byte for byte, either in the final state or in
the thread's archive, and none is in both or twice.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, messages_to_dict
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from ctxfs import (
    ContextEngine,
    ContextPolicy,
    TranscriptArchive,
    Workspace,
    is_pinned,
    is_summary,
)
from ctxfs.integrations.langgraph import compaction_node

_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8).filter(
    lambda name: name not in {"grow", "join", "compact"}
)


@st.composite
def graphs(draw: st.DrawFn) -> dict[str, Any]:
    branches = draw(st.lists(_names, min_size=1, max_size=3, unique=True))
    return {
        "branches": branches,
        "compact": draw(_names.filter(lambda n: n not in branches)),
        "rounds": draw(st.integers(min_value=4, max_value=9)),
        "per_branch": draw(st.lists(st.integers(1, 2), min_size=len(branches), max_size=3)),
        "words": draw(st.integers(min_value=40, max_value=80)),
    }


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=graphs())
def test_every_message_a_parallel_branch_adds_is_kept_or_archived(case: dict[str, Any]) -> None:
    ws = Workspace("memory://parallel-compaction")
    policy = ContextPolicy(
        max_input_tokens=4_000,
        summarization={"trigger": {"tokens": 500}, "keep": {"messages": 2}},
        clearing={"enabled": False},
    )
    engine = ContextEngine(ws, policy)
    added: list[BaseMessage] = []
    ids = itertools.count()
    rounds = case["rounds"]

    def new(kind: type[BaseMessage], text: str) -> BaseMessage:
        message = kind(f"{text} " + "word " * case["words"], id=f"m{next(ids)}")
        added.append(message)
        return message

    def grow(state: MessagesState) -> dict[str, Any]:
        turn = len([m for m in added if str(m.content).startswith("turn")])
        return {"messages": [new(HumanMessage, f"turn {turn}"), new(AIMessage, f"reply {turn}")]}

    def branch(name: str, count: int) -> Any:
        def run(state: MessagesState) -> dict[str, Any]:
            return {"messages": [new(HumanMessage, f"note from {name}") for _ in range(count)]}

        return run

    def again(state: MessagesState) -> str:
        turns = len([m for m in added if str(m.content).startswith("turn")])
        return "grow" if turns < rounds else END

    builder = StateGraph(MessagesState)
    builder.add_node("grow", grow)
    builder.add_node(case["compact"], compaction_node(engine))
    for name, count in zip(case["branches"], case["per_branch"], strict=False):
        builder.add_node(name, branch(name, count))
    builder.add_node("join", lambda state: {})
    builder.add_edge(START, "grow")
    for name in [case["compact"], *case["branches"]]:
        builder.add_edge("grow", name)
        builder.add_edge(name, "join")
    builder.add_conditional_edges("join", again)
    graph = builder.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "p"}, "recursion_limit": 10 * rounds + 10}

    final = graph.invoke({"messages": []}, config)["messages"]

    archived = TranscriptArchive(ws, "p").read_all()
    kept = [m for m in final if not (is_summary(m) or is_pinned(m))]
    found = [*archived, *kept]
    assert sorted(str(m.id) for m in found) == sorted(str(m.id) for m in added)
    by_id = {m.id: m for m in found}
    for message in added:  # byte for byte, as the node added it
        assert messages_to_dict([by_id[message.id]]) == messages_to_dict([message])
    assert archived and any(is_summary(m) for m in final)  # it did compact
