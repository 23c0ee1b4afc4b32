"""A middleware outside ContextMiddleware that edits one request: its edit is sent, never kept.

ctxfs compacts the state's own messages, so the archive and the state hold what the thread
said; the outer edit (cleared tool results, an added reminder, a message left out) is laid
over what is sent.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from ctxfs import (
    ContextOverBudget,
    ContextPolicy,
    TiktokenCounter,
    TranscriptArchive,
    Workspace,
    is_summary,
    resolve_pointers,
)
from ctxfs.integrations._request_edits import with_edits
from ctxfs.integrations.langchain import ContextMeasured, ContextMiddleware
from ctxfs.testing import ScriptedChatModel, tool_call

# -- the merge, over generated states, edits and compactions ----------------------------------


@st.composite
def _cases(draw: st.DrawFn) -> tuple[list[BaseMessage], list[BaseMessage], list[BaseMessage]]:
    size = draw(st.integers(1, 12))
    state: list[BaseMessage] = [HumanMessage(f"m{i}", id=f"s{i}") for i in range(size)]
    # ctxfs: archive a run of messages (a summary in its place), replace some others
    start = draw(st.integers(0, size))
    end = draw(st.integers(start, size))
    compacted: list[BaseMessage] = []
    for i, message in enumerate(state):
        if i == start and end > start:
            compacted.append(SystemMessage("summary", id="summary"))
        if start <= i < end:
            continue
        replace = draw(st.booleans())
        compacted.append(HumanMessage(f"pointer {i}", id=message.id) if replace else message)
    # the outer middleware: edit some, leave some out, add some
    edited: list[BaseMessage] = []
    for i, message in enumerate(state):
        if draw(st.booleans()):
            edited.append(HumanMessage(f"added before {i}", id=f"x{i}"))
        fate = draw(st.sampled_from(["same", "copy", "edit", "drop"]))
        if fate == "same":
            edited.append(message)
        elif fate == "copy":
            edited.append(message.model_copy(deep=True))
        elif fate == "edit":
            edited.append(HumanMessage("[cleared]", id=message.id))
    if draw(st.booleans()):
        edited.append(HumanMessage("added last", id="xlast"))
    return state, edited, compacted


@settings(max_examples=150, deadline=None)
@given(_cases())
def test_the_outer_edit_is_laid_over_the_compacted_state(
    case: tuple[list[BaseMessage], list[BaseMessage], list[BaseMessage]],
) -> None:
    state, edited, compacted = case
    sent = with_edits(edited, state, compacted)
    state_ids = {m.id for m in state}
    by_id = {m.id: m for m in edited}
    kept_ids = [m.id for m in compacted if m.id in state_ids and m.id in by_id]
    # the state's messages go in ctxfs's order, only those ctxfs kept and the request holds
    assert [m.id for m in sent if m.id in state_ids] == kept_ids
    for message in sent:
        if message.id not in state_ids:
            continue
        ctxfs = next(m for m in compacted if m.id == message.id)
        original = next(m for m in state if m.id == message.id)
        # unchanged by ctxfs: the outer edit; replaced by ctxfs: ctxfs's pointer
        assert message is (by_id[message.id] if ctxfs is original else ctxfs)
    # ctxfs's summary is sent; what the outer middleware added is sent, in its order
    assert [m for m in sent if m.id == "summary"] == [m for m in compacted if m.id == "summary"]
    added = [m for m in edited if m.id not in state_ids]
    assert [m for m in sent if m.id not in state_ids and m.id != "summary"] == added
    assert len(sent) == len(kept_ids) + len(added) + sum(m.id == "summary" for m in compacted)


def test_an_added_message_keeps_its_place() -> None:
    state: list[BaseMessage] = [HumanMessage(f"m{i}", id=f"s{i}") for i in range(4)]
    note = HumanMessage("note", id="n")
    edited = [*state[:3], note, state[3]]
    summary = SystemMessage("summary", id="summary")
    assert with_edits(edited, state, [summary, *state[2:]]) == [
        summary,
        *state[2:3],
        note,
        state[3],
    ]
    # the message it followed archived: it goes before the next one kept
    assert with_edits(edited, state, [summary, state[3]]) == [summary, note, state[3]]


# -- in an agent, with a generated outer edit ---------------------------------------------


@tool
def fetch(n: int = 0) -> str:
    """Fetches record n."""
    return f"result {n}: " + " ".join(f"w{n}_{i}" for i in range(150))


def _record(message: BaseMessage) -> int | None:
    """Which record of four a tool result holds (``None`` for a pointer or a cleared one)."""
    text = message.text
    if not text.startswith("result "):
        return None
    return int(text.split(":", 1)[0].removeprefix("result ")) % 4


class _Editing(AgentMiddleware):  # type: ignore[type-arg]
    """Clears the tool results it is told to and adds a reminder, for each request only."""

    def __init__(self, clear: frozenset[int], remind: bool) -> None:
        super().__init__()
        self.clear, self.remind = clear, remind

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        messages: list[BaseMessage] = []
        for message in request.messages:
            if isinstance(message, ToolMessage) and _record(message) in self.clear:
                message = message.model_copy(update={"content": "[cleared]"})
            messages.append(message.model_copy())
        if self.remind:
            messages.append(HumanMessage("Remember: be brief.", id="reminder"))
        return handler(request.override(messages=messages))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clear=st.frozensets(st.integers(0, 3)), remind=st.booleans(), calls=st.integers(4, 8))
def test_an_outer_edit_is_sent_and_never_archived_or_kept(
    clear: frozenset[int], remind: bool, calls: int
) -> None:
    ws = Workspace("memory://outer-edits")
    policy = ContextPolicy(
        max_input_tokens=3_000,
        summarization={"trigger": {"tokens": 500}, "keep": {"messages": 2}},
        clearing={"enabled": False},
    )
    model = ScriptedChatModel(
        responses=[*(tool_call("fetch", {"n": i}) for i in range(calls)), "done"]
    )
    agent = create_agent(
        model,
        [fetch],
        middleware=[_Editing(clear, remind), ContextMiddleware(ws, policy, tools=False)],
        checkpointer=InMemorySaver(),
    )
    logging.disable(logging.WARNING)
    try:
        out = agent.invoke(
            {"messages": [HumanMessage("go", id="u0")]}, {"configurable": {"thread_id": "t"}}
        )
    finally:
        logging.disable(logging.NOTSET)
    state = out["messages"]
    assert any(is_summary(m) for m in state)  # ctxfs compacted, and wrote it to the state
    archived = TranscriptArchive(ws, "t").read_all()
    kept = [m for m in state if not is_summary(m)]
    whole = resolve_pointers([*archived, *kept], ws)
    results = [m.content for m in whole if isinstance(m, ToolMessage)]
    assert results == [fetch.invoke({"n": i}) for i in range(calls)]
    assert all(m.id != "reminder" for m in whole)
    # the model saw the edit: the reminder on every request, cleared results where told
    assert all(any(m.id == "reminder" for m in r) == remind for r in model.requests)
    last = model.requests[-1]
    assert not any(isinstance(m, ToolMessage) and _record(m) in clear for m in last)
    assert any(isinstance(m, AIMessage) for m in last)


def test_the_async_agent_keeps_the_thread_under_langchains_context_editing() -> None:
    import asyncio

    from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware

    ws = Workspace("memory://outer-edits-async")
    policy = ContextPolicy(
        max_input_tokens=3_000,
        summarization={"trigger": {"tokens": 500}, "keep": {"messages": 2}},
        clearing={"enabled": False},
    )
    editing = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=50, keep=0)])
    model = ScriptedChatModel(responses=[*(tool_call("fetch", {"n": i}) for i in range(6)), "done"])
    agent = create_agent(
        model,
        [fetch],
        middleware=[editing, ContextMiddleware(ws, policy, tools=False)],
        checkpointer=InMemorySaver(),
    )
    logging.disable(logging.WARNING)
    try:
        out = asyncio.run(
            agent.ainvoke(
                {"messages": [HumanMessage("go", id="u0")]}, {"configurable": {"thread_id": "t"}}
            )
        )
    finally:
        logging.disable(logging.NOTSET)
    assert any(is_summary(m) for m in out["messages"])
    archived = TranscriptArchive(ws, "t").read_all()
    whole = resolve_pointers([*archived, *(m for m in out["messages"] if not is_summary(m))], ws)
    results = [m.content for m in whole if isinstance(m, ToolMessage)]
    assert results == [fetch.invoke({"n": i}) for i in range(6)]
    assert any(m.content == "[cleared]" for r in model.requests for m in r)  # the edit was sent


class _Adding(AgentMiddleware):  # type: ignore[type-arg]
    """Adds retrieved text to each request only (a retrieval middleware's way)."""

    def __init__(self, words: int) -> None:
        super().__init__()
        self.text = " ".join(f"fact{i}" for i in range(words))

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        extra = HumanMessage(f"Retrieved: {self.text}", id="retrieved")
        return handler(request.override(messages=[*request.messages, extra]))


@pytest.mark.parametrize(("words", "fits"), [(300, True), (1_200, False)])
def test_what_an_outer_middleware_adds_is_counted_in_the_request(words: int, fits: bool) -> None:
    # Found in review: ctxfs measured only the state's messages, so an outer middleware
    # adding text each request sent 4,132 to 5,986 tokens in a 4,000 window with no event.
    ws = Workspace(f"memory://outer-adds-{words}")
    window = 4_000
    policy = ContextPolicy(max_input_tokens=window, clearing={"enabled": False})
    model = ScriptedChatModel(
        responses=[*(tool_call("fetch", {"n": i}) for i in range(12)), "done"]
    )
    events: list[Any] = []
    middleware = ContextMiddleware(
        ws, policy, tools=False, on_event=lambda event, _thread: events.append(event)
    )
    agent = create_agent(
        model, [fetch], middleware=[_Adding(words), middleware], checkpointer=InMemorySaver()
    )
    agent.invoke({"messages": [HumanMessage("go", id="u0")]}, {"configurable": {"thread_id": "t"}})
    counter = TiktokenCounter()
    over = [e for e in events if isinstance(e, ContextOverBudget)]
    measured = [e for e in events if isinstance(e, ContextMeasured)]
    assert len(measured) == len(model.requests)
    for sent, seen in zip(model.requests, measured, strict=True):
        size = counter.count_messages(sent)
        assert seen.tokens_after >= size  # the added text is in what ctxfs measured
        assert size <= window or over, size  # within the window, or an event says why
    # 300 words fit: ctxfs compacted the state to leave room for them; 1,200 words (about
    # 2,400 tokens) with the protected recent window and a summary do not, and events say so
    assert bool(over) != fits
