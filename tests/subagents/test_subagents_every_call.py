"""Every storage call of a sub-task through the ``task`` tool, failed in turn.

A sub-agent fetches a long page (offloaded to ``/tool_results/``), writes a note with
``write_file`` and answers; the ``task`` tool runs it and records it in ``task.json``. Each
store call of a clean run fails in turn: an ``OSError`` (the tool answers, never raises:
with the result, or an error the model can act on), the process dying there, and for a write
its reply lost. Afterwards the record, if there is one, parses, and one that says the task
ended names only files that are there (its transcript, its artifacts); and with the storage
well again (a fresh process after a death) the same call ends ``completed``, with its
transcript and its record (its note among its artifacts unless its ``write_file`` failed),
and the page it fetched is readable byte-exact.
"""

from __future__ import annotations

import contextlib
import itertools
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool

from ctxfs import ContextPolicy, TranscriptArchive, Workspace, restore_messages
from ctxfs.subagents import SubAgents
from ctxfs.subagents._record import read_record, record_path
from ctxfs.testing import Fault, FaultyStore, ScriptedChatModel, tool_call
from tests._every_call import FailingAt, Killed, faults

PARENT = "main"
CALL = "call_1"
THREAD = f"{PARENT}/task-{CALL}"
NOTE = "/notes/ledger.md"
NOTE_TEXT = "The export is slow because it is not batched.\n"


def page() -> str:
    return "\n".join(f"line {i}: the ledger export batch {i} took {i * 7} ms" for i in range(150))


@tool
def fetch_page(n: int) -> str:
    """Returns page n of the ledger's log."""
    return page()


_fresh = itertools.count()


def registry(workspace: Workspace) -> SubAgents:
    model = ScriptedChatModel(
        responses=[
            tool_call("fetch_page", {"n": 1}),
            tool_call("write_file", {"file_path": NOTE, "content": NOTE_TEXT}),
            "Done: the note is in /notes/ledger.md.",
        ]
    )
    policy = ContextPolicy(max_input_tokens=8_000, tool_results={"threshold": {"tokens": 300}})
    return SubAgents(workspace, model=model, policy=policy, tools=[fetch_page])


def call(workspace: Workspace) -> ToolMessage:
    task = registry(workspace).task_tool(parent_thread_id=PARENT)
    args = {"description": "Why is the export slow?", "subagent_type": "general-purpose"}
    out: Any = task.invoke({"type": "tool_call", "name": "task", "args": args, "id": CALL})
    message = out if isinstance(out, ToolMessage) else out.update["messages"][0]
    assert isinstance(message, ToolMessage)
    return message


def record_true(raw: Workspace) -> None:
    """A record that parses; one that says the task ended names files that are there."""
    if not raw.exists(record_path(THREAD)):
        return
    record = read_record(raw, THREAD)
    assert record is not None, raw.read_text(record_path(THREAD))
    if record.result is not None:
        for path in (*record.result.transcripts, *record.result.artifacts):
            assert raw.exists(path), f"the record names {path}, which is not there"


def page_kept(raw: Workspace) -> None:
    """The page the sub-agent fetched is readable byte-exact (offloaded, or archived)."""
    restored = restore_messages([], raw, thread_id=THREAD)
    assert page() in {m.content for m in restored.values() if isinstance(m, ToolMessage)}


@pytest.mark.slow
def test_every_store_call_of_a_task_may_fail() -> None:
    raw = Workspace(f"memory://subagents-every-call-{next(_fresh)}")
    store = FailingAt(raw.store)
    first = call(Workspace(store, check=False))
    assert first.status == "success", first.content
    areas = {c.path.split("/")[1] for c in store.calls}
    assert {"tool_results", "transcripts", "notes"} <= areas, areas
    for fault in faults(store.calls, both=False, wide=True):
        raw = Workspace(f"memory://subagents-every-call-{next(_fresh)}")
        store = fault.store(raw.store)
        with contextlib.suppress(Killed):
            answer = call(Workspace(store, check=False))
            assert fault.error is not Killed, "a death was caught"
            assert answer.status in ("success", "error"), fault
        store.heal()
        record_true(raw)
        # the same call again, the storage well (after a death, in a fresh process)
        again = call(Workspace(store, check=False))
        assert again.status == "success", (fault, again.content)
        record = read_record(raw, THREAD)
        assert record is not None and record.status == "completed", fault
        record_true(raw)
        if NOTE in record.result.artifacts:  # else its write_file failed, and it was told
            assert raw.read_text(NOTE) == NOTE_TEXT, fault
        page_kept(raw)


def test_a_task_whose_transcript_failed_runs_again_and_is_archived() -> None:
    raw = Workspace(f"memory://subagents-every-call-{next(_fresh)}")
    store = FaultyStore(raw.store)
    segment, _ = TranscriptArchive(raw, THREAD).segment_paths(1)
    store.add(Fault(method="write", path=segment, times=None))
    first = call(Workspace(store, check=False))
    assert first.status == "success" and "transcript could not be written" in first.content
    record = read_record(raw, THREAD)
    assert record is not None and record.status == "running"  # not a result nothing backs
    store.heal()
    again = call(Workspace(store, check=False))
    record = read_record(raw, THREAD)
    assert again.status == "success" and record is not None and record.status == "completed"
    assert record.result is not None and record.result.transcript is not None
    record_true(raw)
    page_kept(raw)
