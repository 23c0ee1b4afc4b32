"""A thread's archive with any of its files deleted or garbled: the readers never hide a
committed segment whose own files are intact, and never answer "no match" for messages they
did not read.

- A segment a committed record names as its parent was committed too: rebuilding the index
  from the records keeps it (from its verified files when its own record is gone), so its
  branch keeps its start (``transcripts --show 1`` found no segment 1, and ``history_read``
  called it another branch).
- ``history_search`` (tool and CLI) names each committed segment whose lossless file is
  missing; it answered "No match" as if it had read it.
"""

from __future__ import annotations

import itertools
import json
from functools import cache
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from ctxfs import ContextEngine, ContextPolicy, TranscriptArchive, Workspace
from ctxfs._cli._main import main
from ctxfs._errors import WorkspaceError
from ctxfs.testing import ScriptedChatModel
from ctxfs.tools._history import search_history

POLICY = ContextPolicy(
    max_input_tokens=4_000,
    clearing={"enabled": False},
    summarization={"trigger": {"tokens": 2_000}, "keep": {"messages": 2}},
)
_fresh = itertools.count()
_FILES = (
    "index.json",
    *(f"segment-000{n}.{ext}" for n in (1, 2) for ext in ("json", "jsonl", "md")),
)
_NEEDLE = "alpha0x1"
_RECORDS = ("segment-0001.json", "segment-0002.json")


def _turns(tag: str, count: int) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for n in range(count):
        words = " ".join(f"{tag}{n}x{i}" for i in range(80))
        out += [HumanMessage(f"{tag} {n}: {words}", id=f"{tag}-h{n}")]
        out += [AIMessage(f"noted {tag} {n}", id=f"{tag}-a{n}")]
    return out


@cache
def _line() -> tuple[str, dict[str, bytes]]:
    """Two segments on one line (2 continues 1): the folder and its files."""
    ws = Workspace(f"memory://damage-reads{next(_fresh)}")
    engine = ContextEngine(ws, POLICY)
    first = engine.compact(
        _turns("alpha", 8), thread_id="t", model=ScriptedChatModel(responses=["S1."])
    )
    engine.compact(
        [*first.messages, *_turns("beta", 8)],
        thread_id="t",
        model=ScriptedChatModel(responses=["S2."]),
    )
    folder = TranscriptArchive(ws, "t").directory
    assert [(s.number, s.parent) for s in TranscriptArchive(ws, "t").segments()] == [(1, 0), (2, 1)]
    return folder, {name: ws.read_bytes(f"{folder}/{name}") for name in _FILES}


