"""SIGKILL a parent mid-sub-task (a sub-agent's offload, its write_file, its transcript, its
finished record), resume from the checkpoint, finish: like an uninterrupted run, nothing
half-merged (artifacts once each, every answer once, the same files with the same bytes).

An interrupted sub-task runs again from the start, and its tools see what the first attempt
did (``write_file`` reports "Overwrote"); when the first attempt had written its transcript
files but not committed them, the re-run's transcript takes the next segment number and the
leftovers stay uncommitted, as for any interrupted archive write. A sub-task recorded as
finished is not run again: its recorded answer is merged.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import messages_from_dict

from ctxfs import TranscriptArchive, Workspace
from ctxfs.subagents import task_records
from tests._zygote import Zygote

AGENT = Path(__file__).with_name("_crash_subagents.py")


def _run(zygote: Zygote, root: Path, kill: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CTXFS_KILL"}
    if kill:
        env["CTXFS_KILL"] = kill
    return zygote.run(
        [sys.executable, str(AGENT), str(root / "ws"), str(root / "checkpoints.sqlite")],
        env=env,
        timeout=240,
    )


def _finished(zygote: Zygote, root: Path) -> dict[str, Any]:
    done = _run(zygote, root)
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    # which segment number a re-run's transcript took is checked below, from the workspace
    messages = [
        (m.type, re.sub(r"segment-\d{4}", "segment-N", m.text))
        for m in messages_from_dict(data["messages"])
    ]
    return {"messages": messages, "artifacts": data["artifacts"]}


def _files(root: Path) -> dict[str, bytes]:
    # A kill while another thread was writing (the parallel sub-agent) can leave the local
    # store's temporary file of that write behind: it is not the file, which is whole.
    base = root / "ws"
    return {
        str(p.relative_to(base)): p.read_bytes()
        for p in base.rglob("*")
        if p.is_file() and not (p.name.startswith(".ctxfs-") and p.name.endswith(".tmp"))
    }


@pytest.fixture(scope="module")
def reference(
    tmp_path_factory: pytest.TempPathFactory, zygote: Zygote
) -> tuple[dict[str, Any], Path]:
    root = tmp_path_factory.mktemp("reference")
    return _finished(zygote, root), root


@pytest.mark.slow
@pytest.mark.parametrize(
    "kill",
    [
        "/tool_results/:1",  # the first sub-agent's first offload
        "segment-0001.md:1",  # the first sub-task's transcript written, not yet committed
        "task.json:2",  # the first sub-task recorded as finished, its answer not merged
        "/notes/:2",  # inside one of the two parallel sub-agents
    ],
)
def test_killed_mid_sub_task_resumes_and_ends_like_an_uninterrupted_run(
    kill: str, tmp_path: Path, reference: tuple[dict[str, Any], Path], zygote: Zygote
) -> None:
    expected, reference_root = reference
    assert expected["artifacts"] == ["/notes/billing.md", "/notes/refunds.md", "/notes/payouts.md"]
    assert [t for t, _ in expected["messages"]] == [
        "human",
        "ai",
        "tool",
        "ai",
        "tool",
        "tool",
        "ai",
    ]
    killed = _run(zygote, tmp_path, kill)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert _finished(zygote, tmp_path) == expected  # each answer once, each artifact once
    files, reference_files = _files(tmp_path), _files(reference_root)
    outside = {p for p in reference_files if not p.startswith("transcripts/")}
    assert {p for p in files if not p.startswith("transcripts/")} == outside
    for path in outside:  # notes and offloads: nothing duplicated, same bytes
        assert files[path] == reference_files[path], path
    workspace, first = Workspace(tmp_path / "ws"), Workspace(reference_root / "ws")
    records, reference_records = task_records(workspace), task_records(first)
    assert [r.thread_id for r in records] == ["crash/task-t1", "crash/task-t2", "crash/task-t3"]
    for record, original in zip(records, reference_records, strict=True):
        assert record.result is not None and original.result is not None
        assert (record.status, record.result.answer, record.result.artifacts) == (
            "completed",
            original.result.answer,
            original.result.artifacts,
        )
        (segment,) = TranscriptArchive(workspace, record.thread_id).segments()
        assert record.result.transcript == segment.markdown_path
        kept = TranscriptArchive(workspace, record.thread_id).read_segment(segment)
        again = TranscriptArchive(first, original.thread_id).read_all()
        assert [m.type for m in kept] == [m.type for m in again]
