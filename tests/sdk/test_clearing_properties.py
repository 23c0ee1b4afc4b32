"""Clearing (step 3) as properties: no loss, pairing, order, determinism, idempotence,
stickiness, re-reads that save nothing, and long runs."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from typing import Any

import pytest
from _histories import comparable, snapshot
from _runs import fresh_engine, reconstruct, replay, runs, summary_policies
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxfs import (
    CompactionResult,
    ContextEngine,
    ContextPolicy,
    Summarized,
    ToolResultCleared,
    pointer_of,
    resolve_pointers,
)
from ctxfs.tools import tool_functions

_fresh = itertools.count()
_PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def clearing_policies(draw: st.DrawFn) -> ContextPolicy:
    """The summarization policies of the compaction properties, with clearing on."""
    base = draw(summary_policies())
    window = base.max_input_tokens
    keep = draw(
        st.sampled_from(
            [
                {"results": draw(st.integers(min_value=0, max_value=4))},
                {"tokens": draw(st.integers(min_value=1, max_value=window))},
            ]
        )
    )
    return ContextPolicy(
        max_input_tokens=window,
        tool_results=base.tool_results,
        tool_inputs=base.tool_inputs,
        summarization=base.summarization,
        clearing={
            "enabled": True,
            "trigger": draw(st.sampled_from([{"tokens": 1}, {"fraction": 0.2}, {"fraction": 1.0}])),
            "keep": keep,
            "min_tokens": draw(st.integers(min_value=1, max_value=80)),
            "clear_at_least": {"tokens": draw(st.integers(min_value=1, max_value=400))},
            "frees_per_rewrite": draw(st.sampled_from([0.0, 0.5, 2.0])),
        },
    )


def _replay(
    engine: ContextEngine, history: Sequence[BaseMessage], thread_id: str, *, check: bool = True
) -> tuple[list[BaseMessage], list[CompactionResult]]:
    """The agent loop of the compaction properties, also checking that clearing is sticky:
    a cleared result keeps its exact pointer text until it is archived, and never comes back."""
    cleared: dict[str | None, Any] = {}

    def sticky(result: CompactionResult, again: CompactionResult) -> None:
        assert not any(isinstance(e, ToolResultCleared) for e in again.events)
        for message in result.messages:
            held = pointer_of(message)
            if held is not None and held.kind in ("cleared", "reread"):
                text = message.content
                assert cleared.setdefault(message.id, text) == text, "pointer rewritten"
            elif message.id in cleared:
                raise AssertionError(f"{message.id} was restored after clearing")

    return replay(engine, history, thread_id, check=check, also_check=sticky)


@_PROPERTY
@given(history=runs(), policy=clearing_policies(), thread_id=st.sampled_from(["t", "ü/x", ""]))
def test_no_loss_pairing_order_idempotence_and_stickiness(
    history: list[BaseMessage], policy: ContextPolicy, thread_id: str
) -> None:
    engine = fresh_engine(policy, f"cp{next(_fresh)}")
    snapshot_before = [m.model_dump() for m in history]
    state, results = _replay(engine, history, thread_id)  # pairing, order, budget, stickiness
    events = [e for r in results for e in r.events]
    event(f"cleared: {any(isinstance(e, ToolResultCleared) for e in events)}")
    event(f"summarized: {any(isinstance(e, Summarized) for e in events)}")
    # archived segments + kept messages, every pointer resolved, give the history back
    assert reconstruct(engine, state, thread_id) == [comparable(m) for m in history]
    assert [m.model_dump() for m in history] == snapshot_before


@_PROPERTY
@given(history=runs(), policy=clearing_policies())
def test_same_input_same_output_same_files(
    history: list[BaseMessage], policy: ContextPolicy
) -> None:
    one = fresh_engine(policy, f"cd{next(_fresh)}")
    two = fresh_engine(policy, f"cd{next(_fresh)}")
    state_one, results_one = _replay(one, history, "t", check=False)
    state_two, results_two = _replay(two, history, "t", check=False)
    assert state_one == state_two
    assert [r.events for r in results_one] == [r.events for r in results_two]
    files = snapshot(one.workspace)
    assert files == snapshot(two.workspace)
    # clearing the result again (e.g. after a crash-resume) rewrites and adds nothing
    again = one.clear_tool_results(state_one, thread_id="t")
    assert again.messages == state_one and snapshot(one.workspace) == files


# -- re-reads of offloaded files ------------------------------------------------------------


@st.composite
def reread_runs(draw: st.DrawFn) -> tuple[list[BaseMessage], list[tuple[int, int]]]:
    """Large results, then read_file calls paging through the files they were offloaded to.

    Returns the results' texts and (offset, limit) pages; the messages are built in the test,
    where the offloaded paths are known."""
    n = draw(st.integers(min_value=1, max_value=3))
    words = st.sampled_from(["ok", "é", "中", "a\tb"])
    texts = ["".join(f"{draw(words)} {k} {i}\n" for i in range(80)) for k in range(n)]
    pages = draw(
        st.lists(
            st.tuples(
                st.integers(min_value=0, max_value=90), st.integers(min_value=1, max_value=60)
            ),
            min_size=1,
            max_size=4,
        )
    )
    return [HumanMessage(t) for t in texts], pages


@_PROPERTY
@given(data=reread_runs(), keep=st.integers(min_value=0, max_value=2))
def test_reading_offloaded_files_back_is_cleared_without_a_new_file(
    data: tuple[list[BaseMessage], list[tuple[int, int]]], keep: int
) -> None:
    texts = [str(m.content) for m in data[0]]
    policy = ContextPolicy(
        max_input_tokens=50_000,
        tool_results={"threshold": {"tokens": 100}},
        clearing={
            "enabled": True,
            "trigger": {"tokens": 1},
            "keep": {"results": keep},
            "min_tokens": 1,
            "clear_at_least": {"tokens": 1},
            "frees_per_rewrite": 0.0,
        },
    )
    engine = fresh_engine(policy, f"rr{next(_fresh)}")
    messages: list[BaseMessage] = [SystemMessage("agent", id="sys")]
    saved: list[str] = []
    for k, text in enumerate(texts):
        call: Any = {"name": "bash", "args": {"command": f"job {k}"}, "id": f"b{k}"}
        messages.append(AIMessage("", tool_calls=[call], id=f"ab{k}"))
        result = ToolMessage(text, tool_call_id=f"b{k}", name="bash", id=f"tb{k}")
        pointer = engine.offload_tool_result(result, thread_id="t")
        held = pointer_of(pointer)
        assert held is not None
        saved.append(held.path)
        messages.append(pointer)
    read_file = {f.name: f for f in tool_functions(engine.workspace)}["read_file"]
    reads: dict[str, tuple[dict[str, Any], str]] = {}
    for j, (offset, limit) in enumerate(data[1]):
        args = {"file_path": saved[j % len(saved)], "offset": offset, "limit": limit}
        page = read_file(**args)
        messages.append(
            AIMessage(
                "", tool_calls=[{"name": "read_file", "args": args, "id": f"r{j}"}], id=f"ar{j}"
            )
        )
        messages.append(ToolMessage(page, tool_call_id=f"r{j}", name="read_file", id=f"tr{j}"))
        reads[f"r{j}"] = (args, page)
    files = snapshot(engine.workspace)
    out = engine.clear_tool_results(messages, thread_id="t")
    assert snapshot(engine.workspace) == files  # not one new file
    for message in out.messages:
        if not isinstance(message, ToolMessage) or message.tool_call_id not in reads:
            continue
        args, page = reads[message.tool_call_id]
        text = str(message.content)
        held = pointer_of(message)
        if held is not None:
            event("a re-read was cleared")
            assert (held.kind, held.path) == ("reread", args["file_path"])
            assert read_file(**args) == page  # repeating the call shows it byte-exact
            assert resolve_pointers([message], engine.workspace)[0].content == page
        else:
            assert text == page  # kept (window, or too small to be worth a pointer)
    kinds = {e.kind for e in out.events if isinstance(e, ToolResultCleared)}
    assert kinds <= {"offloaded", "reread"}


# -- fewer summaries on long runs -----------------------------------------------------------


def _long_run(seed: int, turns: int) -> list[BaseMessage]:
    rng = random.Random(seed)
    messages: list[BaseMessage] = [SystemMessage("You are a coding agent.", id="sys")]
    messages.append(HumanMessage("Fix the failing build.", id="h0"))
    for n in range(turns):
        lines = rng.randint(5, 90)
        output = "".join(
            f"{n}:{i} {rng.choice(['PASS', 'FAIL', 'warn'])} x{rng.random():.6f}\n"
            for i in range(lines)
        )
        call: Any = {
            "name": rng.choice(["bash", "read_file", "grep"]),
            "args": {"q": f"s{n}"},
            "id": f"c{n}",
        }
        messages.append(
            AIMessage(
                f"step {n}: " + "thinking " * rng.randint(1, 20), tool_calls=[call], id=f"a{n}"
            )
        )
        messages.append(ToolMessage(output, tool_call_id=f"c{n}", name=call["name"], id=f"t{n}"))
        if rng.random() < 0.05:
            messages.append(HumanMessage(f"also check module {n}", id=f"h{n + 1}"))
    messages.append(AIMessage("Done.", id="final"))
    return messages


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(min_value=0, max_value=10**6), turns=st.integers(min_value=80, max_value=140)
)
def test_clearing_on_long_runs_keeps_the_window_intact_and_loses_nothing(
    seed: int, turns: int
) -> None:
    history = _long_run(seed, turns)
    window, keep = 6_000, 4
    plain = ContextPolicy(max_input_tokens=window, clearing={"enabled": False})
    clearing = ContextPolicy(
        max_input_tokens=window, clearing={"enabled": True, "keep": {"results": keep}}
    )
    off = fresh_engine(plain, f"fs{next(_fresh)}")
    on = fresh_engine(clearing, f"fs{next(_fresh)}")
    _, results_off = _replay(off, history, "t", check=False)
    state_on, results_on = _replay(on, history, "t")
    summaries_off = sum(isinstance(e, Summarized) for r in results_off for e in r.events)
    summaries_on = sum(isinstance(e, Summarized) for r in results_on for e in r.events)
    assert summaries_off >= 3
    event(f"summaries with clearing - without: {summaries_on - summaries_off}")
    # clearing takes part (whether a compaction also summarizes depends on what is left)
    assert any(isinstance(e, ToolResultCleared) for r in results_on for e in r.events)
    # the kept window is intact after every compaction: the last `keep` results as they came
    originals = {m.id: m for m in history}
    for result in results_on:
        recent = [m for m in result.messages if isinstance(m, ToolMessage)][-keep:]
        assert all(m.content == originals[m.id].content for m in recent)
    assert reconstruct(on, state_on, "t") == [comparable(m) for m in history]
