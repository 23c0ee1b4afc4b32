"""Compactions at the high-water mark as properties: one prefix change per compaction,
append-only history in between, and the lossless invariants with generic input offload.

The policies here leave both lossless steps to the water marks (no explicit step trigger),
so every change to the history is a compaction that the high-water mark (or a summarization
trigger) fired; the other property modules cover explicit step triggers."""

from __future__ import annotations

import itertools
from typing import Any

from _histories import comparable, resolve
from _runs import fresh_engine, reconstruct, replay, runs, summary_policies
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxfs import (
    CompactionResult,
    ContextPolicy,
    PrefixChanged,
    Summarized,
    ToolInputOffloaded,
)
from ctxfs._pointers._pointer import input_pointers

_fresh = itertools.count()
_PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def water_mark_policies(draw: st.DrawFn) -> ContextPolicy:
    """Small windows, water marks of either kind, both lossless steps on at the marks."""
    base = draw(summary_policies())
    window = base.max_input_tokens
    assert window is not None
    high = draw(st.floats(min_value=0.2, max_value=1.0))
    low = draw(st.floats(min_value=0.0, max_value=0.95)) * high
    marks: dict[str, Any]
    if draw(st.booleans()):
        marks = {"high_water": {"fraction": high}, "low_water": {"fraction": max(low, 1e-3)}}
        if marks["low_water"]["fraction"] >= high:
            marks["low_water"]["fraction"] = high / 2
    else:
        top = max(2, int(high * window))
        marks = {
            "high_water": {"tokens": top},
            "low_water": {"tokens": max(1, min(top - 1, int(low * window)))},
        }
    summarization = base.summarization
    if draw(st.booleans()):
        summarization = summarization.model_copy(update={"enabled": False})
    return ContextPolicy(
        max_input_tokens=window,
        tool_results=base.tool_results,
        tool_inputs={**base.tool_inputs.model_dump(), "trigger": None},
        clearing={
            "enabled": draw(st.booleans()),
            "trigger": None,
            "keep": {"results": draw(st.integers(min_value=0, max_value=3))},
            "min_tokens": draw(st.integers(min_value=1, max_value=60)),
        },
        summarization=summarization,
        **marks,
    )


def _fires(policy: ContextPolicy, before: list[BaseMessage], result: CompactionResult) -> bool:
    """Whether this call was a compaction: the high-water mark, or a summarization trigger
    (a ``messages`` one fires below the mark)."""
    request = result.tokens_before + result.fixed_tokens
    return request >= policy.high_water_tokens or policy.summary_fires(request, len(before))


@_PROPERTY
@given(history=runs(), policy=water_mark_policies())
def test_one_prefix_change_per_compaction_and_append_only_in_between(
    history: list[BaseMessage], policy: ContextPolicy
) -> None:
    engine = fresh_engine(policy, f"wm{next(_fresh)}")
    inputs: list[list[BaseMessage]] = []

    state: list[BaseMessage] = []
    results: list[CompactionResult] = []
    for message in [*history, None]:
        if message is None or (isinstance(message, AIMessage) and state):
            result = engine.compact(state, thread_id="t")
            inputs.append(state)
            results.append(result)
            state = result.messages
        if message is None:
            break
        if isinstance(message, ToolMessage):
            message = engine.offload_tool_result(message, thread_id="t")
        state = [*state, message]
    breaks = 0
    for before, result in zip(inputs, results, strict=True):
        changed = [e for e in result.events if isinstance(e, PrefixChanged)]
        assert len(changed) <= 1, "one compaction changed the prefix more than once"
        if result.messages == before:
            assert not changed
            continue
        # the history changed: only a compaction changes it, and it does so at one point
        assert _fires(policy, before, result), "the history changed between compactions"
        (first,) = changed
        assert result.messages[: first.first_changed] == before[: first.first_changed]
        breaks += 1
        summarized = any(isinstance(e, Summarized) for e in result.events)
        reached = result.tokens_after + result.fixed_tokens <= policy.summary_water_tokens
        # a compaction at the mark frees down to the low-water mark (at least to halfway to
        # it), or summarizes when it is on (unless nothing is left to summarize: then the
        # result is within its target, or says why not)
        off = not policy.summarization.enabled
        assert reached or summarized or off or result.reached_target or result.reason
        event(f"summarized: {summarized}")
    event(f"compactions: {min(breaks, 3)}+")


@_PROPERTY
@given(history=runs(), policy=water_mark_policies(), thread_id=st.sampled_from(["t", "ü/x"]))
def test_generic_input_offload_at_the_marks_loses_nothing_and_keeps_pairs(
    history: list[BaseMessage], policy: ContextPolicy, thread_id: str
) -> None:
    engine = fresh_engine(policy, f"wi{next(_fresh)}")
    state, results = replay(engine, history, thread_id)  # pairing, order, idempotence
    moved = [e for r in results for e in r.events if isinstance(e, ToolInputOffloaded)]
    event(f"inputs moved: {bool(moved)}")
    event(f"tools: {sorted({e.tool_name for e in moved})}")
    # every argument moved reads back byte-exact, whatever tool it belonged to
    for message in state:
        for (index, arg), pointer in input_pointers(message).items():
            assert isinstance(message, AIMessage)
            original = next(m for m in history if m.id == message.id)
            assert isinstance(original, AIMessage)
            value = original.tool_calls[index]["args"][arg]
            assert engine.workspace.read_text(pointer.path) == value
    resolved = resolve(state, engine.workspace)
    for message in resolved:
        if isinstance(message, AIMessage):
            original = next(m for m in history if m.id == message.id)
            assert comparable(message) == comparable(original)
    # archived segments + kept messages, pointers resolved, give the history back
    assert reconstruct(engine, state, thread_id) == [comparable(m) for m in history]
