"""DESIGN.md invariants 1, 2, 4, 6 and 8 for offloading, as hypothesis properties."""

from __future__ import annotations

import itertools

import tiktoken
from _histories import (
    comparable,
    histories,
    outputs,
    policies,
    resolve,
    run_pipeline,
    snapshot,
    thread_ids,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxfs import ContextEngine, ContextPolicy, Workspace, pointer_of, resolve_pointers
from ctxfs._tokens import ENCODING_NAME, TiktokenCounter
from ctxfs.tools import tool_functions

_fresh = itertools.count()
_PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _engine(policy: ContextPolicy) -> ContextEngine:
    return ContextEngine(Workspace(f"memory://prop{next(_fresh)}"), policy)


def _shape(messages: list[BaseMessage]) -> list[tuple[object, ...]]:
    shape: list[tuple[object, ...]] = []
    for m in messages:
        if isinstance(m, AIMessage):
            shape.append((m.type, m.id, tuple(c["id"] for c in m.tool_calls)))
        elif isinstance(m, ToolMessage):
            shape.append((m.type, m.id, m.tool_call_id))
        else:
            shape.append((m.type, m.id))
    return shape


@_PROPERTY
@given(history=histories(), policy=policies(), thread_id=thread_ids)
def test_no_loss_pointers_resolve_to_the_original_bytes(
    history: list[BaseMessage], policy: ContextPolicy, thread_id: str
) -> None:
    engine = _engine(policy)
    snapshot_before = [m.model_copy(deep=True) for m in history]
    out = run_pipeline(engine, history, thread_id)
    assert [comparable(m) for m in resolve(out, engine.workspace)] == [
        comparable(m) for m in history
    ]
    # inputs never mutated
    assert [m.model_dump() for m in history] == [m.model_dump() for m in snapshot_before]


@_PROPERTY
@given(history=histories(), policy=policies(), thread_id=thread_ids)
def test_pairing_and_order_are_unchanged(
    history: list[BaseMessage], policy: ContextPolicy, thread_id: str
) -> None:
    out = run_pipeline(_engine(policy), history, thread_id)
    assert _shape(out) == _shape(history)
    assert out[0].type == "system"


@_PROPERTY
@given(history=histories(), policy=policies(), thread_id=thread_ids)
def test_deterministic_and_idempotent(
    history: list[BaseMessage], policy: ContextPolicy, thread_id: str
) -> None:
    first, second = _engine(policy), _engine(policy)
    out1 = run_pipeline(first, history, thread_id)
    out2 = run_pipeline(second, history, thread_id)
    assert out1 == out2
    files = snapshot(first.workspace)
    assert files == snapshot(second.workspace)
    # re-running on the original (crash-resume) and on the output changes nothing
    assert run_pipeline(first, history, thread_id) == out1
    assert run_pipeline(first, out1, thread_id) == out1
    assert snapshot(first.workspace) == files


@_PROPERTY
@given(history=histories(), policy=policies(), thread_id=thread_ids)
def test_reading_an_offloaded_file_back_is_never_offloaded_again(
    history: list[BaseMessage], policy: ContextPolicy, thread_id: str
) -> None:
    engine = _engine(policy)
    out = run_pipeline(engine, history, thread_id)
    files_before = snapshot(engine.workspace)
    read_file = {f.name: f for f in tool_functions(engine.workspace)}["read_file"]
    for message in out:
        if not isinstance(message, ToolMessage) or not isinstance(message.content, str):
            continue
        held = pointer_of(message)
        if held is None:
            continue
        path = held.path
        # ctxfs's recovery tool pages through the file: never offloaded
        page = read_file(file_path=path, offset=0, limit=50)
        read_back = ToolMessage(content=page, tool_call_id="r", name="read_file")
        kept = engine.offload_tool_result(read_back, thread_id=thread_id, tool=read_file)
        assert kept is read_back
        whole = ToolMessage(
            content=engine.workspace.read_text(path), tool_call_id="r", name="read_file"
        )
        assert engine.offload_tool_result(whole, thread_id=thread_id, tool=read_file) is whole
    assert snapshot(engine.workspace) == files_before


@settings(max_examples=60, deadline=None)
@given(history=histories(), policy=policies(), thread_id=st.text(max_size=8), tail=outputs)
def test_a_pointer_quoted_by_another_tool_is_content(
    history: list[BaseMessage], policy: ContextPolicy, thread_id: str, tail: str
) -> None:
    """Only ctxfs's own pointers are pointers: a quoted one (with or without more text after
    it, with or without ctxfs's metadata copied along) is offloaded like any content."""
    engine = _engine(policy)
    out = run_pipeline(engine, history, thread_id)
    for message in out:
        if pointer_of(message) is None:
            continue
        assert isinstance(message, ToolMessage) and isinstance(message.content, str)
        for text, kwargs in (
            (message.content, {}),
            (message.content + tail, {}),
            (message.content + tail, message.additional_kwargs),
        ):
            quoted = ToolMessage(text, tool_call_id="quote", name="bash", additional_kwargs=kwargs)
            if pointer_of(quoted) is not None:
                # a perfect copy, metadata included, is the pointer itself
                assert text == message.content and kwargs
                continue
            kept = engine.offload_tool_result(quoted, thread_id=thread_id)
            assert resolve_pointers([kept], engine.workspace)[0].content == text


@settings(max_examples=150, deadline=None)
@given(text=outputs | st.text())
def test_exact_counts_agree_with_tiktoken(text: str) -> None:
    encoding = tiktoken.get_encoding(ENCODING_NAME)
    counter = TiktokenCounter()
    assert counter.count_text(text) == len(encoding.encode(text, disallowed_special=()))
    assert counter.count_text(text) <= counter.upper_bound(text)


@_PROPERTY
@given(history=histories())
def test_message_counts_sum_the_counted_texts(history: list[BaseMessage]) -> None:
    from ctxfs._tokens import MESSAGE_OVERHEAD_TOKENS, message_text_parts

    encoding = tiktoken.get_encoding(ENCODING_NAME)
    counter = TiktokenCounter()
    expected = sum(
        MESSAGE_OVERHEAD_TOKENS
        + sum(len(encoding.encode(p, disallowed_special=())) for p in message_text_parts(m))
        for m in history
    )
    assert counter.count_messages(history) == expected
    assert counter.count_messages(history) == expected  # cached path agrees
