"""A request over its limit after the usual steps: lossless means first, no useless archive."""

from __future__ import annotations

import random
import string

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxfs import ContextEngine, ContextOverBudget, ContextPolicy, Workspace
from ctxfs.testing import long_history


def _words(count: int, seed: int) -> str:
    pick = random.Random(seed)
    return " ".join(
        "".join(pick.choice(string.ascii_lowercase) for _ in range(pick.randint(3, 8)))
        for _ in range(count)
    )


def _files(workspace: Workspace) -> dict[str, bytes]:
    return {path: workspace.read_bytes(path) for path in workspace.glob("**").paths}


def _twice(
    messages: list[BaseMessage], name: str, *, again: bool = True
) -> tuple[ContextEngine, list[BaseMessage]]:
    """Compacts once and (``again``) checks that compacting the result changes and writes
    nothing."""
    workspace = Workspace(f"memory://over-window-{name}")
    engine = ContextEngine(workspace, ContextPolicy(max_input_tokens=4_000))
    first = engine.compact(messages, thread_id="t")
    files = _files(workspace)
    if again:
        second = engine.compact(first.messages, thread_id="t")
        dumped = [m.model_dump() for m in first.messages]
        assert [m.model_dump() for m in second.messages] == dumped
        assert _files(workspace) == files
    limit = engine.policy.request_limit_tokens
    over = [e for e in first.events if isinstance(e, ContextOverBudget)]
    assert (first.request_tokens <= limit) == (not over)
    return engine, first.messages


def test_huge_arguments_of_the_latest_completed_call_go_to_a_file() -> None:
    content = _words(6_000, 1)
    call = {"id": "c1", "name": "write_file", "args": {"path": "/x", "content": content}}
    messages: list[BaseMessage] = [
        HumanMessage("write it", id="h1"),
        AIMessage("", id="a1", tool_calls=[call]),
        ToolMessage("ok", tool_call_id="c1", id="r1"),
    ]
    engine, kept = _twice(messages, "args")
    assert engine.token_counter.count_messages(kept) <= engine.policy.request_limit_tokens
    (path,) = [p for p in _files(engine.workspace) if p.startswith("/tool_inputs/")]
    assert engine.workspace.read_text(path) == content
    assert not [p for p in _files(engine.workspace) if p.startswith("/transcripts/")]


def _unread(results: int, words: int, *, again: bool) -> None:
    calls = [{"id": f"c{i}", "name": "fetch", "args": {"n": str(i)}} for i in range(results)]
    texts = [_words(words, i) for i in range(results)]
    messages: list[BaseMessage] = [
        HumanMessage("fetch them", id="h1"),
        AIMessage("", id="a1", tool_calls=calls),
        *(
            ToolMessage(text, tool_call_id=f"c{i}", id=f"r{i}", name="fetch")
            for i, text in enumerate(texts)
        ),
    ]
    engine, kept = _twice(messages, f"unread-{results}-{words}-{again}", again=again)
    assert engine.token_counter.count_messages(kept) <= engine.policy.request_limit_tokens
    saved = set(_files(engine.workspace).values())
    for text, message in zip(texts, kept[-results:], strict=True):
        assert message.content == text or text.encode() in saved  # nothing lost


@settings(max_examples=8, deadline=None)
@given(results=st.integers(min_value=4, max_value=14), words=st.integers(200, 340))
def test_unread_results_together_over_the_limit_are_offloaded(results: int, words: int) -> None:
    _unread(results, words, again=False)


def test_unread_results_offloaded_once_are_a_fixed_point() -> None:
    _unread(9, 254, again=True)


def test_no_archive_is_written_when_a_summary_cannot_make_the_request_fit() -> None:
    huge = HumanMessage(_words(6_000, 2), id="huge")
    messages = [*long_history(3), huge]
    engine, kept = _twice(messages, "hopeless")
    # nothing summarized: the huge message itself went to a file, and the request fits
    assert kept[:-1] == messages[:-1] and kept[-1] != huge
    (path,) = _files(engine.workspace)
    assert "/messages/" in path and engine.workspace.read_text(path) == huge.content
    assert not [p for p in _files(engine.workspace) if p.endswith(".jsonl")]
