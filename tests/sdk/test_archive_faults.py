"""The archive never regresses: a lost, torn, malformed or stale index is rebuilt from the
segments' own records; segment names are never reused; odd content never blocks it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxfs import (
    ArchiveFailed,
    ArchiveRepaired,
    ContextEngine,
    ContextPolicy,
    Summarized,
    TranscriptArchive,
    Workspace,
    restore_messages,
)
from ctxfs._archive._transcripts import decode_jsonl, encode_jsonl

POLICY = ContextPolicy(
    max_input_tokens=2_000,
    clearing={"enabled": False},
    summarization={"trigger": {"messages": 12}, "keep": {"messages": 2}},
)


def turn(n: int, output: str = "") -> list[BaseMessage]:
    call: list[Any] = [{"name": "bash", "args": {"command": f"step {n}"}, "id": f"c{n}"}]
    return [
        HumanMessage(f"request {n}", id=f"h{n}"),
        AIMessage(f"working on {n}", tool_calls=call, id=f"a{n}"),
        ToolMessage(output or f"output {n}", tool_call_id=f"c{n}", name="bash", id=f"t{n}"),
    ]


def run(
    engine: ContextEngine, turns: int, between: Callable[[int], None] | None = None
) -> tuple[list[BaseMessage], list[BaseMessage], list[Any]]:
    """An agent loop: a turn arrives, the history is compacted; returns (all, context, events)."""
    everything: list[BaseMessage] = [SystemMessage("agent", id="sys")]
    context = list(everything)
    events: list[Any] = []
    for n in range(turns):
        new = turn(n)
        everything += new
        context = [*context, *new]
        result = engine.compact(context, thread_id="t")
        context, events = result.messages, [*events, *result.events]
        if between is not None:
            between(n)
    return everything, context, events


def _index(ws: Workspace) -> str:
    return TranscriptArchive(ws, "t").index_path


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda ws: ws.rm(_index(ws)), id="missing"),
        pytest.param(
            lambda ws: ws.write_bytes(_index(ws), ws.read_bytes(_index(ws))[:40]), id="torn"
        ),
        pytest.param(
            lambda ws: ws.write_text(_index(ws), json.dumps({"segments": [{"number": "x"}]})),
            id="wrong types",
        ),
        pytest.param(
            lambda ws: ws.write_text(
                _index(ws),
                json.dumps({**json.loads(ws.read_text(_index(ws))), "segments": []}),
            ),
            id="stale",
        ),
    ],
)
def test_a_damaged_index_is_rebuilt_and_nothing_committed_is_lost(
    make_workspace: Callable[..., Workspace], damage: Callable[[Workspace], None]
) -> None:
    ws = make_workspace()
    engine = ContextEngine(ws, POLICY)
    damaged: list[int] = []

    def hurt(n: int) -> None:
        if not damaged and TranscriptArchive(ws, "t").segments():
            files = {p: ws.read_bytes(p) for p in _segment_files(ws)}
            damage(ws)
            damaged.append(n)
            hurt.files = files  # type: ignore[attr-defined]

    everything, context, events = run(engine, 14, hurt)
    assert damaged, "the run never summarized"
    assert any(isinstance(e, ArchiveRepaired) for e in events)
    summaries = [e for e in events if isinstance(e, Summarized)]
    assert len(summaries) >= 2
    # segments committed before the damage are untouched, and their numbers never reused
    for path, data in hurt.files.items():  # type: ignore[attr-defined]
        assert ws.read_bytes(path) == data
    numbers = [s.number for s in TranscriptArchive(ws, "t").segments()]
    assert numbers == list(range(1, len(summaries) + 1))
    # and the whole run reads back from the archive and the context
    restored = restore_messages(context, ws, thread_id="t")
    for message in everything[1:]:
        assert restored[message.id].content == message.content


def _segment_files(ws: Workspace) -> list[str]:
    folder = TranscriptArchive(ws, "t").directory
    return [e.path for e in ws.ls(folder) if "segment-" in e.path]


def test_a_segment_whose_record_is_gone_is_rebuilt_from_its_files() -> None:
    ws = Workspace("memory://record-gone")
    engine = ContextEngine(ws, POLICY)
    _, context, _ = run(engine, 8)
    archive = TranscriptArchive(ws, "t")
    *_, last = archive.segments()
    ws.rm(archive.index_path)
    ws.rm(archive.record_path(last.number))
    more = [*context, *turn(90), *turn(91), *turn(92), *turn(93)]
    result = engine.compact(more, thread_id="t")
    assert result.summarized  # the summary's segment is vouched for by its verified files
    rebuilt = TranscriptArchive(ws, "t")
    assert [s.number for s in rebuilt.segments()] == list(range(1, last.number + 2))
    assert rebuilt.segments()[last.number - 1].jsonl_sha256 == last.jsonl_sha256
    assert ws.exists(archive.record_path(last.number))  # and its record written again


def test_a_summary_naming_a_segment_whose_record_and_file_are_gone_drops_nothing() -> None:
    ws = Workspace("memory://gone")
    engine = ContextEngine(ws, POLICY)
    _, context, _ = run(engine, 8)
    archive = TranscriptArchive(ws, "t")
    *_, last = archive.segments()
    ws.rm(archive.index_path)
    ws.rm(archive.record_path(last.number))
    ws.rm(last.jsonl_path)
    more = [*context, *turn(90), *turn(91), *turn(92), *turn(93)]
    result = engine.compact(more, thread_id="t")
    assert result.messages == more  # nothing dropped: the summary's segment cannot be vouched
    assert not result.summarized
    (failed,) = result.events
    assert isinstance(failed, ArchiveFailed) and "could not be read either" in failed.reason


def test_unserializable_content_is_archived_and_never_blocks_compaction() -> None:
    ws = Workspace("memory://odd")
    engine = ContextEngine(ws, POLICY)
    odd = [
        HumanMessage("lone \ud800 surrogate", id="odd-1"),
        AIMessage("raw", additional_kwargs={"raw": b"\x00\xff bytes"}, id="odd-2"),
        ToolMessage("non-utf8 name: caf\udce9.txt", tool_call_id="x", id="odd-3"),
    ]
    context: list[BaseMessage] = [SystemMessage("agent", id="sys"), *odd]
    for n in range(8):
        context = engine.compact([*context, *turn(n)], thread_id="t").messages
    segments = TranscriptArchive(ws, "t").segments()
    assert segments, "compaction was blocked"
    archived = TranscriptArchive(ws, "t").read_all()
    by_id = {m.id: m for m in archived}
    assert by_id["odd-1"].content == "lone \ud800 surrogate"
    assert by_id["odd-2"].additional_kwargs["raw"] == b"\x00\xff bytes"
    assert by_id["odd-3"].content == "non-utf8 name: caf\udce9.txt"
    markdown = ws.read_text(segments[0].markdown_path)
    assert "lone \\ud800 surrogate" in markdown


def test_jsonl_round_trips_bytes_and_surrogates() -> None:
    messages = [
        HumanMessage("a \udc80 b", id="1"),
        AIMessage("x", additional_kwargs={"blob": b"\x00\x01"}, id="2"),
    ]
    back = decode_jsonl(encode_jsonl(messages))
    assert [m.content for m in back] == ["a \udc80 b", "x"]
    assert back[1].additional_kwargs["blob"] == b"\x00\x01"
