"""Every storage call of a compaction, failed in turn: nothing is lost, nothing is stuck.

One compaction that offloads old tool inputs, clears old tool results and summarizes (with
a summary model) makes a known sequence of store calls. Each of them in turn is made to
fail: with an ``OSError`` (the storage failed; the engine goes on or reports it) and with an
exception that is not an error at all (the process dying at that point; a fresh engine takes
over). After each, the store itself (not the failing one) holds every original message
byte-exact, among the archive and the context with its pointers resolved; every index entry
names a segment file whose SHA-256 it holds; and the next turn compacts and summarizes.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxfs import (
    ContextEngine,
    ContextPolicy,
    Summarized,
    TranscriptArchive,
    Workspace,
    WorkspaceError,
    restore_messages,
)
from ctxfs._archive._codec import sha
from ctxfs.testing import ScriptedChatModel
from tests._every_call import FailingAt, Killed


def turn(n: int) -> list[BaseMessage]:
    body = "\n".join(f"turn {n} line {i}: value {i * n % 97} needle{n}x{i}" for i in range(120))
    source = "\n".join(f"def f{n}_{i}(): return {i}" for i in range(80))
    calls: Any = [
        {"name": "bash", "args": {"command": f"run {n}"}, "id": f"b{n}"},
        {"name": "write", "args": {"path": f"/src/m{n}.py", "content": source}, "id": f"w{n}"},
    ]
    return [
        HumanMessage(f"step {n}", id=f"h{n}"),
        AIMessage(f"doing {n}", tool_calls=calls, id=f"a{n}"),
        ToolMessage(body, tool_call_id=f"b{n}", name="bash", id=f"tb{n}"),
        ToolMessage("ok", tool_call_id=f"w{n}", name="write", id=f"tw{n}"),
    ]


def policy() -> ContextPolicy:
    summaries = ScriptedChatModel(responses=[f"Summary {i}." for i in range(20)])
    return ContextPolicy(
        max_input_tokens=12_000,
        tool_results={"threshold": {"tokens": 5_000}},
        tool_inputs={"min_chars": 300, "keep_messages": 4},
        summarization={"trigger": {"messages": 24}, "keep": {"messages": 8}, "model": summaries},
    )


HISTORY: list[BaseMessage] = [SystemMessage("agent", id="sys")] + [
    m for n in range(9) for m in turn(n)
]
NEXT = [*turn(9), *turn(10)]


_fresh = itertools.count()


def compact(
    at: int | None, error: type[BaseException], how: str = ""
) -> tuple[Workspace, FailingAt, Any]:
    raw = Workspace(f"memory://every-call-{next(_fresh)}")
    store = FailingAt(raw.store, at, error, lost=how == "reply lost", how=how)
    engine = ContextEngine(Workspace(store, check=False), policy())
    # a storage error is either handled (the result says what happened) or a ctxfs error
    expected = Killed if error is Killed else WorkspaceError
    try:
        return raw, store, engine.compact(HISTORY, thread_id="t")
    except expected:
        return raw, store, None


def all_there(raw: Workspace, context: list[BaseMessage], history: list[BaseMessage]) -> None:
    restored = restore_messages(context, raw, thread_id="t")
    for original in history:
        back = restored.get(original.id)
        assert back is not None, f"{original.id} is neither archived nor in the context"
        assert back.content == original.content, original.id
        if isinstance(original, AIMessage):
            assert isinstance(back, AIMessage) and back.tool_calls == original.tool_calls
    for segment in TranscriptArchive(raw, "t").segments():
        assert sha(raw.read_bytes(segment.jsonl_path)) == segment.jsonl_sha256


def _calls() -> int:
    _, store, result = compact(None, OSError)
    kinds = {type(e).__name__ for e in result.events}
    assert {"ToolInputOffloaded", "ToolResultCleared", "Summarized"} <= kinds, kinds
    assert any(call.path.startswith("/transcripts/") for call in store.calls)
    return len(store.calls)


@pytest.mark.slow
@pytest.mark.parametrize("error", [OSError, Killed], ids=["storage error", "killed"])
def test_every_store_call_of_a_compaction_may_fail(error: type[BaseException]) -> None:
    calls = _calls()
    for at in range(1, calls + 1):
        raw, store, result = compact(at, error)
        assert len(store.calls) >= at, "the sequence of calls changed"
        context = list(HISTORY) if result is None else result.messages
        all_there(raw, context, HISTORY)
        # the next turn, the storage well again (after a death, in a fresh engine)
        store.at = None
        engine = ContextEngine(Workspace(store, check=False), policy())
        after = engine.compact([*context, *NEXT], thread_id="t")
        summarized = result is not None and result.summarized
        assert summarized or any(isinstance(e, Summarized) for e in after.events), at
        all_there(raw, after.messages, [*HISTORY, *NEXT])


_MISBEHAVING = {
    "reply lost": ("write", "remove"),
    "torn": ("write",),
    "retried": ("write",),
    "not found": ("info", "ls", "walk", "open_read", "read_bytes", "read_versioned", "fetch"),
}


@pytest.mark.slow
@pytest.mark.parametrize("how", sorted(_MISBEHAVING))
def test_every_store_call_of_a_compaction_may_misbehave(how: str) -> None:
    """What a real store does besides failing, at each call it applies to: a write done and
    its reply lost, a write torn mid-way, a conditional write done and refused as its retry
    would be, a read answered "not found" for a file that is there."""
    _, clean, _ = compact(None, OSError)
    picked = [at for at, c in enumerate(clean.calls, 1) if c.method in _MISBEHAVING[how]]
    assert picked
    for at in picked:
        raw, store, result = compact(at, OSError, how)
        context = list(HISTORY) if result is None else result.messages
        all_there(raw, context, HISTORY)
        store.heal()
        engine = ContextEngine(Workspace(store, check=False), policy())
        after = engine.compact([*context, *NEXT], thread_id="t")
        summarized = result is not None and result.summarized
        assert summarized or any(isinstance(e, Summarized) for e in after.events), (how, at)
        all_there(raw, after.messages, [*HISTORY, *NEXT])
