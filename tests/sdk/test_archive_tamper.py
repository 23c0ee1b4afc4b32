"""Archive files changed after they were written: named, never passed off as the archive.

A committed segment's record holds the size and SHA-256 of its two files. A ``.jsonl`` or
``.md`` file edited since (a user, a script, a disk) may still parse; the history tools and
``ctxfs transcripts --show`` check it against its record and say it changed, instead of
showing the edit as what was archived. A missing or damaged index never hides a thread's
segments from ``ctxfs transcripts``: they are read from their records (the command writes
nothing, so the damaged index stays as it is, for whoever looks into it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxfs import ContextEngine, ContextPolicy, TiktokenCounter, TranscriptArchive, Workspace
from ctxfs._cli._main import main
from ctxfs.tools._budget import OutputBudget
from ctxfs.tools._history import history_functions

POLICY = ContextPolicy(
    max_input_tokens=2_000,
    clearing={"enabled": False},
    summarization={"trigger": {"messages": 8}, "keep": {"messages": 2}},
)


def turn(n: int) -> list[BaseMessage]:
    call: list[Any] = [{"name": "bash", "args": {"command": f"step {n}"}, "id": f"c{n}"}]
    return [
        HumanMessage(f"request {n}", id=f"h{n}"),
        AIMessage(f"working on {n}", tool_calls=call, id=f"a{n}"),
        ToolMessage(f"output {n} marker{n}q", tool_call_id=f"c{n}", name="bash", id=f"t{n}"),
    ]


def archived(root: Path | str, turns: int = 12) -> tuple[Workspace, TranscriptArchive]:
    ws = Workspace(root)
    engine = ContextEngine(ws, POLICY)
    context: list[BaseMessage] = [SystemMessage("agent", id="sys")]
    for n in range(turns):
        context = engine.compact([*context, *turn(n)], thread_id="t").messages
    archive = TranscriptArchive(ws, "t")
    assert len(archive.segments()) >= 3
    return ws, archive


def tools(ws: Workspace) -> dict[str, Any]:
    budget = OutputBudget(2_000, TiktokenCounter())
    return {f.name: f for f in history_functions(ws, budget, thread_id="t")}


def test_history_tools_name_a_segment_file_changed_after_it_was_archived() -> None:
    ws, archive = archived("memory://tamper-jsonl")
    second = archive.segments()[1]
    data = ws.read_bytes(second.jsonl_path)
    assert b"marker" in data
    # still JSON lines, still messages: only a record can tell the edit from the archive
    ws.write_bytes(second.jsonl_path, data.replace(b"marker", b"forged"))
    history = tools(ws)
    message = next(
        i for i, m in enumerate(archive.read_segment(archive.segments()[0])) if m.type == "tool"
    )
    assert "marker0q" in history["history_read"](
        segment=archive.segments()[0].jsonl_path, message=message
    )
    answer = history["history_read"](segment=second.jsonl_path, message=1)
    assert answer.startswith(f"Error: {second.jsonl_path} was changed after it was archived")
    assert "forged" not in answer
    found = history["history_search"](query="forged")
    assert "forged" not in found.replace(f"{second.jsonl_path} was changed", "")
    assert f"({second.jsonl_path} was changed after it was archived" in found
    # the other segments are searched as before, and the edited file is left as it is
    assert "marker0q" in history["history_search"](query="marker0q")
    assert b"forged" in ws.read_bytes(second.jsonl_path)


def test_a_segment_without_a_record_yet_is_read_as_it_is() -> None:
    # written, not committed (a run that stopped before its record): nothing vouches for it,
    # and it is still searchable, as the tools promise
    ws, archive = archived("memory://tamper-uncommitted")
    last = archive.segments()[-1]
    ws.rm(archive.record_path(last.number))
    assert "Error" not in tools(ws)["history_read"](segment=last.jsonl_path, message=0)


def test_transcripts_show_refuses_a_changed_markdown_twin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws, archive = archived(tmp_path / "ws")
    second = archive.segments()[1]
    text = ws.read_bytes(second.markdown_path)
    ws.write_bytes(second.markdown_path, text.replace(b"marker", b"forged"))
    root = str(tmp_path / "ws")
    assert main(["transcripts", root, "--thread", "t", "--show", "1"]) == 0
    assert "marker0q" in capsys.readouterr().out
    assert main(["transcripts", root, "--thread", "t", "--show", "2"]) == 2
    captured = capsys.readouterr()
    assert "forged" not in captured.out
    assert f"{second.markdown_path} was changed after it was archived" in captured.err
    assert "Traceback" not in captured.err


_DAMAGES: dict[str, Callable[[Workspace, str], None]] = {
    "missing": lambda ws, path: ws.rm(path),
    "torn": lambda ws, path: ws.write_bytes(path, ws.read_bytes(path)[:30]),
    "wrong types": lambda ws, path: ws.write_text(path, json.dumps({"segments": "x"})),
    "a list": lambda ws, path: ws.write_text(path, "[]"),
    "a folder": lambda ws, path: (ws.rm(path), ws.write_text(f"{path}/x", "")),
}


def _left(ws: Workspace, path: str) -> bytes | str | None:
    """What is at ``path``: its bytes, "folder", or ``None``."""
    if not ws.exists(path):
        return None
    return "folder" if ws.info(path).is_dir else ws.read_bytes(path)


@pytest.mark.parametrize("damage", sorted(_DAMAGES))
def test_transcripts_lists_a_thread_whose_index_is_missing_or_damaged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    # "missing" is also what a run leaves that stopped between committing its first segment
    # and writing the index: the thread has segments, and the listing must show them
    ws, archive = archived(tmp_path / "ws")
    segments = archive.segments()
    _DAMAGES[damage](ws, archive.index_path)
    left = _left(ws, archive.index_path)
    root = str(tmp_path / "ws")
    assert main(["transcripts", root]) == 0
    captured = capsys.readouterr()
    assert f"Thread 't': {len(segments)} segment(s)" in captured.out
    assert "read from" in captured.out and "the index is left as it is" in captured.out
    for segment in segments:
        assert segment.markdown_path in captured.out
    assert main(["transcripts", root, "--thread", "t", "--show", "2"]) == 0
    assert "marker" in capsys.readouterr().out
    assert main(["transcripts", root, "--search", "marker3q"]) == 0
    assert "output 3 marker3q" in capsys.readouterr().out
    # the command only looks: the damaged index is still there as it was
    assert _left(ws, archive.index_path) == left


@pytest.mark.parametrize("kind", ["error", "lost_response"])
def test_a_rebuilt_index_that_cannot_be_written_still_gives_the_segments(kind: str) -> None:
    """A rebuild reads the records (the commit); writing the index it rebuilt is a cache
    write. When that write failed (or its reply was lost), the read failed, and a commit
    that needed it reported ArchiveFailed (seen with eight processes on four threads)."""
    from ctxfs.testing import Fault, FaultyStore

    ws, archive = archived("memory://tamper-rebuild-store")
    segments = archive.segments()
    ws.write_bytes(archive.index_path, ws.read_bytes(archive.index_path)[:20])  # torn
    store = FaultyStore(ws.store)
    faulty = Workspace(store, check=False)
    store.add(Fault(method="write", kind=kind, path=archive.index_path))  # type: ignore[arg-type]
    reread = TranscriptArchive(faulty, "t")
    assert [s.number for s in reread.segments()] == [s.number for s in segments]
    assert any("the index could not be written" in note for note in reread.repairs)
