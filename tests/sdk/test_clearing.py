"""Clearing old tool results (step 3): pinned pointer texts, kinds, batching, stickiness."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from _histories import snapshot
from _runs import fixed_clock
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import ValidationError

from ctxfs import (
    ContextEngine,
    ContextPolicy,
    KeepToolResults,
    OffloadFailed,
    PrefixChanged,
    Summarized,
    Threshold,
    ToolInputOffloaded,
    ToolResultCleared,
    ToolResultClearing,
    ToolResultOffloaded,
    Workspace,
    pointer_of,
    resolve_pointers,
)
from ctxfs._compaction._clearing import batch_goes
from ctxfs._layout import result_path
from ctxfs._pointers._pointer import CLEARED_TAG, brief_call, count_lines, head_line
from ctxfs._policy._budget import Budget
from ctxfs.tools import tool_functions

_fresh = itertools.count()
THREAD = "t"


def output(n: int, lines: int = 60) -> str:
    return "".join(f"output {n} line {i}: some words here\n" for i in range(lines))


def turn(n: int, text: str | None = None, *, name: str = "bash") -> list[BaseMessage]:
    call: list[Any] = [{"name": name, "args": {"command": f"run {n}"}, "id": f"c{n}"}]
    return [
        AIMessage(f"step {n}", tool_calls=call, id=f"a{n}"),
        ToolMessage(
            text if text is not None else output(n),
            tool_call_id=f"c{n}",
            name=name,
            id=f"t{n}",
            status="error",
            artifact={"exit_code": 1},
        ),
    ]


def history(turns: int = 10) -> list[BaseMessage]:
    messages: list[BaseMessage] = [SystemMessage("You are an agent.", id="sys"), HumanMessage("go")]
    for n in range(turns):
        messages += turn(n)
    return messages


def policy(**clearing: Any) -> ContextPolicy:
    settings = {
        "enabled": True,
        "trigger": {"tokens": 1_000},
        "keep": {"results": 2},
        "min_tokens": 100,
        "clear_at_least": {"tokens": 100},
        "frees_per_rewrite": 0.0,  # batches go by their size alone, unless a test says
        **clearing,
    }
    return ContextPolicy(max_input_tokens=100_000, clearing=settings)


def engine(pol: ContextPolicy | None = None, ws: Workspace | None = None) -> ContextEngine:
    return ContextEngine(
        ws or Workspace(f"memory://clear{next(_fresh)}"), pol or policy(), clock=fixed_clock
    )


# -- defaults and settings ------------------------------------------------------------------


def test_clearing_is_on_by_default_with_documented_settings() -> None:
    pol = ContextPolicy(max_input_tokens=100_000)
    assert pol.clearing == ToolResultClearing()
    assert pol.clearing.enabled
    assert pol.clearing.keep == KeepToolResults(results=4)
    assert pol.clearing.min_tokens == 150
    assert pol.clearing.trigger == Threshold(fraction=0.1) and pol.tool_inputs.trigger is None
    assert pol.clearing.frees_per_rewrite == 0.5
    # between compactions both steps move in one batch from 10 % of the window, when it
    # frees at least 2 % of the window and half a token per token the cache writes again;
    # the compaction at the high-water mark, 80 % of the 95,904-token request budget,
    # frees down to the low-water mark, 35 % of it
    assert pol.request_limit_tokens == 95_904
    assert pol.clearing_trigger_tokens == pol.input_trigger_tokens == 10_000
    assert (pol.high_water_tokens, pol.low_water_tokens) == (76_723, 33_566)
    assert pol.summary_water_tokens == 33_566 + (76_723 - 33_566) // 2
    assert pol.clear_at_least_tokens == 2_000
    off = ContextPolicy(max_input_tokens=100_000, clearing={"enabled": False})
    assert off.input_trigger_tokens == 76_723


def test_clearing_never_triggers_later_than_summarization() -> None:
    pol = ContextPolicy(
        max_input_tokens=10_000,
        clearing={"enabled": True, "trigger": {"fraction": 1.0}},
        summarization={"trigger": {"tokens": 6_000}},
    )
    assert pol.clearing_trigger_tokens == 6_000


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"keep": {"results": 2, "tokens": 10}}, "set exactly one of results"),
        ({"keep": {"results": -1}}, "results must be a whole number"),
        ({"keep": {"fraction": 30}}, "write fraction=0.3"),
        ({"min_tokens": 0}, "min_tokens must be at least 1"),
        ({"clear_at_least": {"fraction": 0.1, "tokens": 5}}, "set either tokens or fraction"),
        ({"frees_per_rewrite": -1}, "frees_per_rewrite must be 0 or more"),
        ({"frees_per_rewrite": float("nan")}, "frees_per_rewrite must be 0 or more"),
        ({"exempt": ["bash"]}, "did you mean 'exempt_tools'?"),
    ],
)
def test_invalid_clearing_settings_say_what_to_write(
    settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(")):
        ContextPolicy(max_input_tokens=100_000, clearing=settings)


# -- pointer texts --------------------------------------------------------------------------


def test_the_cleared_pointer_text_is_pinned() -> None:
    eng = engine()
    messages = history(4)
    out = eng.clear_tool_results(messages, thread_id=THREAD)
    path = result_path(THREAD, "c0", output(0))
    assert out.messages[3].content == (
        f"{CLEARED_TAG} 60 lines, 660 tokens, saved to {path}; read_file or grep it. "
        "First line: output 0 line 0: some words here"
    )
    held = pointer_of(out.messages[3])
    assert held is not None and (held.kind, held.path) == ("cleared", path)
    assert eng.workspace.read_text(path) == output(0)


def test_brief_and_head_stay_on_one_short_line() -> None:
    args = {"command": "echo 'a'\nls\u2028-la " + "x" * 200, "n": 3}
    brief = brief_call("bash", args)
    assert "\n" not in brief and "\u2028" not in brief
    assert len(brief) <= 101 and brief.startswith("bash(command=\"echo 'a'\\nls -la xxx")
    assert brief_call(None, None) == "tool(?)"
    assert head_line("\n \n  first real line \r\nsecond") == "first real line"
    assert head_line("") == "(empty)"


# -- what is cleared ------------------------------------------------------------------------


def test_old_results_are_cleared_and_the_kept_window_is_intact() -> None:
    eng = engine()
    messages = history(8)
    out = eng.clear_tool_results(messages, thread_id=THREAD)
    results = [m for m in out.messages if isinstance(m, ToolMessage)]
    assert all(str(m.content).startswith(CLEARED_TAG) for m in results[:-2])
    assert results[-2:] == [m for m in messages if isinstance(m, ToolMessage)][-2:]
    assert out.tokens_after < out.tokens_before
    events = [e for e in out.events if isinstance(e, ToolResultCleared)]
    assert [e.tool_call_id for e in events] == [f"c{n}" for n in range(6)]
    first = events[0]
    assert first.kind == "saved" and first.tool_name == "bash"
    assert first.tokens == eng.token_counter.count_message(messages[3])
    assert first.tokens_after == eng.token_counter.count_message(out.messages[3])
    # id, tool_call_id, name, status and artifact survive; the input is not mutated
    cleared = out.messages[3]
    assert isinstance(cleared, ToolMessage)
    assert (cleared.id, cleared.tool_call_id, cleared.name, cleared.status, cleared.artifact) == (
        "t0",
        "c0",
        "bash",
        "error",
        {"exit_code": 1},
    )
    assert messages[3].content == output(0)
    assert out.changed


def test_unseen_results_are_kept_even_with_an_empty_window() -> None:
    messages = history(3)
    calls: list[Any] = [
        {"name": "bash", "args": {}, "id": "p1"},
        {"name": "bash", "args": {}, "id": "p2"},
    ]
    messages += [
        AIMessage("", tool_calls=calls, id="ap"),
        ToolMessage(output(7), tool_call_id="p1", name="bash", id="tp1"),
        ToolMessage(output(8), tool_call_id="p2", name="bash", id="tp2"),
    ]
    out = engine(policy(keep={"results": 0})).clear_tool_results(messages, thread_id=THREAD)
    assert [m.id for m in out.messages if str(m.content).startswith(CLEARED_TAG)] == [
        "t0",
        "t1",
        "t2",
    ]


def test_a_token_window_keeps_the_results_within_its_tokens() -> None:
    messages = history(6)
    eng = engine(policy(keep={"tokens": 1_500}))
    out = eng.clear_tool_results(messages, thread_id=THREAD)
    kept = [m.id for m in out.messages if isinstance(m, ToolMessage) and m in messages]
    counts = [eng.token_counter.count_message(m) for m in messages]
    for mid in kept:
        i = next(k for k, m in enumerate(messages) if m.id == mid)
        assert sum(counts[i:]) <= 1_500 or i == len(messages) - 1
    assert kept == ["t4", "t5"]


def test_exempt_small_and_undecodable_results_stay() -> None:
    messages = history(2)
    messages += turn(2, name="fetch")
    messages += turn(3, "short")
    # a payload that is not base64 cannot be decoded: it stays
    image: Any = [{"type": "image_url", "image_url": {"url": "https://example.com/x.png"}}]
    broken: Any = [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA*A"}}]
    messages += [
        AIMessage("", tool_calls=[{"name": "shot", "args": {}, "id": "c4"}], id="a4"),
        ToolMessage(image, tool_call_id="c4", name="shot", id="t4"),
        AIMessage("", tool_calls=[{"name": "shot", "args": {}, "id": "c5"}], id="a4b"),
        ToolMessage(broken, tool_call_id="c5", name="shot", id="t4b"),
    ]
    messages += turn(5) + turn(6)
    eng = engine(policy(exempt_tools=["fetch"]))
    out = eng.clear_tool_results(messages, thread_id=THREAD)
    cleared = {e.tool_call_id for e in out.events if isinstance(e, ToolResultCleared)}
    # an old image by URL is billed like any image: it is cleared, its block saved as JSON
    assert cleared == {"c0", "c1", "c4"}
    assert [m.content for m in out.messages if m.id == "t4b"] == [broken]
    back = resolve_pointers(out.messages, eng.workspace)
    assert [m.content for m in back if m.id == "t4"] == [image]
    # neither is planned (the broken one is not counted as freed, nor tried and refused)
    assert not any(isinstance(e, OffloadFailed) for e in out.events), out.events


def test_an_offloaded_result_is_cleared_to_the_same_file() -> None:
    pol = ContextPolicy(
        max_input_tokens=100_000,
        tool_results={"threshold": {"tokens": 300}},
        clearing=policy(trigger={"tokens": 500}).clearing,
    )
    eng = engine(pol)
    messages = history(4)
    messages = [
        eng.offload_tool_result(m, thread_id=THREAD) if isinstance(m, ToolMessage) else m
        for m in messages
    ]
    held = pointer_of(messages[3])
    assert held is not None
    offloaded = held.path
    files = snapshot(eng.workspace)
    out = eng.clear_tool_results(messages, thread_id=THREAD)
    assert snapshot(eng.workspace) == files  # no new file
    event = out.events[0]
    assert isinstance(event, ToolResultCleared)
    assert event.kind == "offloaded" and event.path == offloaded
    cleared = pointer_of(out.messages[3])
    assert cleared is not None and (cleared.kind, cleared.path) == ("cleared", offloaded)
    assert resolve_pointers(out.messages, eng.workspace)[3] == history(4)[3]
    assert eng.token_counter.count_message(out.messages[3]) < eng.token_counter.count_message(
        messages[3]
    )


def test_a_missing_offloaded_file_keeps_the_pointer_and_says_why() -> None:
    pol = ContextPolicy(
        max_input_tokens=100_000,
        tool_results={"threshold": {"tokens": 300}},
        clearing=policy(trigger={"tokens": 500}).clearing,
    )
    eng = engine(pol)
    messages = [
        eng.offload_tool_result(m, thread_id=THREAD) if isinstance(m, ToolMessage) else m
        for m in history(4)
    ]
    held = pointer_of(messages[3])
    assert held is not None
    path = held.path
    eng.workspace.rm(path)
    out = eng.clear_tool_results(messages, thread_id=THREAD)
    assert out.messages[3] is messages[3]
    failed = [e for e in out.events if isinstance(e, OffloadFailed)]
    assert failed[0].tool_call_id == "c0" and failed[0].path == path


def test_reading_an_offloaded_file_back_is_cleared_to_a_pointer_to_that_file() -> None:
    pol = ContextPolicy(
        max_input_tokens=100_000,
        tool_results={"threshold": {"tokens": 300}},
        clearing=policy(trigger={"tokens": 500}).clearing,
    )
    eng = engine(pol)
    first = [
        eng.offload_tool_result(m, thread_id=THREAD) if isinstance(m, ToolMessage) else m
        for m in history(1)
    ]
    held = pointer_of(first[3])
    assert held is not None
    saved = held.path
    tools = {f.name: f for f in tool_functions(eng.workspace)}
    args: dict[str, Any] = {"file_path": saved, "offset": 0, "limit": 50}
    page = tools["read_file"](**args)
    read: list[BaseMessage] = [
        AIMessage("", tool_calls=[{"name": "read_file", "args": args, "id": "r1"}], id="ar"),
        ToolMessage(page, tool_call_id="r1", name="read_file", id="tr"),
    ]
    messages = [*first, *read, *turn(5), *turn(6), *turn(7)]
    files = snapshot(eng.workspace)
    out = eng.clear_tool_results(messages, thread_id=THREAD)
    (event,) = [e for e in out.events if isinstance(e, ToolResultCleared) and e.kind == "reread"]
    assert event.path == saved and event.tool_call_id == "r1"
    text = str(out.messages[5].content)
    reread = pointer_of(out.messages[5])
    assert reread is not None and (reread.kind, reread.path) == ("reread", saved)
    # the pointer stands for the view: resolving it repeats the call
    assert resolve_pointers(out.messages, eng.workspace)[5].content == page
    assert text == (
        f"{CLEARED_TAG} It showed {count_lines(page)} lines, "
        f"{eng.token_counter.count_text(page):,} tokens of {saved}; repeat the call to see it "
        "again."
    )
    # nothing new was saved for it (only the later, ordinary results were)
    new = set(snapshot(eng.workspace)) - set(files)
    assert new == {result_path(THREAD, f"c{n}", output(n)) for n in (5,)}
    assert tools["read_file"](**args) == page  # repeating the call shows it again


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read_file", {"file_path": "/transcripts/t/index.json"}),
        ("read_file", {"file_path": "/memories/default.md"}),
        ("grep", {"pattern": "output", "path": "/memories", "output_mode": "content"}),
        ("read_file", {"file_path": "/sessions/s/state.json"}),
    ],
)
def test_a_view_of_a_file_ctxfs_rewrites_is_saved_like_any_result(
    tool: str, args: dict[str, Any]
) -> None:
    """The transcript index, long-term memory and workflow state files are rewritten as they
    change: repeating a read of them later shows other text, so such a view is saved, not
    cleared to 'repeat the call'. A read of a memory file was cleared that way, and once a
    fact was added or forgotten the text the model had seen was nowhere."""
    ws = Workspace(f"memory://clearing-rewritten-{next(_fresh)}")
    for path in ("/transcripts/t/index.json", "/memories/default.md", "/sessions/s/state.json"):
        ws.write_text(path, output(9))
    shown = {f.name: f for f in tool_functions(ws)}[tool](**args)
    assert "output 9 line 59" in shown
    messages = [
        *history(1),
        AIMessage("", tool_calls=[{"name": tool, "args": args, "id": "r"}], id="ar"),
        ToolMessage(shown, tool_call_id="r", name=tool, id="tr"),
        *turn(5),
        *turn(6),
    ]
    out = engine(ws=ws).clear_tool_results(messages, thread_id=THREAD)
    kinds = {e.tool_call_id: e.kind for e in out.events if isinstance(e, ToolResultCleared)}
    assert kinds == {"c0": "saved", "r": "saved"}
    for path in ("/transcripts/t/index.json", "/memories/default.md", "/sessions/s/state.json"):
        ws.write_text(path, "rewritten since")
    (back,) = [m for m in resolve_pointers(out.messages, ws) if m.id == "tr"]
    assert back.content == shown


# -- batching, stickiness, failures ---------------------------------------------------------


def test_a_small_batch_waits_until_it_is_worth_a_prefix_change() -> None:
    eng = engine(policy(clear_at_least={"tokens": 1_500}))
    messages = history(4)  # two results outside the window: about 1,100 tokens to free
    out = eng.clear_tool_results(messages, thread_id=THREAD)
    assert out.messages == messages and out.events == ()
    assert snapshot(eng.workspace) == {}  # nothing written for a batch not taken
    more = [*messages, *turn(4), *turn(5)]
    out = eng.clear_tool_results(more, thread_id=THREAD)
    assert len(out.events) == 4  # all four at once


def test_a_batch_waits_while_it_frees_less_than_its_share_of_the_cache_write() -> None:
    messages = history(4)  # two results outside the window: about 1,100 tokens to free
    # the request after the first old result, which the provider would write again
    messages[-2] = messages[-2].model_copy(update={"content": "thinking " * 3_000})
    waits = engine(policy(frees_per_rewrite=0.5)).clear_tool_results(messages, thread_id=THREAD)
    assert waits.messages == messages and waits.events == ()
    goes = engine(policy(frees_per_rewrite=0.0)).clear_tool_results(messages, thread_id=THREAD)
    assert len(goes.events) == 2
    # the same batch without the long turn after it is worth its cache write
    short = history(4)
    out = engine(policy(frees_per_rewrite=0.5)).clear_tool_results(short, thread_id=THREAD)
    assert len(out.events) == 2


@settings(max_examples=200, deadline=None)
@given(
    floor=st.integers(min_value=1, max_value=5_000),
    ratio=st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0]),
    frees=st.integers(min_value=0, max_value=20_000),
    more=st.integers(min_value=0, max_value=20_000),
    rewrite=st.integers(min_value=0, max_value=40_000),
)
def test_a_batch_goes_when_it_frees_its_floor_and_its_share_of_the_rewrite(
    floor: int, ratio: float, frees: int, more: int, rewrite: int
) -> None:
    pol = policy(clear_at_least={"tokens": floor}, frees_per_rewrite=ratio)
    budget = Budget.of(pol, 100_000)
    tokens = 10_000  # far below every summarization trigger: no summary to keep away
    goes = batch_goes(budget, tokens, 10, frees, rewrite)
    assert goes == (frees > 0 and frees >= floor and frees >= ratio * rewrite)
    if goes:  # monotone: a larger batch with the same cache write goes too
        assert batch_goes(budget, tokens, 10, frees + more, rewrite)


def test_a_compaction_that_reaches_the_low_water_mark_does_not_summarize() -> None:
    base = history(4)  # two results outside the window: about 1,100 tokens to free
    tokens = engine().token_counter.count_messages(base)
    pol = ContextPolicy(
        max_input_tokens=100_000,
        high_water={"tokens": tokens - 200},
        low_water={"tokens": tokens - 900},
        clearing={**policy().clearing.model_dump(), "trigger": None},
        summarization={"trigger": {"tokens": tokens - 100}, "keep": {"messages": 2}},
    )
    result = engine(pol).compact(base, thread_id=THREAD)
    assert not result.summarized
    assert [type(e) for e in result.events] == [
        ToolResultCleared,
        ToolResultCleared,
        PrefixChanged,
    ]
    changed = result.events[-1]
    assert isinstance(changed, PrefixChanged) and changed.first_changed == 3
    assert result.tokens_after <= tokens - 900


def test_a_compaction_takes_the_oldest_results_only_down_to_the_low_water_mark() -> None:
    base = history(8)  # six results outside the window, about 550 tokens each to free
    tokens = engine().token_counter.count_messages(base)
    pol = ContextPolicy(
        max_input_tokens=100_000,
        high_water={"tokens": tokens},
        low_water={"tokens": tokens - 1_000},
        clearing={**policy().clearing.model_dump(), "trigger": None},
    )
    result = engine(pol).compact(base, thread_id=THREAD)
    cleared = [e.tool_call_id for e in result.events if isinstance(e, ToolResultCleared)]
    assert cleared == ["c0", "c1"]  # the oldest two free enough; the rest stay as they were
    assert result.tokens_after <= tokens - 1_000 and not result.summarized
    assert result.messages[7:] == base[7:]


def test_a_compaction_summarizes_only_when_the_lossless_steps_cannot_reach_low_water() -> None:
    base = history(4)
    tokens = engine().token_counter.count_messages(base)
    pol = ContextPolicy(
        max_input_tokens=100_000,
        high_water={"tokens": tokens - 200},
        low_water={"tokens": 300},  # far below what clearing can free
        clearing={**policy().clearing.model_dump(), "trigger": None},
        summarization={"keep": {"messages": 2}},
    )
    result = engine(pol).compact(base, thread_id=THREAD)
    assert result.summarized
    below = ContextPolicy(
        max_input_tokens=100_000,
        high_water={"tokens": tokens + 1},
        low_water={"tokens": 300},
        clearing={**policy().clearing.model_dump(), "trigger": None},
        summarization={"keep": {"messages": 2}},
    )
    untouched = engine(below).compact(base, thread_id=THREAD)
    assert untouched.messages == base and untouched.events == ()
    # short of the low-water mark but in the lower half of the band: no summary yet
    near = ContextPolicy(
        max_input_tokens=100_000,
        high_water={"tokens": tokens - 200},
        low_water={"tokens": tokens - 1_500},
        clearing={**policy().clearing.model_dump(), "trigger": None},
        summarization={"keep": {"messages": 2}},
    )
    halfway = engine(near).compact(base, thread_id=THREAD)
    assert not halfway.summarized
    assert near.low_water_tokens < halfway.tokens_after <= near.summary_water_tokens


def test_a_prefix_change_counts_only_the_cached_tokens_it_gives_up() -> None:
    sent = history(6)
    new = [*turn(6), *turn(7)]
    counter = engine().token_counter
    tokens = counter.count_messages([*sent, *new])
    pol = ContextPolicy(
        max_input_tokens=100_000,
        high_water={"tokens": tokens},
        low_water={"tokens": tokens - 500},
        clearing={**policy().clearing.model_dump(), "trigger": None},
    )
    eng = engine(pol)
    assert eng.compact(sent, thread_id=THREAD).messages == sent  # below the mark: as it was
    result = eng.compact([*sent, *new], thread_id=THREAD)
    (changed,) = [e for e in result.events if isinstance(e, PrefixChanged)]
    assert changed.first_changed == 3
    # the provider cached the previous request; the messages appended since were never cached
    assert changed.tokens_given_up == counter.count_messages(sent[3:])
    # another engine never saw the previous request: it counts everything from the change on
    fresh = engine(pol).compact([*sent, *new], thread_id=THREAD)
    (unknown,) = [e for e in fresh.events if isinstance(e, PrefixChanged)]
    assert unknown.tokens_given_up == counter.count_messages([*sent, *new][3:])


def test_cleared_pointers_are_sticky_through_later_compactions_and_summaries() -> None:
    pol = ContextPolicy(
        max_input_tokens=6_000,
        clearing={"enabled": True, "keep": {"results": 2}, "min_tokens": 100},
        summarization={"keep": {"messages": 8}},
    )
    eng = engine(pol)
    state: list[BaseMessage] = []
    seen: dict[str | None, Any] = {}
    summaries = 0
    for message in history(60):
        if isinstance(message, AIMessage) and state:
            result = eng.compact(state, thread_id=THREAD)
            summaries += result.summarized
            state = result.messages
            for m in state:
                if isinstance(m, ToolMessage) and str(m.content).startswith(CLEARED_TAG):
                    assert seen.setdefault(m.id, m.content) == m.content
                elif m.id in seen:
                    raise AssertionError(f"{m.id} was restored")
        state = [*state, message]
    assert summaries >= 1 and len(seen) > 20


def test_a_failing_write_keeps_the_result_inline_with_an_event() -> None:
    base = Workspace(f"memory://clearfail{next(_fresh)}")
    eng = engine(ws=base.view(read_only=["/tool_results"]))
    messages = history(4)
    out = eng.clear_tool_results(messages, thread_id=THREAD)
    assert out.messages == messages
    assert [type(e) for e in out.events] == [OffloadFailed, OffloadFailed]
    assert not out.changed


def test_acompact_clears_like_compact() -> None:
    one = engine().compact(history(6), thread_id=THREAD)
    two = asyncio.run(engine().acompact(history(6), thread_id=THREAD))
    assert one.messages == two.messages and one.events == two.events
    assert any(isinstance(e, ToolResultCleared) for e in one.events)
    assert not any(isinstance(e, ToolResultOffloaded | Summarized) for e in one.events)


def test_old_inputs_move_with_the_clearing_batch_so_the_prefix_changes_once() -> None:
    pol = ContextPolicy(
        max_input_tokens=20_000,
        tool_inputs={"min_chars": 200, "keep_messages": 2},
        clearing={"keep": {"results": 1}, "clear_at_least": {"tokens": 2_500}},
    )
    eng = engine(pol)
    messages: list[BaseMessage] = [SystemMessage("agent", id="sys")]
    calls_with_inputs = calls_with_clearing = 0
    for n in range(40):
        write: Any = {"name": "write", "args": {"path": f"/f{n}", "text": "code " * 300}}
        messages += [
            AIMessage("", tool_calls=[{**write, "id": f"w{n}"}], id=f"aw{n}"),
            ToolMessage(output(n), tool_call_id=f"w{n}", name="write", id=f"tw{n}"),
        ]
        result = eng.compact(messages, thread_id=THREAD)
        moved = any(isinstance(e, ToolInputOffloaded) for e in result.events)
        cleared = any(isinstance(e, ToolResultCleared) for e in result.events)
        calls_with_inputs += moved
        calls_with_clearing += cleared
        if moved and not result.summarized:
            assert cleared, "old inputs moved on their own: a second prefix break"
        assert sum(isinstance(e, PrefixChanged) for e in result.events) <= 1
        messages = result.messages
    assert calls_with_inputs >= 2 and calls_with_clearing >= 2
