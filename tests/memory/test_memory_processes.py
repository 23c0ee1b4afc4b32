"""Two processes updating one memory lose nothing; a SIGKILL at any write leaves it valid."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ctxfs import Workspace
from ctxfs.memory import LongTermMemory, fact_id
from tests._zygote import Child, Zygote

WORKER = Path(__file__).with_name("_memory_worker.py")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")


def _worker(zygote: Zygote, *args: object) -> Child:
    return zygote.popen([sys.executable, str(WORKER), *map(str, args)])


@pytest.mark.slow
def test_two_processes_updating_one_memory_lose_no_fact(tmp_path: Path, zygote: Zygote) -> None:
    count = 15
    children = [_worker(zygote, "add", tmp_path, writer, count) for writer in ("a", "b")]
    for child in children:
        _, err = child.communicate(timeout=240)
        assert child.returncode == 0, err
    facts = LongTermMemory(Workspace(tmp_path), ("alice",)).load().facts
    expected = {fact_id(f"Writer {w} fact {i}.") for w in ("a", "b") for i in range(count)}
    assert {f.id for f in facts} == expected


@pytest.mark.slow
def test_a_sigkill_at_any_write_leaves_a_valid_memory(tmp_path: Path, zygote: Zygote) -> None:
    count = 3
    child = _worker(zygote, "kill", tmp_path, "-", count)
    out, err = child.communicate(timeout=240)
    assert child.returncode == 0, err
    report = json.loads(out.strip().splitlines()[-1])
    # per update: the document, its version copy and its rendering, each just before and
    # just after its rename
    assert report["points"] == 6 * count
    assert report["failures"] == []
