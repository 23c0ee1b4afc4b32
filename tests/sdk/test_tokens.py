"""Token accounting: exact counts, the message formula, the cache, plug-ins, the byte bound."""

from __future__ import annotations

import gc
import json

import pytest
import tiktoken
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    messages_from_dict,
    messages_to_dict,
)

from ctxfs._tokens import (
    ENCODING_NAME,
    MESSAGE_OVERHEAD_TOKENS,
    CallableTokenCounter,
    TiktokenCounter,
    TokenCounter,
    as_token_counter,
    count_exceeding,
)
from ctxfs._tokens._media import MAX_IMAGE_TOKENS


@pytest.fixture(scope="module")
def encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding(ENCODING_NAME)


def _exact(encoding: tiktoken.Encoding, text: str) -> int:
    return len(encoding.encode(text, disallowed_special=()))


class _CountingCounter(TiktokenCounter):
    """A real TiktokenCounter that records every text it tokenizes."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def count_text(self, text: str) -> int:
        self.calls += 1
        return super().count_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "hello world",
        "def f(x):\n    return x\n",
        '{"a": [1, 2, 3]}',
        "日本語のテキスト",
        "🙂" * 5,
    ],
)
def test_count_text_is_exact(encoding: tiktoken.Encoding, text: str) -> None:
    assert TiktokenCounter().count_text(text) == _exact(encoding, text)


def test_special_token_text_counts_as_plain_text(encoding: tiktoken.Encoding) -> None:
    text = "before <|endoftext|> after"
    count = TiktokenCounter().count_text(text)
    assert count == _exact(encoding, text)
    assert count > 3  # not collapsed into the single special token


def test_message_formula(encoding: tiktoken.Encoding) -> None:
    args = {"file_path": "/a.py", "content": "x = 1\n", "zeta": "日本"}
    message = AIMessage(
        content=[{"type": "text", "text": "Writing."}, {"type": "image_url", "image_url": "u"}],
        tool_calls=[{"name": "write_file", "args": args, "id": "c1"}],
    )
    compact = json.dumps(args, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    expected = (
        MESSAGE_OVERHEAD_TOKENS
        + _exact(encoding, "Writing.")
        + _exact(encoding, "write_file")
        + _exact(encoding, compact)
        + MAX_IMAGE_TOKENS  # an image at a URL: its size is unknown
    )
    assert MESSAGE_OVERHEAD_TOKENS == 4
    assert TiktokenCounter().count_message(message) == expected


def test_empty_message_costs_the_overhead() -> None:
    assert TiktokenCounter().count_message(HumanMessage("")) == MESSAGE_OVERHEAD_TOKENS


def test_recounting_after_k_new_messages_tokenizes_only_those() -> None:
    counter = _CountingCounter()
    history: list[BaseMessage] = [HumanMessage(f"message number {i}") for i in range(500)]
    total = counter.count_messages(history)
    assert counter.calls == 500
    history += [HumanMessage("one more"), HumanMessage("and another")]
    counter.calls = 0
    assert counter.count_messages(history) == total + counter.count_messages(history[-2:])
    assert counter.calls == 2


def test_a_changed_message_is_recounted() -> None:
    counter = _CountingCounter()
    message = AIMessage("short", tool_calls=[{"name": "t", "args": {"a": "b"}, "id": "1"}])
    first = counter.count_message(message)
    message.content = "a much longer content than before"
    assert counter.count_message(message) > first
    message.tool_calls[0]["args"]["a"] = "changed in place " * 10
    calls = counter.calls
    third = counter.count_message(message)
    assert counter.calls > calls
    assert counter.count_message(message) == third  # and cached again


def test_cache_entries_die_with_their_messages() -> None:
    counter = TiktokenCounter()
    counter.count_messages([HumanMessage(f"m{i}") for i in range(50)])
    gc.collect()
    assert len(counter._cache) == 0


def test_counters_do_not_share_state() -> None:
    a, b = TiktokenCounter(), TiktokenCounter()
    message = HumanMessage("hi")
    a.count_message(message)
    assert len(a._cache) == 1
    assert len(b._cache) == 0


def test_callable_plugs_in() -> None:
    counter = as_token_counter(len)
    assert isinstance(counter, CallableTokenCounter)
    assert isinstance(counter, TokenCounter)
    assert counter.count_text("abcd") == 4
    assert counter.count_message(ToolMessage("abcd", tool_call_id="x")) == 4 + 4


def test_protocol_objects_are_used_as_is() -> None:
    counter = TiktokenCounter()
    assert as_token_counter(counter) is counter
    assert isinstance(as_token_counter(None), TiktokenCounter)
    with pytest.raises(TypeError, match="TokenCounter or a callable"):
        as_token_counter(42)  # type: ignore[arg-type]


def test_byte_bound_skips_tokenizing_small_text() -> None:
    counter = _CountingCounter()
    assert count_exceeding(counter, "x" * 100, 100) is None
    assert count_exceeding(counter, "日本" * 10, 60) is None  # 60 UTF-8 bytes
    assert counter.calls == 0
    assert count_exceeding(counter, "日本" * 10, 59) is None  # tokenized: 20 chars, few tokens
    assert counter.calls == 1
    over = count_exceeding(counter, "word " * 200, 100)
    assert over == counter.count_text("word " * 200)


def test_callable_counters_get_no_byte_shortcut() -> None:
    seen: list[str] = []

    def count(text: str) -> int:
        seen.append(text)
        return 10 * len(text)  # a tokenizer for which bytes are no bound

    assert count_exceeding(as_token_counter(count), "abc", 5) == 30
    assert seen == ["abc"]


def test_reloaded_messages_are_not_recounted_and_changed_ones_are() -> None:
    """A checkpoint reload gives new objects with the same ids: counted from the id cache,
    unless their content or tool calls changed."""
    counter = TiktokenCounter()
    calls = 0
    original = counter.count_text

    def counting(text: str) -> int:
        nonlocal calls
        calls += 1
        return original(text)

    counter.count_text = counting  # type: ignore[method-assign]
    call = {"name": "ls", "args": {"path": "/"}, "id": "c1", "type": "tool_call"}
    history = [HumanMessage("hello there", id="h1"), AIMessage("", tool_calls=[call], id="a1")]
    total = counter.count_messages(history)
    tokenized = calls
    reloaded = messages_from_dict(messages_to_dict(history))  # as after a checkpoint load
    assert counter.count_messages(reloaded) == total and calls == tokenized
    edited = [HumanMessage("hello there, longer now", id="h1"), reloaded[1]]
    assert counter.count_messages(edited) > total and calls == tokenized + 1
    longer = AIMessage("", tool_calls=[{**call, "args": {"path": "/a/much/longer/path"}}], id="a1")
    assert counter.count_message(longer) > counter.count_message(history[1])


def test_the_id_cache_forgets_messages_that_left_the_history() -> None:
    counter = TiktokenCounter()
    for turn in range(40):
        window = [HumanMessage(f"turn {turn} message {n}", id=f"{turn}-{n}") for n in range(100)]
        counter.count_messages(window)
    assert len(counter._by_id) <= 2 * 100 + 1_024
