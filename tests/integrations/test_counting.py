"""IdCachedCounter: counts survive new message objects with the same id, never go stale."""

from __future__ import annotations

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    messages_from_dict,
    messages_to_dict,
)

from ctxfs.integrations._counting import IdCachedCounter
from ctxfs.tokens import TiktokenCounter


class _Counting(TiktokenCounter):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def count_message(self, message: BaseMessage) -> int:
        self.calls += 1
        return super().count_message(message)


def test_reloaded_messages_are_not_recounted_and_changed_ones_are() -> None:
    inner = _Counting()
    counter = IdCachedCounter(inner)
    call = {"name": "ls", "args": {"path": "/"}, "id": "c1", "type": "tool_call"}
    history = [HumanMessage("hello there", id="h1"), AIMessage("", tool_calls=[call], id="a1")]
    total = counter.count_messages(history)
    reloaded = messages_from_dict(messages_to_dict(history))  # as after a checkpoint load
    assert counter.count_messages(reloaded) == total and inner.calls == 2
    edited = [HumanMessage("hello there, longer now", id="h1"), reloaded[1]]
    assert counter.count_messages(edited) > total and inner.calls == 3
    args = {"path": "/a/much/longer/path"}
    other_args = AIMessage("", tool_calls=[{**call, "args": args}], id="a1")
    assert counter.count_message(other_args) > counter.count_message(history[1])
    assert counter.count_message(HumanMessage("no id")) == inner.count_message(
        HumanMessage("no id")
    )
    assert counter.upper_bound("abc") == 3


def test_the_cache_is_bounded() -> None:
    counter = IdCachedCounter(TiktokenCounter(), max_entries=2)
    for n in range(5):
        counter.count_message(HumanMessage(f"m{n}", id=f"id{n}"))
    assert len(counter._by_id) == 2
