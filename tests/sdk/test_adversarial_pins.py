"""The task statement and the user's words after a summary, in the corners: a summary that
replaces so few messages that nothing could take the place of the messages it puts back.

Invariant 13: the user's messages stay in view verbatim within their budget, and beyond it
as pointers to their archived copy, never only as the summary paraphrases them.
"""

from __future__ import annotations

import itertools
import re

import pytest
from _runs import fixed_clock
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from ctxfs import ContextEngine, ContextPolicy, Summarized, Workspace
from ctxfs._pointers._moved import moved_texts
from ctxfs._summary._pins import in_view_kind

_fresh = itertools.count()


def _engine(window: int) -> ContextEngine:
    policy = ContextPolicy(max_input_tokens=window)
    return ContextEngine(Workspace(f"memory://pins-{next(_fresh)}"), policy, clock=fixed_clock)


def _task(words: int) -> str:
    return "TASK: " + " ".join(f"requirement{i}" for i in range(words))


def _in_view_text(messages: list[BaseMessage]) -> str:
    return "\n".join(str(m.content) for m in messages if in_view_kind(m) is not None)


def _where_the_task_is(messages: list[BaseMessage], task: str) -> str:
    """'kept', 'pinned', 'pointed', 'moved' (its text moved out of a request that could not
    fit otherwise: a pointer quoting its first lines and naming the file) or '' (out of
    view)."""
    for message in messages:
        kind = in_view_kind(message)
        if message.content == task:
            return "pinned" if kind == "pinned" else "kept"
        moved = moved_texts(message).get(("content", 0))
        if moved is not None and moved.chars == len(task) and task[:40] in str(message.content):
            return "moved"
    if re.search(r"^- the task statement 1 \(", _in_view_text(messages), re.M):
        return "pointed"
    return ""


def test_a_summary_of_the_task_statement_alone_points_to_it() -> None:
    engine = _engine(4_000)
    task = _task(1_500)  # most of the window: it cannot be pinned, it must be pointed to
    history: list[BaseMessage] = [
        SystemMessage("sys", id="s"),
        HumanMessage(task, id="task"),
        AIMessage("ok", id="a1"),
        HumanMessage("go", id="h2"),
    ]
    result = engine.compact(history, thread_id="t")
    assert any(isinstance(e, Summarized) and e.messages_archived == 1 for e in result.events)
    assert _where_the_task_is(result.messages, task) == "pointed"
    # and it stays the task statement at the next summaries: no later message takes its place
    state = result.messages
    for n in range(30):
        state = [*state, AIMessage("x " * 100, id=f"a{n}"), HumanMessage(f"user {n}", id=f"h{n}")]
        state = engine.compact(state, thread_id="t").messages
        assert _where_the_task_is(state, task) == "pointed", n
        assert len(re.findall(r"the task statement", _in_view_text(state))) == 1


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    window=st.sampled_from([2_000, 4_000, 8_000]),
    share=st.floats(0.05, 0.95),
    turns=st.integers(1, 25),
    turn_words=st.integers(1, 300),
)
def test_the_task_statement_is_never_out_of_view(
    window: int, share: float, turns: int, turn_words: int
) -> None:
    engine = _engine(window)
    task = _task(max(1, int(window * share / 1.2)))
    state: list[BaseMessage] = [SystemMessage("sys", id="s"), HumanMessage(task, id="task")]
    for n in range(turns):
        state = [
            *state,
            AIMessage("x " * turn_words, id=f"a{n}"),
            HumanMessage(f"user {n}", id=f"h{n}"),
        ]
        state = engine.compact(state, thread_id="t").messages
        where = _where_the_task_is(state, task)
        assert where, n
        if where == "moved":  # the last resort, with no summary able to help: byte-exact
            (moved,) = next(moved_texts(m) for m in state if m.id == "task").values()
            assert engine.workspace.read_text(moved.path) == task


