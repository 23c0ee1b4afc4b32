"""Every JSON file ctxfs writes and reads back to decide, written by a newer ctxfs or edited
by hand with a key named twice.

A file of a newer format version is refused by each reader with an error naming the file and
both versions, and is never written over: an older ctxfs that read what it understood and
wrote the file again would drop the rest (an index rebuilt in the old format, a record
re-run). A key named twice is a format error naming the key: ``json.loads`` keeps the last
value without a word, so a hand edit that added a key instead of changing it was read as
neither author meant.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from ctxfs import (
    ArchiveError,
    ContextPolicy,
    MemoryFormatError,
    TaskRecordError,
    TranscriptArchive,
    WorkflowStateError,
    Workspace,
    WorkspaceError,
)
from ctxfs.lifecycle import collect_garbage
from ctxfs.memory import LongTermMemory, MemoryUpdate
from ctxfs.subagents import SubAgents
from ctxfs.subagents._record import record_path
from ctxfs.testing import ScriptedChatModel
from ctxfs.workflows import read_state
from tests.workflows._scenario import TASK, WORKFLOW_ID, workflow

_fresh = iter(range(10**6))
THREAD = "t0"


def _built() -> Workspace:
    workspace = Workspace(f"memory://file-formats-{next(_fresh)}")
    workflow(workspace).run(TASK, workflow_id=WORKFLOW_ID)
    memory = LongTermMemory(workspace, ("alice",))
    new = {"content": "Alice drinks tea.", "category": "knowledge", "confidence": 0.9}
    memory.apply(MemoryUpdate.model_validate({"new_facts": [new]}), thread_id=THREAD)
    archive = TranscriptArchive(workspace, THREAD)
    segment, _ = archive.write_segment(
        [HumanMessage("hello", id="h"), AIMessage("hi", id="a")], start=0, tokens=4
    )
    archive.commit(segment, summary=HumanMessage("Summary: greeting.", id="s"))
    SubAgents(
        workspace,
        model=ScriptedChatModel(responses=["done"]),
        policy=ContextPolicy(max_input_tokens=8_000),
    ).run("general-purpose", "Go.", parent_thread_id="p", tool_call_id="c")
    journal = {"format": "ctxfs-gc-journal", "version": 1, "thread": THREAD, "files": []}
    journal["started"] = datetime(2026, 1, 1, tzinfo=UTC).isoformat()
    workspace.write_text(f"{archive.directory}/gc.json", _dumped(journal))
    return workspace


def _dumped(document: dict[str, Any]) -> str:
    import json

    return json.dumps(document, indent=1) + "\n"


def _memory(workspace: Workspace) -> object:
    return LongTermMemory(workspace, ("alice",)).load()


def _index(workspace: Workspace) -> object:
    return TranscriptArchive(workspace, THREAD).segments()


def _record(workspace: Workspace) -> object:
    return SubAgents(
        workspace,
        model=ScriptedChatModel(responses=["again"]),
        policy=ContextPolicy(max_input_tokens=8_000),
    ).run("general-purpose", "Go.", parent_thread_id="p", tool_call_id="c")


def _gc(workspace: Workspace) -> object:
    later = datetime.now(UTC) + timedelta(days=30)
    return collect_garbage(workspace, older_than="7d", apply=True, clock=lambda: later)


# each file: where it is, the key of its format version and the version, its reader, and
# what the reader raises for a file of a newer version
FILES: dict[str, tuple[Callable[[Workspace], str], str, Callable[[Workspace], object], type]] = {
    "workflow state": (
        lambda ws: f"/sessions/{WORKFLOW_ID}.json",
        '"format": "ctxfs.workflow/1"',
        lambda ws: read_state(ws, WORKFLOW_ID),
        WorkflowStateError,
    ),
    "memory document": (
        lambda ws: ws.glob("/memories/**/memory.json").paths[0],
        '"version": 1',
        _memory,
        MemoryFormatError,
    ),
    "transcript index": (
        lambda ws: TranscriptArchive(ws, THREAD).index_path,
        '"version": 5',
        _index,
        ArchiveError,
    ),
    "sub-task record": (
        lambda ws: record_path("p/task-c"),
        '"version": 1',
        _record,
        TaskRecordError,
    ),
    "gc journal": (
        lambda ws: f"{TranscriptArchive(ws, THREAD).directory}/gc.json",
        '"version": 1',
        _gc,
        WorkspaceError,
    ),
}


def _newer(marker: str) -> str:
    found = re.search(r"(\d+)\"?$", marker)
    assert found is not None
    number = int(found.group(1))
    return marker[: found.start(1)] + str(number + 1) + marker[found.end(1) :]


@pytest.mark.parametrize("name", sorted(FILES))
def test_a_file_of_a_newer_format_is_refused_naming_both_versions_and_kept(name: str) -> None:
    # the index, the record and the journal were read as if they were this version's: the
    # record's result returned, the index rebuilt or extended in the old format, a newer
    # collector's journal finished by rules it does not know
    where, marker, reader, error = FILES[name]
    workspace = _built()
    path = where(workspace)
    text = workspace.read_text(path)
    assert text.count(marker) == 1, (marker, text[:300])
    newer = text.replace(marker, _newer(marker))
    workspace.write_text(path, newer)
    with pytest.raises(error) as caught:
        reader(workspace)
    message = str(caught.value)
    known = re.search(r"(\d+)\"?$", marker).group(1)  # type: ignore[union-attr]
    assert f"format version {int(known) + 1}, written by a newer ctxfs" in message, message
    assert f"reads up to version {known}" in message and path in message, message
    assert workspace.read_text(path) == newer


DUPLICATED = {
    "workflow state": WorkflowStateError,
    "memory document": MemoryFormatError,
    "sub-task record": TaskRecordError,
}


@pytest.mark.parametrize("name", sorted(DUPLICATED))
def test_a_key_named_twice_is_a_format_error_naming_it(name: str) -> None:
    # the last value won without a word
    where, _, reader, _ = FILES[name]
    workspace = _built()
    path = where(workspace)
    text = workspace.read_text(path).rstrip()
    assert text.endswith("}")
    twice = text[:-1].rstrip() + ',\n "format": "hand edited"\n}\n'
    workspace.write_text(path, twice)
    with pytest.raises(DUPLICATED[name]) as caught:
        reader(workspace)
    assert "the key 'format' appears twice" in str(caught.value) and path in str(caught.value)
    assert workspace.read_text(path) == twice


def test_an_index_with_a_key_named_twice_is_rebuilt_saying_why() -> None:
    # the index is a cache of the segments' records: rebuilt, and the reason names the key
    workspace = _built()
    archive = TranscriptArchive(workspace, THREAD)
    before = archive.segments()
    text = workspace.read_text(archive.index_path).rstrip()
    workspace.write_text(archive.index_path, text[:-1] + ', "segments": []}\n')
    again = TranscriptArchive(workspace, THREAD)
    assert again.segments() == before
    assert any("the key 'segments' appears twice" in why for why in again.repairs), again.repairs


def test_an_index_page_of_a_newer_format_is_refused_too() -> None:
    workspace = Workspace(f"memory://file-formats-pages-{next(_fresh)}")
    archive = TranscriptArchive(workspace, THREAD)
    for number in range(33):  # a full page of 32, and one in the head
        said = [HumanMessage(f"q{number}", id=f"h{number}"), AIMessage("a", id=f"a{number}")]
        segment, _ = archive.write_segment(said, start=2 * number, tokens=4)
        archive.commit(segment, summary=HumanMessage(f"Summary {number}.", id=f"s{number}"))
    page = archive.page_path(1)
    text = workspace.read_text(page)
    newer = text.replace('"version": 5', '"version": 6')
    assert newer != text
    workspace.write_text(page, newer)
    with pytest.raises(ArchiveError, match="format version 6, written by a newer ctxfs"):
        TranscriptArchive(workspace, THREAD).segments()
    assert workspace.read_text(page) == newer
