"""``ctxfs threads`` and ``ctxfs gc``, the example, and what the backends say about time."""

from __future__ import annotations

import importlib.util
import json
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxfs import Workspace
from ctxfs._cli._lifecycle import format_bytes, parse_bytes
from ctxfs._cli._main import main
from ctxfs._layout import safe_name
from ctxfs.lifecycle import (
    GarbageCollector,
    Retention,
    collect_garbage,
    format_duration,
    list_files,
    list_threads,
    parse_duration,
)
from ctxfs.subagents._record import TaskRecord, write_record

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples"


def _age(folder: Path, days: float) -> None:
    then = time.time() - days * 86_400
    for top, _dirs, names in os.walk(folder):
        for name in names:
            os.utime(os.path.join(top, name), (then, then))


def _workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    ws = Workspace(root)
    ws.write_text("/tool_results/old/call_1.txt", "o" * 500)
    ws.write_text("/tool_results/new/call_1.txt", "n" * 300)
    write_record(
        ws,
        TaskRecord(
            thread_id="new/task-c1",
            parent_thread_id="new",
            tool_call_id="c1",
            subagent="researcher",
            prompt="look",
        ),
    )
    ws.write_text("/tool_results/new_task-c1-" + safe_name("new/task-c1")[-16:] + "/r.txt", "s")
    _age(root / "tool_results" / "old", 10)
    return root


