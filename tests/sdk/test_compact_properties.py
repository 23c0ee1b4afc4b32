"""DESIGN.md invariants 1-6 for compaction (offload + archive + summarize), as properties."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from _histories import comparable, snapshot
from _runs import fresh_engine, reconstruct, replay, runs, summary_policies
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxfs import (
    ArchiveFailed,
    ContextEngine,
    ContextPolicy,
    Summarized,
    ToolResultClearing,
    Workspace,
    is_pinned,
    is_summary,
)
from ctxfs._summary._pins import in_view_kind

_fresh = itertools.count()
_PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_threads = st.sampled_from(["t", "thread/ü", ""])


@_PROPERTY
@given(history=runs(), policy=summary_policies(), thread_id=_threads)
def test_no_loss_integrity_budget_order_and_idempotence(
    history: list[BaseMessage], policy: ContextPolicy, thread_id: str
) -> None:
    engine = fresh_engine(policy, f"p{next(_fresh)}")
    state, _ = replay(engine, history, thread_id)  # checks 2, 3, 6 and idempotence per step
    assert reconstruct(engine, state, thread_id) == [comparable(m) for m in history]


@_PROPERTY
@given(history=runs(), policy=summary_policies())
def test_same_input_same_output_and_same_files(
    history: list[BaseMessage], policy: ContextPolicy
) -> None:
    one = fresh_engine(policy, f"d{next(_fresh)}")
    two = fresh_engine(policy, f"d{next(_fresh)}")
    state_one, results_one = replay(one, history, "t", check=False)
    state_two, results_two = replay(two, history, "t", check=False)
    assert state_one == state_two
    assert [r.events for r in results_one] == [r.events for r in results_two]
    assert snapshot(one.workspace) == snapshot(two.workspace)


@_PROPERTY
@given(history=runs(), policy=summary_policies())
def test_a_failing_archive_drops_nothing(history: list[BaseMessage], policy: ContextPolicy) -> None:
    base = Workspace(f"memory://f{next(_fresh)}")
    engine = ContextEngine(base.view(read_only=["/transcripts"]), policy)
    result = engine.compact(history, thread_id="t")
    if any(isinstance(e, ArchiveFailed) for e in result.events):
        assert result.messages == history
        assert all(a is b for a, b in zip(result.messages, history, strict=True))
        if not result.reached_target:
            assert result.reason is not None and "could not be archived" in result.reason
        assert result.tokens_after == result.tokens_before
    assert not any(isinstance(e, Summarized) for e in result.events)
    assert not base.exists("/transcripts")


# -- no summarization churn -----------------------------------------------------------------

_TRIGGERS = ["messages", "tokens", "fraction"]
_KEEPS = ["messages", "tokens", "fraction"]


def _turn(n: int, lines: int, parallel: bool, words: int) -> list[BaseMessage]:
    ids = [f"c{n}", f"d{n}"] if parallel else [f"c{n}"]
    calls: list[Any] = [{"name": "bash", "args": {"command": f"run {n}"}, "id": i} for i in ids]
    out = "\n".join(f"line {k} of step {n}" for k in range(lines))
    return [
        HumanMessage(" ".join([f"step {n}", *(f"word{k}" for k in range(words))]), id=f"h{n}"),
        AIMessage(f"doing {n}", tool_calls=calls, id=f"a{n}"),
        *(ToolMessage(out, tool_call_id=i, name="bash", id=f"t{i}") for i in ids),
    ]


@st.composite
def _churn_case(draw: st.DrawFn) -> tuple[ContextPolicy, list[BaseMessage], str]:
    trigger_kind = draw(st.sampled_from(_TRIGGERS))
    keep_kind = draw(st.sampled_from(_KEEPS))
    window = draw(st.integers(min_value=10_000, max_value=30_000))
    trigger: dict[str, Any]
    if trigger_kind == "messages":
        window = 1_000_000  # only the messages trigger fires
        limit = draw(st.integers(min_value=12, max_value=60))
        trigger = {"messages": limit}
        target = limit
    elif trigger_kind == "tokens":
        trigger = {"tokens": draw(st.integers(min_value=int(0.6 * window), max_value=window))}
        target = trigger["tokens"]
    else:
        trigger = {"fraction": draw(st.floats(min_value=0.6, max_value=1.0))}
        target = max(1, int(trigger["fraction"] * window))
    keep: dict[str, Any]
    if keep_kind == "messages":
        most = target - 1 if trigger_kind == "messages" else 8
        keep = {"messages": draw(st.integers(min_value=0, max_value=most))}
    elif keep_kind == "tokens":
        # with a messages trigger, a token window that holds many more messages than it
        high = 20_000 if trigger_kind == "messages" else int(0.3 * window)
        keep = {"tokens": draw(st.integers(min_value=1, max_value=high))}
    else:
        high = 0.02 if trigger_kind == "messages" else 0.3
        keep = {"fraction": draw(st.floats(min_value=0.001, max_value=high))}
    policy = ContextPolicy(
        max_input_tokens=window,
        tool_results={"enabled": False},
        tool_inputs={"enabled": False},
        summarization={"trigger": trigger, "keep": keep},
    )
    # user messages of all lengths: what a summary pins back must not take the new turns' room;
    # a system prompt and a task statement up to a tenth of the window and more (a long one
    # leaves the other pins and the new turns less room to share)
    words = st.integers(min_value=0, max_value=120)
    shapes = st.tuples(st.integers(min_value=0, max_value=150), st.booleans(), words)
    turns = draw(st.lists(shapes, min_size=50, max_size=90))
    system_words = draw(st.integers(min_value=0, max_value=min(window, 30_000) // 25))
    task_words = draw(st.integers(min_value=0, max_value=min(window, 30_000) // 12))
    system = " ".join(["You are a coding agent.", *(f"rule{k}" for k in range(system_words))])
    history: list[BaseMessage] = [SystemMessage(system, id="sys")]
    for n, (lines, parallel, said) in enumerate(turns):
        history += _turn(n, lines, parallel, task_words if n == 0 else said)
    return policy, history, trigger_kind


def _is_task(message: BaseMessage) -> bool:
    return is_pinned(message) and bool(message.additional_kwargs["ctxfs"].get("first"))


def _always(message: BaseMessage) -> bool:
    """In every request from a summary to the next: the system prompt, the summary, and the
    task statement's pin."""
    return isinstance(message, SystemMessage) or is_summary(message) or _is_task(message)