@pytest.mark.parametrize(
    "damage",
    [
        {"pointers": [{"x": 1}]},
        {"pointers": "abc"},
        {"pointers": [{"index": "a", "segment": 1}]},
        {"counted": []},
        {"counted": {"count": "x", "first_index": 1, "last_index": 2}},
        {"counted": {"count": 3}},
    ],
)
def test_what_an_earlier_summary_recorded_is_read_strictly(damage: dict[str, object]) -> None:
    """The digest vouches for an in-view message's text, not for the rest of its metadata
    (another version's shape, a damaged checkpoint): entries of another shape are left out,
    and the next compaction goes on."""
    engine = _engine(4_000)
    history: list[BaseMessage] = [
        SystemMessage("sys", id="s"),
        HumanMessage(_task(1_500), id="task"),
        AIMessage("ok", id="a1"),
        HumanMessage("go", id="h2"),
    ]
    state = []
    for message in engine.compact(history, thread_id="t").messages:
        if in_view_kind(message) == "in_view":
            data = {**message.additional_kwargs["ctxfs"], **damage}
            message = message.model_copy(update={"additional_kwargs": {"ctxfs": data}})
        state.append(message)
    state += [AIMessage("y " * 1_500, id="a2"), HumanMessage("more", id="h3")]
    result = engine.compact(state, thread_id="t", force=True)
    assert any(isinstance(e, Summarized) for e in result.events)


def test_a_short_task_statement_archived_alone_comes_back_verbatim() -> None:
    """No slot for it (the summary took the only message it replaced), yet a pin costs less
    than a pointer to it: the task statement is pinned, one message beyond the slots."""
    engine = _engine(4_000)
    history: list[BaseMessage] = [
        SystemMessage("sys", id="s"),
        HumanMessage("write it", id="task"),
        AIMessage("y " * 3_000, id="a1"),  # the latest block: the summary keeps it
    ]
    # Fired by tokens, such a summary would add more than the message it replaces: not made.
    kept = engine.compact(history, thread_id="t")
    assert kept.messages == history and not engine.workspace.exists("/transcripts")
    # Asked for (a provider refused the request), it is made.
    result = engine.compact(history, thread_id="t", force=True)
    assert any(isinstance(e, Summarized) and e.messages_archived == 1 for e in result.events)
    assert _where_the_task_is(result.messages, "write it") == "pinned"
    assert not any(in_view_kind(m) == "in_view" for m in result.messages)


@pytest.mark.parametrize("task_words", [5, 1_500])
def test_the_plan_is_put_back_by_a_summary_that_replaced_only_the_task_statement(
    task_words: int,
) -> None:
    """A summary that archives the task statement alone (or with one turn) has no message,
    or one, to put back in its place; the plan (live state, never in the summary's text)
    still comes back after it, with the task statement pinned (short) or pointed to (too
    large) beside it."""
    engine = _engine(4_000)
    task = _task(task_words)
    plan = [{"content": "write the failing test", "status": "in_progress"}]
    history: list[BaseMessage] = [
        SystemMessage("sys", id="s"),
        HumanMessage(task, id="task"),
        AIMessage("ok " * (3_300 if task_words < 100 else 1), id="a1"),
        HumanMessage("go", id="h2"),
    ]
    result = engine.compact(history, thread_id="t", plan=plan)
    assert any(isinstance(e, Summarized) and e.messages_archived <= 2 for e in result.events)
    assert "- [in_progress] write the failing test" in _in_view_text(result.messages)
    assert _where_the_task_is(result.messages, task) in {"pinned", "pointed", "kept"}


def test_a_user_message_of_an_image_alone_is_the_task_statement_and_stays_in_view() -> None:
    """A user's message without words (an image) is theirs all the same: it is the task
    statement when it comes first, pinned as it was sent (blocks and all) or pointed to,
    and the next text message does not take its place."""
    engine = _engine(4_000)
    image = [{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]
    state: list[BaseMessage] = [
        SystemMessage("sys", id="s"),
        HumanMessage(image, id="shot"),  # type: ignore[arg-type]
        HumanMessage("make the button in the screenshot blue", id="words"),
    ]
    for n in range(30):
        state = [*state, AIMessage("x " * 150, id=f"a{n}"), HumanMessage(f"go {n}", id=f"g{n}")]
        state = engine.compact(state, thread_id="t").messages
    assert any(isinstance(m.content, list) and m.content == image for m in state)
    pins = [m for m in state if in_view_kind(m) == "pinned"]
    first = [m for m in pins if m.additional_kwargs["ctxfs"]["first"]]
    assert len(first) == 1 and first[0].content == image