def test_threads_lists_sub_agent_threads_under_their_parent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path)
    assert main(["threads", str(root)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == ["THREAD", "FILES", "SIZE", "LAST", "ACTIVITY"]
    new = next(i for i, line in enumerate(lines) if line.startswith("new "))
    assert "└ new/task-c1 (researcher, running)" in lines[new + 1]
    assert "(10d ago)" in next(line for line in lines if line.startswith("old "))
    assert main(["threads", str(root), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    by_name = {t["thread"]: t for t in data}
    assert set(by_name) == {"new", "old"}
    assert [c["thread"] for c in by_name["new"]["children"]] == ["new/task-c1"]
    assert by_name["old"]["bytes"] == 500
    assert by_name["new"]["total_bytes"] > by_name["new"]["bytes"] == 300


def test_gc_is_a_dry_run_unless_applied(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _workspace(tmp_path)
    before = sorted(p for p in root.rglob("*") if p.is_file())
    assert main(["gc", str(root), "--older-than", "7d"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Dry run")
    assert any(
        line.startswith("remove  old ") and "idle for 10d" in line for line in out.split("\n")
    )
    assert "keep    new (+1 sub-agent)" in out
    assert sorted(p for p in root.rglob("*") if p.is_file()) == before
    assert main(["gc", str(root), "--older-than", "7d", "--apply", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["applied"] and report["removed"] == ["old"] and report["freed_bytes"] == 500
    assert not (root / "tool_results" / "old").exists()  # the emptied folder goes too
    assert (root / "tool_results" / "new" / "call_1.txt").exists()


def test_gc_refuses_what_it_cannot_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _workspace(tmp_path)
    assert main(["gc", str(root)]) == 2
    assert "say what is past retention" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["gc", str(root), "--older-than", "7 days"])
    assert "not a duration" in capsys.readouterr().err
    assert main(["gc", str(tmp_path / "missing"), "--older-than", "1d"]) == 2


def test_the_byte_cap_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path)
    assert main(["gc", str(root), "--max-bytes", "1kB", "--apply"]) == 0
    assert not (root / "tool_results" / "old").exists()  # 10 days old: over the cap, oldest
    assert main(["gc", str(root), "--max-bytes", "1", "--apply"]) == 0
    assert (root / "tool_results" / "new").exists()  # active within the hour: kept
    assert main(["gc", str(root), "--max-bytes", "1", "--min-idle", "0", "--apply"]) == 0
    assert not (root / "tool_results" / "new").exists()


@given(st.integers(0, 10**13))
def test_byte_sizes_read_back(count: int) -> None:
    assert parse_bytes(str(count)) == count
    shown = format_bytes(count)
    number, unit = shown.split()
    scale = {"B": 1, "kB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}[unit]
    assert abs(float(number) * scale - count) <= 0.05 * scale + 0.5 * count / 1000
    assert parse_bytes("2GiB") == 2 * 1024**3 and parse_bytes("1.5MB") == 1_500_000


@given(st.integers(1, 10**7))
def test_durations_read_back(seconds: int) -> None:
    delta = timedelta(seconds=seconds)
    days, rest = divmod(seconds, 86_400)
    text = (f"{days}d" if days else "") + (f"{rest}s" if rest else "")
    assert parse_duration(text) == delta
    assert parse_duration(format_duration(delta).replace(" ", "")) <= delta


@settings(max_examples=30, deadline=None)
@given(count=st.integers(1, 10**30), unit=st.sampled_from("wdhms"))
def test_any_duration_is_a_retention_or_a_value_error(count: int, unit: str) -> None:
    """Regression: '99999999999d' raised OverflowError out of parse_duration (a traceback
    from ctxfs gc), and '1000000w' out of the plan (now minus the retention left the
    calendar: exit 70)."""
    try:
        delta = parse_duration(f"{count}{unit}")
    except ValueError as exc:
        assert "longer than a duration can be" in str(exc)
        return
    ws = Workspace(f"memory://long-retention-{count}{unit}")
    ws.write_text("/tool_results/t/call_1.txt", "x")
    for report in (
        collect_garbage(ws, older_than=delta),
        collect_garbage(ws, older_than=delta, max_bytes=0),  # fresh: min_idle keeps it
    ):
        assert report.plan.retention.older_than == delta
        assert report.plan.collect == ()


def test_the_longest_durations_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = str(_workspace(tmp_path))
    assert main(["gc", url, "--older-than", "1000000w"]) == 0
    assert main(["gc", url, "--min-idle", "1000000w", "--max-bytes", "0"]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        main(["gc", url, "--older-than", "99999999999d"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "'99999999999d' is longer than a duration can be (at most 999,999,999d)" in err


def test_every_backend_says_when_a_file_was_written(make_workspace: object) -> None:
    workspace = make_workspace()  # type: ignore[operator]
    start = datetime.now(UTC) - timedelta(minutes=5)
    workspace.write_text("/tool_results/t/call_1.txt", "x")
    (stamped,) = list_files(workspace, "/tool_results")
    assert stamped.modified is not None
    assert start < stamped.modified < datetime.now(UTC) + timedelta(minutes=5)
    (thread,) = list_threads(workspace)
    assert thread.name == "t" and thread.last_activity == stamped.modified
    # recent: a real clock keeps it; eight days later it goes
    assert collect_garbage(workspace, older_than="7d", apply=True).removed == ()
    later = datetime.now(UTC) + timedelta(days=8)
    report = collect_garbage(workspace, older_than="7d", apply=True, clock=lambda: later)
    assert report.removed == ("t",) and not workspace.exists("/tool_results/t/call_1.txt")


def test_a_store_without_times_keeps_everything() -> None:
    ws = Workspace("memory://no-times")
    ws.write_text("/tool_results/t/call_1.txt", "x")
    later = datetime.now(UTC) + timedelta(days=30)
    gc = GarbageCollector(
        ws,
        Retention(older_than=timedelta(days=1), max_bytes=0, min_idle=timedelta(0)),
        clock=lambda: later,
        files=lambda w, f: [type(s)(s.path, s.size, None) for s in list_files(w, f)],
    )
    plan = gc.plan()
    assert not plan.collect and "unknown" in plan.kept[0].reason


def test_an_agent_writing_meanwhile_keeps_its_thread() -> None:
    ws = Workspace("memory://meanwhile")
    ws.write_text("/tool_results/t/call_1.txt", "x")
    later = datetime.now(UTC) + timedelta(days=8)
    gc = GarbageCollector(ws, {"older_than": "7d"}, clock=lambda: later)
    plan = gc.plan()
    assert [c.thread.name for c in plan.collect] == ["t"]
    ws.write_text("/tool_results/t/call_2.txt", "y")  # after the plan, before applying
    report = gc.apply(plan)
    assert report.removed == () and report.skipped
    assert ws.exists("/tool_results/t/call_1.txt") and ws.exists("/tool_results/t/call_2.txt")


def test_the_example_runs_offline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("example_lifecycle", EXAMPLES / "lifecycle_gc.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    report = module.main(["--workspace", str(tmp_path / "ws")])
    assert sorted(report.removed) == ["monday-report", "tuesday-report"]
    assert report.freed_bytes > 100_000
    out = capsys.readouterr().out
    assert "still resolves: 2,000 lines" in out and "keep   today-report" in out
    assert [t.name for t in list_threads(Workspace(tmp_path / "ws"))] == ["today-report"]


def _two_threads() -> tuple[Workspace, datetime]:
    ws = Workspace(f"memory://rules-{time.monotonic_ns()}")
    ws.write_text("/tool_results/old/call_1.txt", "o")
    ws.write_text("/tool_results/new/call_1.txt", "n")
    return ws, datetime.now(UTC) + timedelta(days=8)


def test_keep_and_the_messages_in_an_agents_state_keep_a_thread() -> None:
    from langchain_core.messages import ToolMessage

    from ctxfs._pointers._pointer import Pointer, point_result, render_result
    from ctxfs.lifecycle import DEFAULT_RULES, Reference, RuleContext, messages_rule

    ws, later = _two_threads()
    recent = {"older_than": "7d", "keep": frozenset({"new"})}
    assert [
        c.thread.name for c in GarbageCollector(ws, recent, clock=lambda: later).plan().collect
    ] == ["old"]

    # "new" stays (keep); its live messages hold a pointer to a result of "old"
    pointer = Pointer(
        kind="result", path="/tool_results/old/call_1.txt", lines=1, chars=1, tokens=1
    )
    text = render_result(pointer, "o", preview_lines=1, preview_line_chars=10)
    live = [point_result(ToolMessage("o", tool_call_id="c"), pointer, text)]
    rules = (*DEFAULT_RULES, messages_rule(lambda t: live if t == "new" else None))
    plan = GarbageCollector(ws, recent, rules=rules, clock=lambda: later).plan()
    assert not plan.collect
    (old,) = [k for k in plan.kept if k.thread.name == "old"]
    assert old.referenced and "kept messages of 'new'" in old.reason

    # a rule of your own: a registry that pins a thread
    def registry(context: RuleContext) -> list[Reference]:
        return [Reference(thread_id="old", why="pinned")] if context.thread is None else []

    plan = GarbageCollector(ws, {"older_than": "7d"}, rules=(registry,), clock=lambda: later).plan()
    assert [c.thread.name for c in plan.collect] == ["new"]
    assert "the workspace points to it (pinned)" in next(k.reason for k in plan.kept)
