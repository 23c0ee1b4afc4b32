"""Atomic blocks and cut points."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxfs._policy._budget import KeepWindow
from ctxfs._summary._cut import Block, choose_cut, prefix_end, split_blocks
from ctxfs._summary._message import SummaryState, build_summary_message


def call(*ids: str) -> AIMessage:
    calls: list[Any] = [{"name": "bash", "args": {"command": i}, "id": i} for i in ids]
    return AIMessage(content="", tool_calls=calls)


def result(call_id: str) -> ToolMessage:
    return ToolMessage(f"out {call_id}", tool_call_id=call_id, name="bash")


def spans(messages: list[BaseMessage]) -> list[tuple[int, int, str]]:
    return [(b.start, b.stop, b.kind) for b in split_blocks(messages)]


def summary() -> HumanMessage:
    state = SummaryState(next_index=5, transcripts=("/transcripts/t/segment-0001.md",))
    return build_summary_message(
        body=("intent", "summary", "next"),
        message_id="s1",
        state=state,
        first_index=1,
        transcript_dir="/transcripts/t",
        source="extractive",
    )


def test_system_prefix_and_plain_messages() -> None:
    history: list[BaseMessage] = [
        SystemMessage("a"),
        SystemMessage("b"),
        HumanMessage("hi"),
        AIMessage("hello"),
    ]
    assert spans(history) == [(0, 2, "system"), (2, 3, "message"), (3, 4, "message")]


def test_parallel_calls_with_results_out_of_order_form_one_block() -> None:
    history: list[BaseMessage] = [HumanMessage("go"), call("a", "b"), result("b"), result("a")]
    assert spans(history) == [(0, 1, "message"), (1, 4, "tool_exchange")]


def test_results_interleaved_across_ai_messages_merge_until_every_call_is_covered() -> None:
    history: list[BaseMessage] = [
        HumanMessage("go"),
        call("a", "b"),
        call("c"),
        result("a"),
        result("c"),
        result("b"),
        AIMessage("done"),
    ]
    assert spans(history) == [(0, 1, "message"), (1, 6, "tool_exchange"), (6, 7, "message")]


def test_a_message_between_a_call_and_its_last_result_stays_inside_the_block() -> None:
    history: list[BaseMessage] = [call("a", "b"), result("a"), HumanMessage("hurry"), result("b")]
    assert spans(history) == [(0, 4, "tool_exchange")]


def test_an_unanswered_last_call_is_its_own_block() -> None:
    history: list[BaseMessage] = [HumanMessage("go"), call("a"), result("a"), call("z")]
    blocks = split_blocks(history)
    assert blocks[-1] == Block(3, 4, "tool_exchange", unanswered=("z",))
    assert blocks[1] == Block(1, 3, "tool_exchange")


def test_an_unanswered_call_does_not_hold_later_messages_hostage() -> None:
    history: list[BaseMessage] = [call("a", "x"), result("a"), call("b"), result("b")]
    blocks = split_blocks(history)
    assert [(b.start, b.stop, b.unanswered) for b in blocks] == [(0, 2, ("x",)), (2, 4, ())]


def test_an_orphan_result_joins_the_block_before_it() -> None:
    history: list[BaseMessage] = [SystemMessage("s"), HumanMessage("go"), result("ghost")]
    assert split_blocks(history)[1] == Block(1, 3, "message", orphans=(2,))


def test_an_orphan_result_right_after_the_system_prompt_is_its_own_block() -> None:
    history: list[BaseMessage] = [SystemMessage("s"), result("ghost"), HumanMessage("go")]
    assert split_blocks(history)[1] == Block(1, 2, "message", orphans=(1,))


def test_duplicate_ids_pair_in_order() -> None:
    history: list[BaseMessage] = [call("x"), result("x"), call("x"), result("x")]
    assert spans(history) == [(0, 2, "tool_exchange"), (2, 4, "tool_exchange")]


def test_a_leading_summary_is_part_of_the_prefix() -> None:
    history: list[BaseMessage] = [SystemMessage("s"), summary(), HumanMessage("go")]
    blocks = split_blocks(history)
    assert [b.kind for b in blocks] == ["system", "summary", "message"]
    assert prefix_end(blocks) == 2


def test_a_summary_elsewhere_is_an_ordinary_message() -> None:
    history: list[BaseMessage] = [HumanMessage("go"), summary()]
    assert [b.kind for b in split_blocks(history)] == ["message", "message"]


def test_blocks_cover_every_index_once() -> None:
    history: list[BaseMessage] = [
        SystemMessage("s"),
        result("orphan"),
        call("a", "b"),
        HumanMessage("?"),
        result("b"),
        call("c"),
        result("a"),
        result("c"),
        call("q"),
    ]
    blocks = split_blocks(history)
    covered = [i for b in blocks for i in range(b.start, b.stop)]
    assert covered == list(range(len(history)))


# -- cut points -----------------------------------------------------------------------------

HISTORY: list[BaseMessage] = [
    SystemMessage("s"),  # 0
    HumanMessage("go"),  # 1
    call("a", "b"),  # 2
    result("a"),  # 3
    result("b"),  # 4
    AIMessage("ok"),  # 5
    HumanMessage("more"),  # 6
    call("c"),  # 7
    result("c"),  # 8
]
TOKENS = [10, 5, 20, 30, 40, 5, 5, 20, 30]


def test_keep_messages_widens_to_a_whole_block() -> None:
    blocks = split_blocks(HISTORY)
    assert choose_cut(blocks, TOKENS, KeepWindow(messages=1)) == 7  # never splits 7-8
    assert choose_cut(blocks, TOKENS, KeepWindow(messages=2)) == 7
    assert choose_cut(blocks, TOKENS, KeepWindow(messages=5)) == 2  # 4 is inside 2-4
    assert choose_cut(blocks, TOKENS, KeepWindow(messages=0)) == 9
    assert choose_cut(blocks, TOKENS, KeepWindow(messages=100)) == 1  # the prefix stays


def test_keep_tokens_takes_whole_recent_blocks_within_the_budget() -> None:
    blocks = split_blocks(HISTORY)
    assert choose_cut(blocks, TOKENS, KeepWindow(tokens=55)) == 6
    assert choose_cut(blocks, TOKENS, KeepWindow(tokens=60)) == 5
    assert choose_cut(blocks, TOKENS, KeepWindow(tokens=1_000)) == 1


def test_keep_tokens_always_keeps_the_most_recent_block() -> None:
    blocks = split_blocks(HISTORY)
    assert choose_cut(blocks, TOKENS, KeepWindow(tokens=1)) == 7


def test_nothing_to_cut_returns_the_prefix_end() -> None:
    history: list[BaseMessage] = [SystemMessage("s"), summary()]
    blocks = split_blocks(history)
    assert choose_cut(blocks, [1, 1], KeepWindow(tokens=1)) == 2
    assert choose_cut([], [], KeepWindow(messages=3)) == 0
