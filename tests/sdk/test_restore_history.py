"""A conversation read back from the workspace is its own, whole and in order, whatever its
messages' ids: ``restore_history`` gives every message (ids missing or repeated included)
of the branch the context is on; ``restore_messages`` gives them by id, and refuses what
cannot be given by id instead of keeping one of the messages that share ``None``.

Keyed by id over every branch, a forked thread whose branches reuse ids (call ids, a
scripted model's ids, ids a client made up) gave another branch's message for this one's,
and messages without an id (plain dicts, the OpenAI format) came back as one."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from ctxfs import (
    ContextEngine,
    ContextPolicy,
    Workspace,
    restore_history,
    restore_messages,
)
from ctxfs.testing import ScriptedChatModel

POLICY = ContextPolicy(
    max_input_tokens=4_000,
    clearing={"enabled": False},
    summarization={"trigger": {"tokens": 2_000}, "keep": {"messages": 2}},
)
_fresh = itertools.count()


def _turns(tag: str, ids: list[str | None]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for n, given_id in enumerate(ids):
        words = " ".join(f"{tag}{n}x{i}" for i in range(80))
        kind = HumanMessage if n % 2 == 0 else AIMessage
        out.append(kind(f"{tag} {n}: {words}", id=given_id))
    return out


def _compact(engine: ContextEngine, messages: list[BaseMessage]) -> list[BaseMessage]:
    result = engine.compact(messages, thread_id="t", model=ScriptedChatModel(responses=["S."]))
    assert result.summarized
    return list(result.messages)


def _contents(messages: list[BaseMessage]) -> list[object]:
    return [m.content for m in messages]


@settings(max_examples=25, deadline=None)
@given(ids=st.lists(st.sampled_from([None, "a", "b", "c"]), min_size=16, max_size=16))
def test_every_message_comes_back_in_order_whatever_its_id(ids: list[str | None]) -> None:
    ws = Workspace(f"memory://restore-ids{next(_fresh)}")
    history = _turns("alpha", ids)
    context = _compact(ContextEngine(ws, POLICY), history)
    assert _contents(restore_history(context, ws, thread_id="t")) == _contents(history)


@pytest.mark.parametrize("prompts", [1, 2])
def test_the_system_prompt_comes_back_first_as_it_was_sent(prompts: int) -> None:
    """The system prompt stays first in the context, before the summary; read back, it
    comes before the archived messages, where it was, not after them."""
    ws = Workspace(f"memory://restore-system{next(_fresh)}")
    system = [SystemMessage(f"You are agent part {n}.", id=f"sys{n}") for n in range(prompts)]
    history = [*system, *_turns("alpha", [f"m{n}" for n in range(16)])]
    context = _compact(ContextEngine(ws, POLICY), history)
    assert context[:prompts] == system
    assert _contents(restore_history(context, ws, thread_id="t")) == _contents(history)


def test_messages_without_ids_are_refused_by_id_not_merged() -> None:
    ws = Workspace(f"memory://restore-ids{next(_fresh)}")
    context = _compact(ContextEngine(ws, POLICY), _turns("alpha", [None] * 16))
    with pytest.raises(ValueError, match="16 of the 16 restored messages have no id"):
        restore_messages(context, ws, thread_id="t")


def test_each_branch_restores_its_own_messages_where_ids_repeat() -> None:
    """Three branches from the thread's start, then one continuing the first: the same ids
    on each; every context reads back its own history, and only it."""
    ws = Workspace(f"memory://restore-branches{next(_fresh)}")
    engine = ContextEngine(ws, POLICY)
    ids: list[str | None] = [f"m{n}" for n in range(16)]
    lines = {tag: _turns(tag, ids) for tag in ("alpha", "beta", "gamma")}
    contexts = {tag: _compact(engine, history) for tag, history in lines.items()}
    more = _turns("delta", [f"m{n}" for n in range(16, 32)])
    lines["delta"] = [*lines["alpha"], *more]
    contexts["delta"] = _compact(engine, [*contexts["alpha"], *more])
    for tag, history in lines.items():
        restored = restore_history(contexts[tag], ws, thread_id="t")
        assert _contents(restored) == _contents(history), tag
        by_id = restore_messages(contexts[tag], ws, thread_id="t")
        assert by_id["m0"].content == history[0].content, tag
    # a context with no summary has nothing archived; an empty one asks for everything
    assert restore_history(lines["beta"][:2], ws, thread_id="t") == lines["beta"][:2]
    everything = _contents(restore_history([], ws, thread_id="t"))
    assert all(history[0].content in everything for history in lines.values())


def test_a_message_edited_after_it_was_archived_comes_back_in_both_versions() -> None:
    ws = Workspace(f"memory://restore-edited{next(_fresh)}")
    history = _turns("alpha", [f"m{n}" for n in range(16)])
    context = _compact(ContextEngine(ws, POLICY), history)
    edited = HumanMessage("m0, edited in place", id="m0")
    restored = restore_history([*context, edited], ws, thread_id="t")
    assert [m.content for m in restored if m.id == "m0"] == [history[0].content, edited.content]
    assert restore_messages([*context, edited], ws, thread_id="t")["m0"] == edited
