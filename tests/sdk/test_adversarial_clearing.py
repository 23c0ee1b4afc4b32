"""Clearing against adversarial results: a cleared result is never larger than what it
replaces, so a clearing never spends the prompt cache for nothing.

The plan prices a pointer before anything is read: for a result offloaded at step 1, the
file's first line (which the cleared pointer quotes) is not at hand, and the estimate stands
in for it. Here the results' first lines are generated to be expensive (rare characters, after
blank lines the offload preview shows instead), with small previews and low ``min_tokens``.
"""

from __future__ import annotations

import itertools

from _runs import fixed_clock, fresh_engine, runs
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from test_clearing_properties import clearing_policies

from ctxfs import ContextEngine, ContextPolicy, ToolResultCleared, Workspace, resolve_pointers
from ctxfs._messages import NUL_STAND_INS
from ctxfs._tokens import TiktokenCounter

_fresh = itertools.count()
_EXPENSIVE = st.text(st.sampled_from("𝔘𝔙𝔚😀中é ab"), min_size=1, max_size=120)


def _policy(preview_lines: int, preview_chars: int, min_tokens: int) -> ContextPolicy:
    return ContextPolicy(
        max_input_tokens=100_000,
        tool_results={
            "threshold": {"tokens": 100},
            "preview_lines": preview_lines,
            "preview_line_chars": preview_chars,
        },
        clearing={
            "trigger": {"tokens": 1},
            "keep": {"results": 0},
            "min_tokens": min_tokens,
            "clear_at_least": {"tokens": 1},
            "frees_per_rewrite": 0.0,
        },
    )


def _history(engine: ContextEngine, texts: list[str]) -> list[BaseMessage]:
    history: list[BaseMessage] = [HumanMessage("task", id="h")]
    for n, text in enumerate(texts):
        call = {"name": "bash", "args": {"command": f"run {n}"}, "id": f"c{n}"}
        result = ToolMessage(text, tool_call_id=f"c{n}", name="bash", id=f"t{n}")
        history += [
            AIMessage("", tool_calls=[call], id=f"a{n}"),
            engine.offload_tool_result(result, thread_id="t"),
        ]
    return [*history, AIMessage("done", id="end")]


def test_an_offloaded_result_whose_first_line_is_expensive_is_not_cleared_larger() -> None:
    engine = ContextEngine(Workspace(f"memory://clear-{next(_fresh)}"), _policy(10, 200, 20))
    text = "\n" * 12 + "𝔘𝔙𝔚" * 40 + "\n" + "filler line\n" * 200
    history = _history(engine, [text])
    out = engine.clear_tool_results(history, thread_id="t")
    assert out.tokens_after <= out.tokens_before
    assert out.messages == history  # nothing to gain: the prefix stays as it was


@settings(max_examples=60, deadline=None)
@given(
    blanks=st.lists(st.integers(0, 14), min_size=1, max_size=3),
    heads=st.lists(_EXPENSIVE, min_size=3, max_size=3),
    preview=st.tuples(st.integers(0, 3), st.integers(1, 300)),
    min_tokens=st.integers(1, 200),
    compact=st.booleans(),
)
def test_clearing_never_makes_a_result_larger(
    blanks: list[int],
    heads: list[str],
    preview: tuple[int, int],
    min_tokens: int,
    compact: bool,
) -> None:
    policy = _policy(preview[0], preview[1], min_tokens)
    engine = ContextEngine(Workspace(f"memory://clear-{next(_fresh)}"), policy)
    texts = [
        "\n" * blank + head + "\n" + "filler line\n" * 150
        for blank, head in zip(blanks, heads, strict=False)
    ]
    history = _history(engine, texts)
    counter = engine.token_counter
    if compact:
        result = engine.compact(history, thread_id="t")
        out, before, after = result.messages, result.tokens_before, result.tokens_after
        events = result.events
    else:
        cleared = engine.clear_tool_results(history, thread_id="t")
        out, before, after = cleared.messages, cleared.tokens_before, cleared.tokens_after
        events = cleared.events
    assert after <= before
    for old, new in zip(history, out, strict=True):
        if new is not old and new != old:
            assert counter.count_message(new) < counter.count_message(old), new.content
    for happened in events:
        if isinstance(happened, ToolResultCleared):
            assert happened.tokens_after < happened.tokens
    # and nothing is lost
    assert resolve_pointers(out, engine.workspace) == resolve_pointers(history, engine.workspace)


# -- forks: an engine's caches never change what it decides --------------------------------


def _branch(history: list[BaseMessage], at: int) -> list[BaseMessage]:
    """``history`` forked at ``at``: the same prefix, then other messages with other ids (a
    re-run from an older checkpoint)."""
    tail = []
    for message in history[at:]:
        update: dict[str, object] = {"id": f"{message.id}-b"}
        if isinstance(message, ToolMessage) and isinstance(message.content, str):
            update["content"] = f"other {message.content}"
        tail.append(message.model_copy(update=update))
    return [*history[:at], *tail]