# each example replays 50 to 90 turns through a dozen summaries: fewer examples
@pytest.mark.slow
@settings(_PROPERTY, max_examples=25)
@given(case=_churn_case())
def test_a_summary_leaves_room_so_new_turns_do_not_summarize_again(
    case: tuple[ContextPolicy, list[BaseMessage], str],
) -> None:
    """Each summary buys at least half a trigger of new messages (or a quarter of the turns'
    room: the tokens below where the next summary fires, beside the system prompt, the summary
    and the task statement's pin, which every request holds until then), whatever the trigger
    and keep kinds: no summary (and no new prompt prefix) per turn. What a summary puts back
    in view never takes that room."""
    policy, history, trigger_kind = case
    # Summarization alone: clearing (on by default) would make summaries rarer still, and
    # this property is about what a summary leaves behind.
    policy = policy.model_copy(update={"clearing": ToolResultClearing(enabled=False)})
    engine = fresh_engine(policy, f"churn{next(_fresh)}")
    counter = engine.token_counter
    limit = policy.summarization.trigger.messages
    target = policy.summary_target_tokens
    # A compaction fires at the high-water mark (never above a token trigger) and, with no
    # lossless step on, summarizes there: the next summary comes at the lower of the two.
    fires = min(target, policy.budget.high_water)
    state: list[BaseMessage] = []
    new_messages = new_tokens = summaries = 0
    room = kept = 0  # the turns' room the previous summary left, and its recent window
    for message in history:
        if isinstance(message, AIMessage) and state:
            result = engine.compact(state, thread_id="t")
            if result.summarized:
                if summaries:  # the first one comes whenever the history first fills up
                    if trigger_kind == "messages":
                        assert limit is not None and new_messages >= -(-limit // 2)
                    elif kept <= room * 3 // 4:
                        # (a protected window of a few huge messages may hold more: the
                        # keep setting wins over the room, and the reason says so; so does
                        # the in-view message, which says where the user's words went)
                        assert new_tokens >= room // 4
                summaries += 1
                new_messages = new_tokens = 0
                # every request holds these until the next summary; the task statement's pin
                # may take any room the request has, the other pins may not
                always = [m for m in result.messages if _always(m)]
                room = fires - sum(counter.count_message(m) for m in always)
                kept = sum(
                    counter.count_message(m)
                    for m in result.messages
                    if not (_always(m) or is_pinned(m)) or in_view_kind(m) == "in_view"
                )
            state = result.messages
        state = [*state, message]
        new_messages += 1
        new_tokens += counter.count_message(message)
    total = sum(counter.count_message(m) for m in history)
    if (limit is not None and len(history) >= 2 * limit) or (limit is None and total >= 3 * target):
        assert summaries >= 2  # the property was exercised
