"""A turn re-run after SIGKILL with ``durability="exit"`` (issue 23): the checkpoint only has
the previous turn, so the turn runs again with new message ids while the archive holds what
the killed run committed. The thread goes on compacting within its window, and its branch is
complete: every message of the run in a committed segment or in the state. The pages name
the process that read them, so the re-run's history differs from the killed run's: a fork."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from ctxfs import TranscriptArchive, Workspace
from tests._zygote import Zygote
from tests.sdk._branch_check import _made_by_ctxfs, chain_messages, last_segment

AGENT = Path(__file__).with_name("_exit_agent.py")
TURNS = 6
KILLED_TURN = 3


def _turn(
    zygote: Zygote, root: Path, turn: int, kill: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CTXFS_KILL"}
    if kill:
        env["CTXFS_KILL"] = kill
    return zygote.run(
        [sys.executable, str(AGENT), str(root / "ws"), str(root / "db.sqlite"), str(turn)],
        env=env,
        timeout=180,
    )


def _shape(message: BaseMessage) -> tuple[str, str]:
    if isinstance(message, AIMessage) and message.tool_calls:
        return "call", json.dumps(message.tool_calls[0]["args"])
    if isinstance(message, ToolMessage):
        return "page", str(message.content).split(":")[0]  # "page N line 0"
    return message.type, str(message.content)[:7]


def _expected() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for turn in range(TURNS):
        out.append(("human", f"turn {turn}:"[:7]))
        for read in range(3):
            page = 3 * turn + read
            out += [("call", json.dumps({"n": page})), ("page", f"page {page} line 0")]
        out.append(("ai", f"turn {turn}:"[:7]))
    return out


@pytest.fixture(scope="module")
def before_the_kill(
    tmp_path_factory: pytest.TempPathFactory, zygote: Zygote
) -> tuple[Path, list[dict[str, Any]]]:
    """The turns before the killed one, run once: they are the same for every kill point."""
    root = tmp_path_factory.mktemp("before-the-kill")
    reports = []
    for turn in range(KILLED_TURN):
        done = _turn(zygote, root, turn)
        assert done.returncode == 0, done.stderr[-3000:]
        reports.append(json.loads(done.stdout.splitlines()[-1]))
    return root, reports


# The killed turn's compactions write 4 files each (JSONL, Markdown, record, index head):
# the first archives the previous turn's pages, the third the killed turn's own first page.
@pytest.mark.slow
@pytest.mark.parametrize(
    ("kill", "branches"),
    [
        ("/transcripts:3", 1),  # a record of shared messages: the re-run reuses it
        ("/transcripts:11", 2),  # the record of its own pages, not indexed: a fork
        ("/transcripts:12", 2),  # indexed too, the summary not in the checkpoint: a fork
    ],
)
def test_a_turn_rerun_after_sigkill_compacts_and_its_branch_is_complete(
    kill: str,
    branches: int,
    tmp_path: Path,
    before_the_kill: tuple[Path, list[dict[str, Any]]],
    zygote: Zygote,
) -> None:
    shared, earlier = before_the_kill
    shutil.copytree(shared, tmp_path, dirs_exist_ok=True)
    reports = list(earlier)
    for turn in range(KILLED_TURN, TURNS):
        if turn == KILLED_TURN:
            killed = _turn(zygote, tmp_path, turn, kill)
            assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
        done = _turn(zygote, tmp_path, turn)
        assert done.returncode == 0, done.stderr[-3000:]
        reports.append(json.loads(done.stdout.splitlines()[-1]))
    assert all(not r["failures"] for r in reports), reports
    assert max(r["largest"] for r in reports) <= 6_000

    connection = sqlite3.connect(tmp_path / "db.sqlite")
    try:
        saved = SqliteSaver(connection).get_tuple({"configurable": {"thread_id": "exit"}})
    finally:
        connection.close()
    assert saved is not None
    context: list[BaseMessage] = saved.checkpoint["channel_values"]["messages"]
    ws = Workspace(str(tmp_path / "ws"))
    last = last_segment(context, "exit")
    assert last is not None, "the run never summarized"
    archived = chain_messages(ws, "exit", last)  # through the record files, parent by parent
    kept = [m for m in context if not _made_by_ctxfs(m)]
    assert [_shape(m) for m in [*archived, *kept]] == _expected()
    assert isinstance(kept[0], HumanMessage | AIMessage | ToolMessage)
    # what the killed run committed is reused, or kept (indexed) on a branch of its own
    found = TranscriptArchive(ws, "exit").branches()
    assert len(found) == branches, [b.numbers for b in found]
    assert any(b.leaf.number == last for b in found)
