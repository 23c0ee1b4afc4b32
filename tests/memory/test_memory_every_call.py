"""Every storage call of long-term memory, failed in turn: nothing learned before is lost.

A memory with two versions (and a thread's archived transcript and conversation log) is
changed or read by one operation: learning from a run, consolidating, rolling back,
forgetting, injecting at session start, recalling, and a whole ``MemoryMiddleware`` agent
run. Each store call of the operation in turn fails, with an ``OSError`` and with the process
dying there. Afterwards: the operation completed or raised a ctxfs error; the document
parses and is the one before or the one the operation makes; every version file parses and
says the revision it is named for; and with the storage well again (a fresh process after a
death) the operation succeeds, the versions run without a gap and the Markdown rendering is
the document's.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Callable
from typing import Any

import pytest
from _memory_helpers import FakeTime, extraction_reply, fact, replies_in_turn, update
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage

from ctxfs import TranscriptArchive, Workspace, WorkspaceError
from ctxfs.memory import LongTermMemory, MemoryDocument, MemoryMiddleware, MemorySettings
from ctxfs.memory._conversations import conversation_files, read_conversation
from ctxfs.memory._document import parse_document, render_markdown
from ctxfs.testing import ScriptedChatModel, StoreCall
from tests._every_call import FailingAt, Killed, faults

NAMESPACE = ("alice",)
TEA = "Alice drinks green tea every morning."
RUST = "Alice writes her services in Rust."
DEPLOY = "Alice deploys the billing service on Fridays."
DEPLOY_AGAIN = "Alice deploys the billing service on Fridays only."

_fresh = itertools.count()


def memory(workspace: Workspace, **extra: Any) -> LongTermMemory:
    settings = MemorySettings(debounce_seconds=0)
    return LongTermMemory(workspace, NAMESPACE, settings=settings, now=FakeTime(), **extra)


def prepared() -> Workspace:
    """A memory at version 2 (two of its facts alike), a thread's archived transcript and
    its conversation log."""
    raw = Workspace(f"memory://memory-every-call-{next(_fresh)}")
    ltm = memory(raw)
    ltm.apply(update(fact(TEA), fact(RUST)), thread_id="t0")
    ltm.apply(update(fact(DEPLOY, 0.8), fact(DEPLOY_AGAIN, 0.7)), thread_id="t0")
    archive = TranscriptArchive(raw, "t0")
    said = [HumanMessage("the ledger export is slow", id="h"), AIMessage("use batches", id="a")]
    segment, _ = archive.write_segment(said, start=0, tokens=10)
    archive.commit(segment, summary=HumanMessage("Summary: ledger export.", id="s"))
    ltm.record("t0", said)
    return raw


def learn(workspace: Workspace) -> object:
    reply = extraction_reply(fact("Alice keeps the ledger in Postgres.", 0.9))
    model = ScriptedChatModel(responses=[replies_in_turn(reply)])
    said = [HumanMessage("we moved the ledger to Postgres", id="u1"), AIMessage("ok", id="r1")]
    return memory(workspace, model=model).learn(said, thread_id="t1")


def consolidate(workspace: Workspace) -> object:
    return memory(workspace).consolidate()


def rollback(workspace: Workspace) -> object:
    return memory(workspace).rollback(1)


def forget(workspace: Workspace) -> object:
    ltm = memory(workspace)
    gone = [f.id for f in ltm.load().facts if f.content == RUST]
    return ltm.forget(gone)


def inject(workspace: Workspace) -> object:
    return memory(workspace).prompt(thread_id="t2").text


def recall(workspace: Workspace) -> object:
    return memory(workspace).recall_prompt("ledger export batches", session="t2").text


_SESSIONS: list[LongTermMemory] = []
"""The memory of the last session: what its process still holds after a storage error."""


def session(workspace: Workspace) -> object:
    reply = extraction_reply(fact("Alice ships the ledger weekly.", 0.9))
    extractor = ScriptedChatModel(script_id="extract", responses=[lambda _: reply])
    ltm = memory(workspace, model=extractor)
    _SESSIONS[:] = [ltm]
    agent = create_agent(
        ScriptedChatModel(script_id="agent", responses=["Done: the ledger ships."]),
        [],
        middleware=[MemoryMiddleware(ltm)],
    )
    out = agent.invoke({"messages": [("user", "ship the ledger export")]})
    return out["messages"][-1].content


OPERATIONS: dict[str, Callable[[Workspace], object]] = {
    "learn": learn,
    "consolidate": consolidate,
    "rollback": rollback,
    "forget": forget,
    "inject": inject,
    "recall": recall,
    "session": session,
}


def contents(document: MemoryDocument) -> set[str]:
    return {f.content for f in document.facts}


def files_parse(raw: Workspace) -> MemoryDocument:
    """Every document and version parses, and a version file is the revision it is named
    for; the current document."""
    ltm = memory(raw)
    current = ltm.load()
    for info in raw.store.walk("/memories"):
        if "/.versions/" in info.path:
            kept = parse_document(raw.read_bytes(info.path), info.path)
            assert info.path.endswith(f"/{kept.revision:06d}.json"), info.path
            assert kept.revision <= current.revision, f"{info.path} is ahead of the document"
    return current


def versions_whole(raw: Workspace) -> None:
    ltm = memory(raw)
    current = ltm.load()
    assert [d.revision for d in ltm.history()] == list(range(1, current.revision + 1))
    for revision in range(1, current.revision + 1):
        assert ltm.file.version(revision).revision == revision
    assert raw.read_text(ltm.file.markdown_path) == render_markdown(current)


def clean(name: str) -> tuple[list[StoreCall], MemoryDocument, MemoryDocument]:
    raw = prepared()
    before = memory(raw).load()
    store = FailingAt(raw.store)
    OPERATIONS[name](Workspace(store, check=False))
    return store.calls, before, memory(raw).load()


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=[pytest.mark.slow] * (n == "session")) for n in OPERATIONS]
)
def test_every_store_call_of_a_memory_operation_may_fail(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.CRITICAL, logger="ctxfs")
    calls, before, after = clean(name)
    done = contents(after)
    for fault in faults(calls, wide=True):
        raw = prepared()
        store = fault.store(raw.store)
        expected = Killed if fault.error is Killed else WorkspaceError
        with contextlib.suppress(expected):
            OPERATIONS[name](Workspace(store, check=False))
        store.heal()
        current = files_parse(raw)
        assert contents(current) in (contents(before), done), (name, fault)
        history = [d.revision for d in memory(raw).history()]
        assert history == list(range(1, current.revision + 1)), (name, fault)
        for log in conversation_files(raw):
            lines = read_conversation(raw, log)
            assert len(lines) == len(set(lines)), f"{log} holds a line twice ({fault})"
        if name == "session" and fault.error is OSError:
            # the agent ran on without its memory; the turns it could not learn from wait
            _SESSIONS[0].flush()
            assert done <= contents(files_parse(raw)), (name, fault)
        # the next attempt, the storage well (after a death, in a fresh process)
        OPERATIONS[name](Workspace(store, check=False))
        current = files_parse(raw)
        if name in ("learn", "session"):
            assert done <= contents(current), (name, fault)
        else:
            assert contents(current) == done, (name, fault)
        memory(raw).apply(update(fact("Alice reviews on Mondays.")), thread_id="t3")
        versions_whole(raw)
