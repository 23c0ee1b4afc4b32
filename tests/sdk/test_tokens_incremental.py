"""Counting a growing history is incremental: the work per count follows what changed.

Properties over generated histories, at 100 and at 20,000 messages alike: after one message is
appended (or a message somewhere is replaced), counting again tokenizes only that message and
looks at no other message one by one (not even those after a replaced one), whether the
history is the same objects or was rebuilt from a checkpoint (new objects, same ids and
contents). No timing: the tokenizer calls and the per-message slow path are counted.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    messages_from_dict,
    messages_to_dict,
)

from ctxfs._tokens import CallableTokenCounter, TiktokenCounter

SIZES = [100, 20_000]
_FIXTURE = [HealthCheck.function_scoped_fixture]  # the module's history is only read


class _Spy(CallableTokenCounter):
    """A cheap tokenizer (one token per four characters) that counts what it is asked.

    ``texts`` counts tokenizer calls; ``slow`` counts messages that went through the
    per-message path (the id cache or the tokenizer) instead of the shared prefix.
    """

    def __init__(self) -> None:
        super().__init__(lambda text: (len(text) + 3) // 4)
        self.texts = 0
        self.slow = 0

    def count_text(self, text: str) -> int:
        self.texts += 1
        return super().count_text(text)

    def _snapshot_of(self, message: BaseMessage, fingerprint: object | None = None) -> Any:
        self.slow += 1
        return super()._snapshot_of(message, fingerprint)

    def reset(self) -> None:
        self.texts = self.slow = 0


def _message(rng: random.Random, n: int) -> BaseMessage:
    kind = rng.randrange(4)
    words = " ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(8))
    if kind == 0:
        return HumanMessage(f"{n} {words}", id=f"h{n}")
    if kind == 1:
        call = {"name": "grep", "args": {"pattern": words, "n": n}, "id": f"c{n}"}
        return AIMessage("", tool_calls=[call], id=f"a{n}")
    if kind == 2:
        return ToolMessage(f"{n} {words}\n" * rng.randint(1, 5), tool_call_id=f"c{n}", id=f"t{n}")
    return AIMessage([{"type": "text", "text": f"{n} {words}"}], id=f"b{n}")


def _history(seed: int, size: int) -> list[BaseMessage]:
    rng = random.Random(seed)
    return [_message(rng, n) for n in range(size)]


def _texts(message: BaseMessage) -> int:
    """How many texts one message is tokenized on (a fresh counter's calls)."""
    fresh = _Spy()
    fresh.count_message(message)
    return fresh.texts


Base = tuple[list[BaseMessage], list[BaseMessage]]


@pytest.fixture(scope="module", params=SIZES, ids=[f"{n}-messages" for n in SIZES])
def base(request: pytest.FixtureRequest) -> Base:
    """The history, and the same history reloaded (new objects, same ids and contents), built
    once: each example counts with a fresh counter, so sharing them changes nothing."""
    history = _history(request.param, request.param)
    return history, messages_from_dict(messages_to_dict(history))


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=_FIXTURE)
@given(seed=st.integers(0, 2**16), reload=st.booleans())
def test_appending_one_message_tokenizes_only_that_message(
    base: Base, seed: int, reload: bool
) -> None:
    history, reloaded = base
    counter = _Spy()
    total = counter.count_messages(history)
    new = _message(random.Random(seed), len(history) + seed)
    grown = [*(reloaded if reload else history), new]
    counter.reset()
    assert counter.count_messages(grown) == total + _Spy().count_message(new)
    assert counter.slow == 1  # only the new message was looked at one by one
    assert counter.texts == _texts(new)
    counter.reset()
    assert counter.count_messages(grown) == total + _Spy().count_message(new)
    assert counter.slow == 0 and counter.texts == 0  # the same history again: nothing


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=_FIXTURE)
@given(data=st.data(), reload=st.booleans())
def test_a_replaced_message_is_the_only_one_looked_at(
    base: Base, data: st.DataObject, reload: bool
) -> None:
    history, reloaded = base
    counter = _Spy()
    total = counter.count_messages(history)
    index = data.draw(st.integers(0, len(history) - 1))
    old = history[index]
    replaced = old.model_copy(update={"content": f"{old.content!s} and more words"})
    edited = list(reloaded if reload else history)
    edited[index] = replaced
    counter.reset()
    # a history's count is the sum of its messages' (the first property checks it)
    expected = total - _Spy().count_message(old) + _Spy().count_message(replaced)
    assert counter.count_messages(edited) == expected
    assert counter.texts == _texts(replaced)
    assert counter.slow == 1  # not the messages after it


def test_a_message_edited_in_place_is_seen() -> None:
    history = _history(7, 100)
    counter = TiktokenCounter()
    before = counter.count_messages(history)
    target = next(m for m in history if isinstance(m, AIMessage) and m.tool_calls)
    target.tool_calls[0]["args"]["pattern"] = "a much longer pattern than it was " * 4
    after = counter.count_messages(history)
    assert after > before
    assert after == TiktokenCounter().count_messages(history)


def test_threads_counted_in_turn_keep_their_records() -> None:
    """Two histories counted alternately (two threads) each stay incremental."""
    counter = _Spy()
    a = _history(1, 500)
    b = [HumanMessage("other thread", id="other"), *_history(2, 500)[1:]]
    counter.count_messages(a)
    counter.count_messages(b)
    for n in range(3):
        a.append(HumanMessage(f"a {n}", id=f"a-extra-{n}"))
        b.append(HumanMessage(f"b {n}", id=f"b-extra-{n}"))
        counter.reset()
        counter.count_messages(a)
        counter.count_messages(b)
        assert counter.slow == 2


def test_dropping_and_inserting_messages_still_counts_right() -> None:
    """Positions shift (messages archived, a summary put in their place): the count is the
    sum of the new messages', and messages seen before are not tokenized again."""
    history = _history(3, 300)
    counter = _Spy()
    counter.count_messages(history)
    summary = HumanMessage("summary of what came before", id="summary")
    shifted = [history[0], summary, *history[120:]]
    counter.reset()
    assert counter.count_messages(shifted) == sum(_Spy().count_message(m) for m in shifted)
    assert counter.texts == _texts(summary)
    shorter = shifted[:50]
    assert counter.count_messages(shorter) == sum(_Spy().count_message(m) for m in shorter)
