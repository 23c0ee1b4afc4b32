"""SIGKILL an agent mid-run (during an offload, a summarization, a tool), resume, finish.

The agent (``_crash_agent.py``) runs in a subprocess with a SQLite checkpointer and
``durability="sync"``. Each kill lands right after a workspace write and before its result
reaches the checkpoint, the worst moment: the resumed run re-does that step. After the
restart the run must end exactly like an uninterrupted one: same final messages, same
workspace files with the same bytes (nothing duplicated, nothing half-written, nothing lost).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.messages import messages_from_dict

from tests._zygote import Zygote

AGENT = Path(__file__).with_name("_crash_agent.py")


def _run(zygote: Zygote, root: Path, kill: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CTXFS_KILL"}
    if kill:
        env["CTXFS_KILL"] = kill
    return zygote.run(
        [sys.executable, str(AGENT), str(root / "ws"), str(root / "checkpoints.sqlite")],
        env=env,
        timeout=120,
    )


def _finished(zygote: Zygote, root: Path) -> list[tuple[str, str]]:
    done = _run(zygote, root)
    assert done.returncode == 0, done.stderr[-3000:]
    return [(m.type, m.text) for m in messages_from_dict(json.loads(done.stdout))]


def _files(root: Path) -> dict[str, bytes]:
    base = root / "ws"
    return {str(p.relative_to(base)): p.read_bytes() for p in base.rglob("*") if p.is_file()}


def _transcript(data: bytes) -> list[tuple[str, str]]:
    rows = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
    return [(m.type, m.text) for m in messages_from_dict(rows)]


@pytest.fixture(scope="module")
def reference(
    tmp_path_factory: pytest.TempPathFactory, zygote: Zygote
) -> tuple[list[tuple[str, str]], Path]:
    root = tmp_path_factory.mktemp("reference")
    return _finished(zygote, root), root


@pytest.mark.slow
@pytest.mark.parametrize(
    "kill",
    [
        "/tool_results:2",  # during the second result offload
        "/transcripts:1",  # during the first summary: transcript written, index not yet
        "/transcripts:3",  # index updated, summary not yet in the checkpoint
        "/notes:4",  # inside a write_file tool call
    ],
)
def test_killed_run_resumes_and_ends_like_an_uninterrupted_one(
    kill: str, tmp_path: Path, reference: tuple[list[tuple[str, str]], Path], zygote: Zygote
) -> None:
    expected, reference_root = reference
    killed = _run(zygote, tmp_path, kill)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert _finished(zygote, tmp_path) == expected
    files, reference_files = _files(tmp_path), _files(reference_root)
    assert sorted(files) == sorted(reference_files)  # nothing duplicated, nothing missing
    for path, data in files.items():
        if path.endswith(".jsonl"):  # message ids are random per run; the content is not
            assert _transcript(data) == _transcript(reference_files[path]), path
        elif "/transcripts/" not in f"/{path}":
            assert data == reference_files[path], path
    assert files["notes/log.md"].decode().count("read\n") == 10
