"""Threads branch, as a property (issue 23): generated trees of histories (forks from random
earlier points of random lines) on one thread, with random lost replies at storage writes
(the write lands, its answer does not). Never stuck, nothing lost, and each branch's
summary names only its own segments; checked from the store itself."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from ctxfs import (
    ArchiveFailed,
    CompactionResult,
    ContextEngine,
    ContextOverBudget,
    ContextPolicy,
    Workspace,
)
from ctxfs.testing import Fault, FaultyStore
from tests.sdk._branch_check import check_branch, named_segments, own_chain

WINDOW = 8_000
POLICY = ContextPolicy(
    max_input_tokens=WINDOW,
    clearing={"enabled": False},
    summarization={"trigger": {"tokens": 1_500}, "keep": {"messages": 2}},
)


class _Line:
    def __init__(self, context: list[BaseMessage], everything: list[BaseMessage]) -> None:
        self.context, self.everything = list(context), list(everything)
        self.points: list[tuple[list[BaseMessage], list[BaseMessage]]] = [
            (self.context, self.everything)
        ]


# one operation: (line to extend or fork, 0..1 picks among the lines), (fork point 0..1 or
# None for a turn), the size of the turn
_OPERATIONS = st.lists(
    st.tuples(st.floats(0, 1), st.none() | st.floats(0, 1), st.integers(20, 90)),
    min_size=15,
    max_size=30,
)


@pytest.mark.slow
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    operations=_OPERATIONS,
    lost=st.sets(st.integers(1, 40), min_size=5, max_size=30),
)
def test_any_tree_of_histories_compacts_and_loses_nothing_with_lost_replies(
    operations: list[tuple[float, float | None, int]], lost: set[int]
) -> None:
    raw = Workspace("memory://branch-properties")
    store = FaultyStore(
        raw.store, [Fault(method="write", kind="lost_response", nth=n) for n in lost]
    )
    engine = ContextEngine(Workspace(store, check=False), POLICY)
    system: list[BaseMessage] = [SystemMessage("agent", id="sys")]
    lines = [_Line(system, system)]
    results: list[CompactionResult] = []
    for step, (which, fork_at, size) in enumerate(operations):
        line = lines[min(int(which * len(lines)), len(lines) - 1)]
        if fork_at is not None:  # time travel: a new line from an earlier point of this one
            point = line.points[min(int(fork_at * len(line.points)), len(line.points) - 1)]
            line = _Line(*point)
            lines.append(line)
        words = " ".join(f"s{step}w{i}" for i in range(size))
        new = [
            HumanMessage(f"ask {step}: {words}", id=f"h{step}"),
            AIMessage(f"answer {step}: {words}", id=f"a{step}"),
        ]
        line.everything = [*line.everything, *new]
        result = engine.compact([*line.context, *new], thread_id="t")
        line.context = result.messages
        line.points.append((line.context, line.everything))
        results.append(result)

    event(f"lines: {len(lines)}")
    event(f"lost replies fired: {min(len(store.fired), 10)}")
    event(f"summaries: {min(sum(r.summarized for r in results), 10)}")
    for result in results:  # never stuck: each request within the window, nothing refused
        bad = [e for e in result.events if isinstance(e, ArchiveFailed | ContextOverBudget)]
        assert not bad, bad
        assert result.request_tokens <= WINDOW
    for line in lines:  # nothing lost, each summary names its own branch only
        check_branch(raw, "t", line.everything, line.context)
        named = named_segments(line.context, "t")
        if named:
            assert named == own_chain(raw, "t", named[-1])[-len(named) :]
