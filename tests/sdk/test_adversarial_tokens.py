"""The token counter's record of a history against a fresh count, after any edit sequence.

The counter keeps, per history, private copies of what each message was counted on, and
documents that a message edited in place is seen by :meth:`count_messages`. Here generated
histories of odd messages (content block lists, nested tool arguments, invalid tool calls,
no ids, duplicate ids) go through generated edits: appends, replacements, insertions and
deletions in the middle, reloads from a checkpoint, and edits in place at every depth, with
single messages counted in between (which fills the per-object cache). After each, the
total and the per-message record equal what a fresh counter says.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
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

_WORDS = st.text(st.sampled_from("ab é中😀\n"), max_size=12)
_IDS = st.one_of(st.none(), st.sampled_from(["m1", "m2", "m3"]))  # none, or shared


@st.composite
def _messages(draw: st.DrawFn) -> BaseMessage:
    kind = draw(st.sampled_from(["human", "blocks", "ai", "invalid", "tool"]))
    mid = draw(_IDS)
    if kind == "human":
        return HumanMessage(draw(_WORDS), id=mid)
    if kind == "blocks":
        blocks: list[Any] = [{"type": "text", "text": draw(_WORDS)}, draw(_WORDS)]
        return HumanMessage(blocks, id=mid)
    if kind == "ai":
        args = {"path": draw(_WORDS), "opts": {"deep": draw(_WORDS), "list": [draw(_WORDS)]}}
        call = {"name": "tool", "args": args, "id": draw(st.sampled_from(["c1", "c2", ""]))}
        return AIMessage(draw(_WORDS), tool_calls=[call], id=mid)
    if kind == "invalid":
        bad = {"name": "tool", "args": draw(_WORDS), "id": "c9", "error": None}
        return AIMessage("", invalid_tool_calls=[bad], id=mid)
    return ToolMessage([{"type": "text", "text": draw(_WORDS)}], tool_call_id="c1", id=mid)


def _deep_edit(message: BaseMessage, text: str) -> None:
    """Changes ``message`` in place, as deep as it goes."""
    if isinstance(message, AIMessage) and message.tool_calls:
        message.tool_calls[0]["args"]["opts"]["deep"] += text
        message.tool_calls[0]["args"]["opts"]["list"].append(text)
    elif isinstance(message, AIMessage) and message.invalid_tool_calls:
        message.invalid_tool_calls[0]["args"] = (message.invalid_tool_calls[0]["args"] or "") + text
    elif isinstance(message.content, list):
        block = message.content[0]
        if isinstance(block, dict):
            block["text"] += text
        else:
            message.content[0] = f"{block}{text}"
    else:
        message.content = f"{message.content}{text}"


_EDITS = st.lists(
    st.tuples(
        st.sampled_from(
            ["append", "replace", "insert", "delete", "drop", "reload", "deep", "count_one"]
        ),
        st.integers(0, 30),
        _messages(),
        _WORDS.filter(bool),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(start=st.lists(_messages(), min_size=1, max_size=8), edits=_EDITS, tiktoken=st.booleans())
def test_the_record_equals_a_fresh_count_after_any_edits(
    start: list[BaseMessage], edits: list[tuple[str, int, BaseMessage, str]], tiktoken: bool
) -> None:
    def make() -> TiktokenCounter | CallableTokenCounter:
        return TiktokenCounter() if tiktoken else CallableTokenCounter(lambda t: len(t))

    counter = make()
    history = [copy.deepcopy(m) for m in start]
    counter.count_messages(history)
    for edit, at, message, text in edits:
        at %= len(history)
        if edit == "append":
            history.append(message)
        elif edit == "replace":
            history[at] = message
        elif edit == "insert":
            history.insert(at, message)
        elif edit == "delete" and len(history) > 1:
            del history[at]
        elif edit == "drop":
            history = history[: at + 1]
        elif edit == "reload":
            history = messages_from_dict(messages_to_dict(history))
        elif edit == "deep":
            _deep_edit(history[at], text)
        elif edit == "count_one":
            counter.count_message(history[at])
            _deep_edit(history[at], text)
        fresh = make()
        assert counter.count_messages(history) == fresh.count_messages(history)
        tokens, _ = counter._record_of(history)
        assert tokens == [fresh.count_message(m) for m in history]


def test_an_edit_inside_a_content_block_is_counted() -> None:
    counter = TiktokenCounter()
    history: list[BaseMessage] = [HumanMessage([{"type": "text", "text": "hello"}], id="h")]
    counter.count_messages(history)
    history[0].content[0]["text"] = "hello " * 50  # type: ignore[index]
    assert counter.count_messages(history) == TiktokenCounter().count_messages(history)


def test_an_edit_inside_a_tool_argument_is_counted() -> None:
    counter = TiktokenCounter()
    call = {"name": "f", "args": {"a": {"b": "x"}}, "id": "1"}
    history: list[BaseMessage] = [AIMessage("", tool_calls=[call], id="a")]
    counter.count_messages(history)
    history[0].tool_calls[0]["args"]["a"]["b"] = "y " * 100  # type: ignore[attr-defined]
    assert counter.count_messages(history) == TiktokenCounter().count_messages(history)


def test_openai_s_legacy_function_call_is_counted_and_an_edit_to_it_seen() -> None:
    # LangChain's OpenAI integration keeps a legacy function call in additional_kwargs and
    # sends it as it is: 5,000 words of arguments are in the request, not 4 tokens.
    arguments = '{"text": "' + "word " * 5_000 + '"}'
    call = {"name": "run", "arguments": arguments}
    message = AIMessage("", additional_kwargs={"function_call": call}, id="a")
    counter = TiktokenCounter()
    bare = counter.count_message(AIMessage("", id="b"))
    assert counter.count_message(message) >= bare + 5_000
    history: list[BaseMessage] = [HumanMessage("go", id="h"), message]
    total = counter.count_messages(history)
    # a message of the same id and content but other arguments is counted anew
    shorter = AIMessage("", additional_kwargs={"function_call": {"name": "run"}}, id="a")
    assert counter.count_messages([history[0], shorter]) < total - 5_000
    assert counter.count_message(shorter) == TiktokenCounter().count_message(shorter)


def test_a_legacy_function_call_at_a_position_counted_before_is_counted() -> None:
    # The per-turn check compares each position with what was counted there: an answer with
    # only a legacy function call looks like an empty answer to content and tool calls alone
    counter = TiktokenCounter()
    head: list[BaseMessage] = [HumanMessage("go", id="h")]
    counter.count_messages([*head, AIMessage("", id="a1")])
    call = {"name": "run", "arguments": "word " * 5_000}
    legacy = AIMessage("", additional_kwargs={"function_call": call}, id="a2")
    assert counter.count_messages([*head, legacy]) == TiktokenCounter().count_messages(
        [*head, legacy]
    )
