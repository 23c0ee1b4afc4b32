"""The offline demo (``ctxfs demo``): every ctxfs step shows, and it finishes quickly."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from ctxfs import ToolInputOffloaded, ToolResultCleared, ToolResultOffloaded
from ctxfs._cli._main import main
from ctxfs.demo import DemoOptions, run_demo
from ctxfs.demo._data import FIRST_REQUEST_ID, FIXED_LINE, ROUNDING_PATH
from ctxfs.demo._view import LiveView, Turn


def test_demo_shows_every_step_and_recovers_an_early_detail(tmp_path: Path) -> None:
    out = io.StringIO()
    report = run_demo(DemoOptions(workspace=str(tmp_path / "ws"), live=False), stream=out)
    printed = out.getvalue()
    assert report.seconds < 60
    kinds = {type(e).__name__ for e in report.events}
    assert {"ToolResultOffloaded", "ToolInputOffloaded", "ToolResultCleared", "Summarized"} <= kinds
    cleared = [e for e in report.events if isinstance(e, ToolResultCleared)]
    assert all(report.workspace.exists(e.path) for e in cleared)
    assert f"cleared ({cleared[0].tokens:,} -> {cleared[0].tokens_after:,} tokens" in printed
    results = [e for e in report.events if isinstance(e, ToolResultOffloaded)]
    inputs = [e for e in report.events if isinstance(e, ToolInputOffloaded)]
    assert all(report.workspace.exists(e.path) for e in [*results, *inputs])
    assert results[0].path in printed and inputs[0].path in printed
    # The agent did its job in the workspace.
    assert FIXED_LINE in report.workspace.read_text(ROUNDING_PATH)
    assert report.workspace.exists("/notes/investigation.md")
    # The user is told where to look.
    assert f"The workspace is at {tmp_path / 'ws'}" in printed
    assert f"ls -R {tmp_path / 'ws'}" in printed
    # Summarization: the archive exists; the early detail, long out of the context, came
    # back through grep and read_file from what ctxfs saved (the cleared grep result).
    assert report.workspace.ls("/transcripts"), "no transcript was archived"
    assert FIRST_REQUEST_ID in report.answer
    assert "read it back from /tool_results/" in report.answer
    assert max(t.tokens for t in report.turns) <= report.turns[0].budget


def test_cli_demo_runs_offline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--no-live", "--workspace", str(tmp_path / "ws"), "--create"]) == 0
    printed = capsys.readouterr().out
    assert "turn  1" in printed and "Finished in" in printed


def test_cli_needs_a_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2
    assert "demo" in capsys.readouterr().err


def test_live_view_draws_the_turns() -> None:
    buffer = io.StringIO()
    view = LiveView(Console(file=buffer, force_terminal=True, width=140))
    turn = Turn(number=1, tokens_before=9_000, tokens=4_000, budget=12_000, action="ls(path='/')")
    turn.notes.append("result of run_tests (8,168 tokens) offloaded -> /tool_results/x.txt")
    view.update([turn])
    view.message("summary text", title="summary")
    view.close()
    drawn = buffer.getvalue()
    assert "9,000 -> 4,000/12,000" in drawn and "/tool_results/x.txt" in drawn
    assert "summary text" in drawn


def test_the_live_view_leaves_every_turn_in_order_with_the_size_without_ctxfs() -> None:
    buffer = io.StringIO()
    view = LiveView(Console(file=buffer, force_terminal=True, width=200))
    turns = [
        Turn(number=n, tokens_before=1_000 + n, tokens=1_000 + n, budget=12_000, without=5_000 + n)
        for n in range(1, 31)
    ]
    view.update(turns)  # the table shows the last 14 turns only
    view.close()
    log = buffer.getvalue().split("Every turn, in order:", 1)[1]
    numbers = [int(line.split()[1]) for line in log.splitlines() if line.startswith("turn ")]
    assert numbers == list(range(1, 31))
    assert "(without ctxfs: 5,001)" in log


def test_the_size_without_ctxfs_adds_back_everything_ctxfs_removed(tmp_path: Path) -> None:
    options = DemoOptions(workspace=str(tmp_path / "ws"), live=False)
    report = run_demo(options, stream=io.StringIO())
    for turn in report.turns:
        assert turn.without >= turn.tokens_before
    # it only grows: what ctxfs removed is added back, never subtracted
    assert [t.without for t in report.turns] == sorted(t.without for t in report.turns)
    assert report.turns[-1].without > 2 * report.turns[-1].tokens
