"""Tool calls built in code may hold values JSON cannot (bytes, a date, a set, NaN) or nest
without bound: counting, clearing, summarizing and the history tools take them, the archive
keeps them byte-exact where it can, and where it cannot the compaction says so and drops
nothing."""

from __future__ import annotations

import datetime
import itertools
import math

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxfs import ContextEngine, ContextPolicy, TiktokenCounter, TranscriptArchive, Workspace
from ctxfs._events import ArchiveFailed, Summarized
from ctxfs._json import dumps_any, dumps_compact
from ctxfs.testing import ScriptedChatModel, long_history
from ctxfs.tools._budget import OutputBudget
from ctxfs.tools._history import history_functions

_fresh = itertools.count()


def _nested(depth: int) -> dict[str, object]:
    top: dict[str, object] = {}
    here = top
    for _ in range(depth):
        here["a"] = {}
        here = here["a"]  # type: ignore[assignment]
    return top


def _history(args: dict[str, object]) -> list[BaseMessage]:
    messages = long_history(30, result_chars=800)
    call = {"name": "probe", "args": args, "id": "odd"}
    messages[3:3] = [
        AIMessage("", tool_calls=[call], id="odd-ai"),
        ToolMessage("probe done " * 300, tool_call_id="odd", id="odd-t"),
    ]
    return messages


def _compact(messages: list[BaseMessage]) -> tuple[Workspace, list[object]]:
    workspace = Workspace(f"memory://odd-args-{next(_fresh)}")
    engine = ContextEngine(workspace, ContextPolicy(max_input_tokens=4_000))
    model = ScriptedChatModel(responses=[f"Summary {n}." for n in range(5)])
    result = engine.compact(messages, thread_id="t", model=model)
    return workspace, list(result.events)


def test_values_json_cannot_hold_are_counted_summarized_and_archived_exactly() -> None:
    args = {
        "when": datetime.datetime(2020, 1, 2, 3, 4, 5),
        "blob": b"\x00\xffraw",
        "tags": {"x"},
        "ratio": math.nan,
    }
    messages = _history(args)
    assert TiktokenCounter().count_messages(messages) > 0
    workspace, events = _compact(messages)
    assert any(isinstance(e, Summarized) for e in events), events
    archived = TranscriptArchive(workspace, "t").read_all()
    (call,) = [m for m in archived if m.id == "odd-ai"]
    assert isinstance(call, AIMessage)
    kept = call.tool_calls[0]["args"]
    assert kept["blob"] == b"\x00\xffraw"  # bytes come back as bytes
    found = history_functions(workspace, OutputBudget(4_000, TiktokenCounter()), thread_id="t")
    search = {t.name: t for t in found}["history_search"]
    assert "Error" not in search(query="probe")


def test_arguments_nested_without_bound_fail_the_archive_and_drop_nothing() -> None:
    messages = _history({"deep": _nested(3_000)})
    assert TiktokenCounter().count_messages(messages) > 0
    _, events = _compact(messages)
    failed = [e for e in events if isinstance(e, ArchiveFailed)]
    assert failed and "cannot be written as a transcript" in failed[0].reason, events


def test_showing_any_value_never_raises() -> None:
    looped: dict[str, object] = {}
    looped["self"] = looped
    assert dumps_compact(looped) == '{"self":"…"}'
    assert dumps_any({"b": {1: "x", "a": 2}}) == '{"b": {"1": "x", "a": 2}}'
    assert dumps_any({"z": 1, "a": 2}, sort_keys=False) == '{"z": 1, "a": 2}'
    assert len(dumps_compact(_nested(5_000))) < 1_000