@st.composite
def _clearing_first(draw: st.DrawFn) -> ContextPolicy:
    """Clearing between compactions at its most eager, with summaries rare."""
    return ContextPolicy(
        max_input_tokens=draw(st.integers(2_000, 20_000)),
        tool_results={"threshold": {"tokens": draw(st.sampled_from([20, 300, 1_500]))}},
        tool_inputs={"trigger": {"tokens": 1}, "keep_messages": draw(st.integers(0, 3))},
        clearing={
            "trigger": {"tokens": 1},
            "keep": {"results": draw(st.integers(0, 2))},
            "min_tokens": draw(st.integers(1, 50)),
            "clear_at_least": {"tokens": draw(st.integers(1, 200))},
            "frees_per_rewrite": draw(st.sampled_from([0.0, 0.5, 2.0])),
        },
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=runs(), policy=clearing_policies() | _clearing_first(), data=st.data())
def test_two_branches_of_one_thread_compact_as_a_fresh_engine_would(
    history: list[BaseMessage], policy: ContextPolicy, data: st.DataObject
) -> None:
    """One engine compacts two branches of a thread in turn (time travel); before each model
    call its answer equals that of an engine made for that call alone, on a workspace that
    went through the same calls: the counter's records, the input scans and the other caches
    change nothing."""
    at = data.draw(st.integers(1, len(history)))
    branches = [history, _branch(history, at)]
    kept = fresh_engine(policy, f"fork-kept-{next(_fresh)}")
    fresh_ws = Workspace(f"memory://fork-fresh-{next(_fresh)}")
    states: list[list[BaseMessage]] = [[], []]
    positions = [0, 0]
    while positions[0] < len(branches[0]) or positions[1] < len(branches[1]):
        b = data.draw(st.sampled_from([i for i in (0, 1) if positions[i] < len(branches[i])]))
        message = branches[b][positions[b]]
        positions[b] += 1
        if isinstance(message, AIMessage) and states[b]:
            one = kept.compact(states[b], thread_id="t")
            other = ContextEngine(fresh_ws, policy, clock=fixed_clock).compact(
                states[b], thread_id="t"
            )
            assert one.messages == other.messages
            assert one.tokens_after == other.tokens_after
            assert one.tokens_after == TiktokenCounter().count_messages(one.messages)
            for e in one.events:
                event(type(e).__name__)
            states[b] = one.messages
        if isinstance(message, ToolMessage):
            one_m = kept.offload_tool_result(message, thread_id="t")
            other_m = ContextEngine(fresh_ws, policy, clock=fixed_clock).offload_tool_result(
                message, thread_id="t"
            )
            assert one_m == other_m
            message = one_m
        states[b] = [*states[b], message]


# -- text UTF-8 cannot hold ------------------------------------------------------------------


def _surrogate_run(engine: ContextEngine) -> list[BaseMessage]:
    # NUL characters and every character that could stand for them: no file can hold it
    text = "line \x00 of a result\n" * 400 + NUL_STAND_INS
    write = {"file_path": "/a.py", "content": "print('x')  # \udfff\n" * 200}
    small = {"file_path": "/b.py", "content": "print('small')\n" * 40}
    calls = [
        {"name": "bash", "args": {"command": "run"}, "id": "c1"},
        {"name": "write_file", "args": write, "id": "c2"},
        {"name": "write_file", "args": small, "id": "c3"},
    ]
    result = engine.offload_tool_result(
        ToolMessage(text, tool_call_id="c1", name="bash", id="t1"), thread_id="t"
    )
    return [
        HumanMessage("task", id="h"),
        AIMessage("", tool_calls=calls, id="a1"),
        result,
        ToolMessage("ok", tool_call_id="c2", name="write_file", id="t2"),
        ToolMessage("ok", tool_call_id="c3", name="write_file", id="t3"),
        AIMessage("done", id="a2"),
    ]


def test_text_no_file_can_hold_is_not_planned_for_nor_tried_again_and_again() -> None:
    """A result no file can hold, or an argument with a lone surrogate, stays inline: the
    plan does not count what clearing it would free, so it does not send a batch that frees
    less than ``clear_at_least`` (here only the small input would move), and later passes do
    not try to write it again."""
    policy = ContextPolicy(
        max_input_tokens=100_000,
        tool_results={"threshold": {"tokens": 100}},
        tool_inputs={"trigger": {"tokens": 1}, "keep_messages": 0, "min_chars": 10},
        clearing={
            "trigger": {"tokens": 1},
            "keep": {"results": 0},
            "min_tokens": 5,
            "clear_at_least": {"tokens": 2_000},
            "frees_per_rewrite": 0.0,
        },
    )
    engine = ContextEngine(Workspace(f"memory://clear-{next(_fresh)}"), policy)
    history = _surrogate_run(engine)
    for _ in range(3):
        result = engine.compact(history, thread_id="t")
        assert result.messages == history
        assert result.events == ()