def _damaged(actions: dict[str, str]) -> tuple[Workspace, str]:
    folder, files = _line()
    ws = Workspace(f"memory://damage-reads{next(_fresh)}")
    for name, data in files.items():
        action = actions.get(name, "keep")
        if action != "delete":
            ws.write_bytes(f"{folder}/{name}", data if action == "keep" else data[: len(data) // 2])
    return ws, folder


_actions = st.dictionaries(st.sampled_from(_FILES), st.sampled_from(["delete", "garble"]))


@settings(max_examples=200, deadline=None)
@given(actions=_actions)
@example(actions={"segment-0001.json": "delete", "index.json": "garble"})
def test_a_parent_with_intact_files_is_never_hidden(actions: dict[str, str]) -> None:
    ws, _ = _damaged(actions)
    intact = {name for name in _FILES if name not in actions}
    try:
        numbers = {s.number for s in TranscriptArchive(ws, "t").segments()}
    except WorkspaceError:
        return  # an expected segment that cannot be read is an error, said as one
    if {"segment-0002.json", "segment-0001.jsonl", "segment-0001.md"} <= intact:
        assert 1 in numbers, (actions, numbers)


@settings(max_examples=200, deadline=None)
@given(actions=_actions, leaf=st.sampled_from([None, 2]))
def test_search_finds_segment_one_or_says_why_not(
    actions: dict[str, str], leaf: int | None
) -> None:
    ws, folder = _damaged(actions)
    notes: list[str] = []
    hits = search_history(ws, _NEEDLE, thread_id="t", notes=notes, leaf=leaf)
    jsonl = f"{folder}/segment-0001.jsonl"
    traced = any(actions.get(name) != "delete" for name in ("segment-0001.json", "segment-0001.md"))
    traced |= any(name not in actions for name in ("index.json", "segment-0002.json"))
    # on branch 2, segment 1 is known to be on it when a record or the index says so
    linked = any(name not in actions for name in ("index.json", *_RECORDS))
    if traced and (leaf is None or linked) and not any(hit.path == jsonl for hit in hits):
        assert any(jsonl in note for note in notes), (actions, notes)


def test_the_missing_segment_is_named_by_the_tool_and_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws, folder = _damaged({"segment-0001.jsonl": "delete"})
    notes: list[str] = []
    assert search_history(ws, _NEEDLE, thread_id="t", notes=notes) == []
    said = (
        f"{folder}/segment-0001.jsonl is missing (or not a file), so the archived messages it held "
        "were not searched"
    )
    assert notes == [said]
    root = tmp_path / "ws"
    on_disk = Workspace(root)
    for name, data in _line()[1].items():
        if name != "segment-0001.jsonl":
            on_disk.write_bytes(f"{folder}/{name}", data)
    assert main(["transcripts", str(root), "--search", _NEEDLE]) == 0
    assert f"({said})" in capsys.readouterr().out


def test_rebuilding_without_a_parent_record_keeps_the_parent() -> None:
    ws, _ = _damaged({"segment-0001.json": "delete", "index.json": "garble"})
    archive = TranscriptArchive(ws, "t")
    assert [(s.number, s.parent) for s in archive.segments()] == [(1, 0), (2, 1)]
    assert [s.number for s in archive.branch_of(2)] == [1, 2]
    assert archive.read_all(branch=2)[0].id == "alpha-h0"


def test_a_segment_committed_after_the_index_was_written_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Segment 2's record is there but the index's last write (which would list it) failed:
    every reader finds it (the listing, --show 2, the branches, restore_history), not only
    a compaction whose summary names it."""
    folder, files = _line()
    root = tmp_path / "ws"
    ws = Workspace(root)
    for name, data in files.items():
        ws.write_bytes(f"{folder}/{name}", data)
    index = json.loads(files["index.json"])
    index["segments"] = index["segments"][:1]
    ws.write_bytes(f"{folder}/index.json", json.dumps(index).encode())
    archive = TranscriptArchive(ws, "t")
    assert [s.number for s in archive.segments()] == [1, 2]
    assert archive.repairs == ("the index lacked segment(s) 2; rebuilt from 2 segment record(s)",)
    assert [b.numbers for b in TranscriptArchive(ws, "t").branches()] == [(1, 2)]
    assert main(["transcripts", str(root), "--show", "2"]) == 0
    assert "messages 14-29" in capsys.readouterr().out


def test_an_index_entry_whose_files_are_gone_is_not_listed_as_a_branch() -> None:
    """The index names segment 7 (a fork after segment 1), whose record and files are not
    there: the readers list segments 1 and 2 and one branch, and say what they dropped."""
    folder, files = _line()
    ws = Workspace(f"memory://damage-reads{next(_fresh)}")
    for name, data in files.items():
        ws.write_bytes(f"{folder}/{name}", data)
    index = json.loads(files["index.json"])
    phantom = {
        **index["segments"][-1],
        "number": 7,
        "parent": 1,
        "jsonl_path": f"{folder}/segment-0007.jsonl",
        "markdown_path": f"{folder}/segment-0007.md",
    }
    index["segments"].append(phantom)
    ws.write_bytes(f"{folder}/index.json", json.dumps(index).encode())
    archive = TranscriptArchive(ws, "t")
    assert [b.numbers for b in archive.branches()] == [(1, 2)]
    assert archive.repairs == (
        "the index listed segment(s) 7, whose files are gone; rebuilt from 2 segment record(s)",
    )
    assert [s.number for s in TranscriptArchive(ws, "t").segments()] == [1, 2]


@pytest.mark.parametrize("index", ["torn", "intact"])
def test_a_summarized_segment_deleted_whole_does_not_stop_the_thread(index: str) -> None:
    """Segment 2, which the summary in context names, has no record and no file left (and
    the index is torn, or not): each next turn summarizes, says so, and loses nothing more;
    a segment of which something is left still stops the compaction (see the fault tests)."""
    ws = Workspace(f"memory://damage-reads{next(_fresh)}")
    engine = ContextEngine(ws, POLICY)
    first = engine.compact(
        _turns("alpha", 8), thread_id="t", model=ScriptedChatModel(responses=["S1."])
    )
    context = list(
        engine.compact(
            [*first.messages, *_turns("beta", 8)],
            thread_id="t",
            model=ScriptedChatModel(responses=["S2."]),
        ).messages
    )
    archive = TranscriptArchive(ws, "t")
    for path in (*archive.segment_paths(2), archive.record_path(2)):
        ws.rm(path)
    if index == "torn":
        ws.write_bytes(archive.index_path, b"{")
    added: list[BaseMessage] = []
    for k in range(3):
        more = _turns(f"gamma{k}", 8)
        added += more
        result = ContextEngine(ws, POLICY).compact(
            [*context, *more], thread_id="t", model=ScriptedChatModel(responses=[f"S{k}."])
        )
        assert result.summarized, [str(e) for e in result.events]
        context = list(result.messages)
    archive = TranscriptArchive(ws, "t")
    assert not ws.exists(archive.segment_paths(2)[1])  # its name is never given again
    later = [s for s in archive.segments() if s.number > 2]
    held = {m.content for s in later for m in archive.read_segment(s)}
    held |= {m.content for m in context}
    assert all(m.content in held for m in added)
    assert archive.read_segment(archive.segments()[0])[0].content == (_turns("alpha", 1)[0].content)
