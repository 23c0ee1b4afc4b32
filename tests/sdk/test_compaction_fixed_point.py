"""Compacting a compaction's result changes nothing: cases the properties found at random.

Each history is one the compaction properties drew (shrunk by hypothesis, the texts kept
as drawn: their token counts are what makes each case), replayed as an agent loop would
(:func:`_runs.replay` checks every compaction: invariants, input untouched, idempotent).
Each failed before the fix its test names.
"""

from __future__ import annotations

import itertools
from typing import Any

from _runs import fresh_engine, replay
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from ctxfs import ContextPolicy, Summarized

_fresh = itertools.count()


def _call(call_id: str, name: str = "bash", **args: str) -> dict[str, Any]:
    return {"name": name, "args": args or {"command": ""}, "id": call_id, "type": "tool_call"}


def _result(call_id: str, name: str = "bash", content: str = "", mid: str = "") -> ToolMessage:
    return ToolMessage(content=content, name=name, id=mid, tool_call_id=call_id)


def _turns(first: int, last: int) -> list[BaseMessage]:
    """Empty user turns and empty answers, ``h<first>``..``a<last>``."""
    out: list[BaseMessage] = []
    for n in range(first, last + 1):
        out += [HumanMessage("", id=f"h{n}"), AIMessage("", id=f"a{n}")]
    return out


def _writes(message_id: str, call_id: str, line: str, lines: int) -> AIMessage:
    """An answer that writes ``lines`` numbered copies of ``line`` to a file."""
    content = "\n".join(f"{line} {n}" for n in range(lines))
    call = _call(call_id, "write_file", file_path="/src/a.py", content=content)
    return AIMessage("", id=message_id, tool_calls=[call])


def _call_pair(first: AIMessage, turn: int, second_call: str) -> list[BaseMessage]:
    """``first`` (one call), a second answer with one ``bash`` call, then both results."""
    (call,) = first.tool_calls
    second = AIMessage("", id=f"b{turn}", tool_calls=[_call(second_call)])
    answered = _result(str(call["id"]), call["name"], mid=f"t{turn}_0")
    return [first, second, answered, _result(second_call, mid=f"t{turn}_1")]


def _system() -> SystemMessage:
    return SystemMessage("You are a coding agent.", id="sys")


def _replayed(history: list[BaseMessage], policy: ContextPolicy) -> list[list[Any]]:
    """The events of every compaction of the replay (each checked by ``replay``)."""
    _, results = replay(fresh_engine(policy, f"fixed{next(_fresh)}"), history, "t")
    return [list(r.events) for r in results]


def test_after_a_summary_the_lossless_steps_run_as_the_next_compaction_would_choose_them() -> None:
    # A summary fired by the messages trigger below the high-water mark left the request
    # above it (the summary and its pins added); the steps re-run after it were those of a
    # request below the mark, and the next compaction offloaded an input the first had not.
    heavy = "0:0:\U00013380" * 2 + "0:0:0:\U00013380" + "0\U00013380\U00013380"
    history = [
        _system(),
        *_turns(0, 2)[:-1],
        AIMessage("", id="a2"),
        HumanMessage("", id="h3"),
        AIMessage("", id="a3", tool_calls=[_call("call_0"), _call("call_1")]),
        AIMessage("", id="b3", tool_calls=[_call("call_0", command=heavy)]),
        _result("call_0", mid="t3_0"),
        _result("call_1", mid="t3_1"),
        _result("call_0", mid="t3_2"),
    ]
    history[3] = HumanMessage("0", id="h1")
    policy = ContextPolicy(
        max_input_tokens=744,
        tool_results={"threshold": {"tokens": 5}},
        tool_inputs={"trigger": {"tokens": 1}, "keep_messages": 0, "min_chars": 1},
        summarization={"trigger": {"fraction": 0.5, "messages": 6}, "keep": {"messages": 1}},
    )
    events = _replayed(history, policy)
    assert any(isinstance(e, Summarized) for run in events for e in run)


def test_a_summary_never_leaves_the_request_over_its_limit_and_no_smaller() -> None:
    # The first compaction brought the request within its limit by opening the recent
    # window; the next one summarized on its triggers and went from 94 tokens to 274, over
    # the limit of 240. Later, over the limit, a summary on the messages trigger grew it.
    line = "0:\x1f0\u0802\U0002ee5e\x1f0:0\x1f0:0\U00010740\U00018cd6\x1f\U00010000\U0001a340"
    history = [
        _system(),
        HumanMessage("", id="h0"),
        *_call_pair(AIMessage("", id="a0", tool_calls=[_call("call_0")]), 0, "call_1"),
        HumanMessage("", id="h1"),
        *_call_pair(_writes("a1", "call_2", line, 5), 1, "call_3"),
        *_turns(2, 6),
    ]
    policy = ContextPolicy(
        max_input_tokens=300,
        tool_results={"threshold": {"tokens": 5}},
        tool_inputs={"trigger": {"tokens": 1}, "keep_messages": 1, "min_chars": 1},
        summarization={
            "trigger": {"fraction": 1.0, "tokens": 90, "messages": 8},
            "keep": {"messages": 1},
        },
    )
    limit = policy.request_limit_tokens
    summaries = [e for run in _replayed(history, policy) for e in run if isinstance(e, Summarized)]
    assert summaries  # the messages trigger still summarizes
    assert all(e.tokens_after <= max(limit, e.tokens_before - 1) for e in summaries)


def test_once_the_recent_window_is_opened_the_summary_is_weighed_as_the_next_compaction_would() -> (
    None
):
    # Over its limit, the summary was not made (the kept part alone was over it); opening
    # the recent window brought the request within it, and the compaction stopped there:
    # the next one then summarized on the messages trigger.
    line = "0:0\x1f\x1f0\x1f\u0f80\U0001014e"
    history = [
        _system(),
        HumanMessage("", id="h0"),
        *_call_pair(_writes("a0", "call_0", line, 11), 0, "call_1"),
        *_turns(1, 6),
    ]
    policy = ContextPolicy(
        max_input_tokens=300,
        high_water={"tokens": 300},
        low_water={"tokens": 1},
        tool_results={"threshold": {"tokens": 5}},
        tool_inputs={"trigger": None, "keep_messages": 0, "min_chars": 1},
        clearing={"enabled": False},
        summarization={"trigger": {"messages": 2}, "keep": {"messages": 1}},
    )
    _replayed(history, policy)


def test_a_high_water_mark_set_above_the_request_limit_fires_at_the_limit() -> None:
    # An explicit mark at the window left the requests between the limit and the window
    # to the last resort (the recent window opened) instead of a compaction.
    policy = ContextPolicy(
        max_input_tokens=567,
        high_water={"tokens": 567},
        low_water={"tokens": 1},
        summarization={"enabled": False},
    )
    assert policy.high_water_tokens == policy.request_limit_tokens < 567
    # the low-water mark comes down in proportion, so the gap between the marks stays
    wide = ContextPolicy(
        max_input_tokens=100_000,
        high_water={"tokens": 150_000},
        low_water={"tokens": 120_000},
        summarization={"enabled": False},
    )
    limit = wide.request_limit_tokens
    assert (wide.high_water_tokens, wide.low_water_tokens) == (limit, 120_000 * limit // 150_000)
