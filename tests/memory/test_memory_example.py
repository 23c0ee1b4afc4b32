"""The memory audit example runs offline and shows what it says."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "memory_audit.py"


def test_the_audit_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("example_memory_audit", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    recalled = module.main(["--workspace", str(tmp_path / "ws")])
    assert "The on-call phone is in drawer 3." in recalled
    printed = capsys.readouterr().out
    assert "2: learn from web-page" in printed
    release, other = printed.split("Task docs-7 sees:")
    assert "billing schema" in release and "billing schema" not in other
    assert "master" not in printed.split("History:")[1].split("Task release-42")[1]
    assert "Consolidation (version 5): merged 2 facts into 1" in printed
    assert len(list((tmp_path / "ws" / "memories" / "alice" / ".versions").iterdir())) == 5
