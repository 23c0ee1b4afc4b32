"""Compaction killed with SIGKILL between any two workspace writes, then re-run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests._zygote import Zygote

WORKER = Path(__file__).with_name("_crash_worker.py")


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="needs fork and SIGKILL")
def test_a_kill_after_any_write_ends_consistent_after_a_rerun(
    tmp_path: Path, zygote: Zygote
) -> None:
    done = zygote.run([sys.executable, str(WORKER), str(tmp_path)], timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["failures"] == []
    assert report["writes"] >= 10  # offloads, segments, index: every kind of write is hit
    assert report["kills"] == report["writes"]
