"""shared_prefix: its fast path over identical objects agrees with comparing message by message."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxfs._compaction._request import same_message, shared_prefix

_POOL: list[BaseMessage] = [
    HumanMessage("hello", id="h"),
    AIMessage("", tool_calls=[{"name": "ls", "args": {"path": "/"}, "id": "c1"}], id="a"),
    ToolMessage("listing", tool_call_id="c1", id="t"),
    ToolMessage("listing", tool_call_id="c2", id="t2"),
    HumanMessage("other", id="o"),
]


def _naive(previous: list[BaseMessage], current: list[BaseMessage]) -> int:
    shared = 0
    for a, b in zip(previous, current, strict=False):
        if not same_message(a, b):
            break
        shared += 1
    return shared


# each message drawn as: the very same object, an equal copy, or another message
_pick = st.tuples(st.integers(0, len(_POOL) - 1), st.sampled_from(["same", "copy"]))


@settings(max_examples=200, deadline=None)
@given(previous=st.lists(_pick, max_size=30), current=st.lists(_pick, max_size=30))
def test_shared_prefix_agrees_with_the_message_by_message_comparison(
    previous: list[tuple[int, str]], current: list[tuple[int, str]]
) -> None:
    def build(picks: list[tuple[int, str]]) -> list[BaseMessage]:
        return [_POOL[i] if how == "same" else _POOL[i].model_copy() for i, how in picks]

    a, b = build(previous), build(current)
    assert shared_prefix(a, b) == _naive(a, b)
    assert shared_prefix(a, a) == len(a)
    assert shared_prefix(a, [*a, *b]) == len(a)
