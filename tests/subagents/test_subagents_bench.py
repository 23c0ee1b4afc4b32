"""The issue's benchmark runs, and delegation lowers the parent's peak and total input."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_subagents.py"


def _load(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_subagents", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_delegation_keeps_the_parent_small(monkeypatch: pytest.MonkeyPatch) -> None:
    result = _load(monkeypatch).measure(topics=2, pages=4, lines=40)
    inline, delegated = result["inline"], result["delegated"]
    assert inline["parent_calls"] == 2 * 4 + 1 and delegated["parent_calls"] == 2
    assert delegated["sub_calls"] == 2 * (4 + 1)  # each sub-agent: its pages, then its report
    assert result["peak_ratio"] < 0.5 and result["total_ratio"] < 0.5
    # the reading moved into the sub-agents' windows; it did not vanish
    assert delegated["sub_total"] > delegated["parent_total"]
