"""``ctxfs replay`` end to end through ``main([...])``: exact outputs, JSON, plot, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from ctxfs import ContextEngine, ContextPolicy, Workspace, parse_trace, replay
from ctxfs._cli._main import main
from ctxfs._cli._replay import replay_figure

LOG = "\n".join(f"12:{n:02d} job {n} ok" for n in range(60)) + "\n12:60 job 60 FAILED: disk full"
TRACE = [
    {"role": "system", "content": "You are a careful agent."},
    {"role": "user", "content": "Is anything failing in the log?"},
    {
        "role": "assistant",
        "content": "Reading the log.",
        "tool_calls": [{"id": "c1", "name": "read_log", "args": {}}],
    },
    {"role": "tool", "tool_call_id": "c1", "name": "read_log", "content": LOG},
    {"role": "assistant", "content": "Job 60 failed: the disk is full."},
]
RESULT_PATH = "/tool_results/t/c1.txt"


def write_trace(folder: Path, records: list[Any], name: str = "t.jsonl") -> Path:
    path = folder / name
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _temporary_workspaces_in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay without ``--workspace`` keeps its workspace in a new temporary folder (for
    the user to look at): here, under the test's own folder, not left in the system's."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))


@pytest.fixture
def trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "policy.json").write_text('{"tool_results": {"threshold": {"tokens": 200}}}')
    return write_trace(tmp_path, TRACE)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_replay_prints_calls_events_and_totals(
    trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(
        capsys, "replay", "t.jsonl", "--max-input-tokens", "4000", "--policy", "policy.json",
        "--workspace", "ws", "--create",
    )  # fmt: skip
    assert (status, err) == (0, "")
    assert out == (
        "Replayed t.jsonl: 5 messages, 2 model calls, window 4,000 tokens\n"
        f"Workspace: {trace.parent / 'ws'} (thread 't')\n"
        "\n"
        "call  msg  tokens  cached  without ctxfs  events\n"
        "   1    2      21       0             21\n"
        f"   2    4     170      21            526  result of read_log (490 tokens) offloaded -> "
        f"{RESULT_PATH}\n"
        "\n"
        "peak tokens: 170 (without ctxfs: 526)\n"
        "total input tokens: 191 (without ctxfs: 547, 65.1% fewer)\n"
        "calls over the window: 0\n"
        "prompt cache: 21 tokens a prefix cache would reuse, 170 read anew (11.0% reused), "
        "0 prefix breaks (* in the cached column)\n"
        "in view: the task statement in 100.0% of calls, each user message in 100.0% of "
        "(call, message) pairs, the plan in 100.0% of calls once there is one\n"
        "events: tool result offloaded: 1\n"
        "removed from the context: 980 bytes of 1 message, recoverable byte-exact: 100.0%\n"
    )
    # What the table names is really there, byte-exact.
    status, out, _ = run(capsys, "cat", "ws", RESULT_PATH)
    assert (status, out) == (0, LOG)


def test_replay_json_is_machine_readable(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(
        capsys, "replay", "t.jsonl", "--policy", "policy.json", "--max-input-tokens", "4_000",
        "--workspace", "memory://replay", "--json",
    )  # fmt: skip
    assert status == 0
    document = json.loads(out)
    event = {
        "kind": "tool_result_offloaded",
        "path": RESULT_PATH,
        "tool_call_id": "c1",
        "tool_name": "read_log",
        "lines": 61,
        "chars": 980,
        "tokens": 490,
        "tokens_after": 134,
    }
    assert document["model_calls"] == [
        {
            "index": 1,
            "message_index": 2,
            "tokens": 21,
            "baseline_tokens": 21,
            "cached_tokens": 0,
            "uncached_tokens": 21,
            "prefix_broken": False,
            "task_in_view": True,
            "user_messages": 1,
            "user_messages_in_view": 1,
            "plan_in_view": None,
            "events": [],
        },
        {
            "index": 2,
            "message_index": 4,
            "tokens": 170,
            "baseline_tokens": 526,
            "cached_tokens": 21,
            "uncached_tokens": 149,
            "prefix_broken": False,
            "task_in_view": True,
            "user_messages": 1,
            "user_messages_in_view": 1,
            "plan_in_view": None,
            "events": [event],
        },
    ]
    assert document["events"] == [{**event, "call": 2}]
    assert {k: document[k] for k in ("max_input_tokens", "peak_tokens", "total_input_tokens")} == {
        "max_input_tokens": 4000,
        "peak_tokens": 170,
        "total_input_tokens": 191,
    }
    assert document["baseline_total_input_tokens"] == 547
    assert document["removed_bytes"] == document["recovered_bytes"] == 980
    assert document["lost_message_ids"] == []
    assert (document["task_retention"], document["user_retention"]) == (1.0, 1.0)


def test_replay_summarizes_a_long_trace_and_names_the_transcript(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records: list[Any] = [{"role": "user", "content": "Review every module."}]
    for n in range(40):
        call = {"id": f"c{n}", "name": "read", "args": {"path": f"/m{n}.py"}}
        records.append({"role": "assistant", "content": f"Module {n}.", "tool_calls": [call]})
        body = "\n".join(f"def f{n}_{k}(): return {k}" for k in range(30))
        records.append({"role": "tool", "tool_call_id": f"c{n}", "name": "read", "content": body})
    records.append({"role": "assistant", "content": "All reviewed."})
    path = write_trace(tmp_path, records, "long.jsonl")
    argv = ["replay", str(path), "--max-input-tokens", "4000", "--workspace", str(tmp_path / "w")]
    argv.append("--create")
    status, out, _ = run(capsys, *argv, "--json")
    document = json.loads(out)
    kinds = {e["kind"] for e in document["events"]}
    assert status == 0 and "summarized" in kinds
    summary = next(e for e in document["events"] if e["kind"] == "summarized")
    assert summary["path"].startswith("/transcripts/long-") and summary["path"].endswith(".jsonl")
    assert document["peak_tokens"] <= 4000 < document["baseline_peak_tokens"]
    assert document["task_retention"] == 1.0  # "Review every module." after every summary
    assert document["removed_bytes"] == document["recovered_bytes"] > 0
    # The plain table says the same, and the transcript it names can be listed and shown.
    status, out, _ = run(capsys, *argv)
    assert "summarized " in out and "transcript -> /transcripts/long-" in out
    status, out, _ = run(capsys, "transcripts", str(tmp_path / "w"))
    assert out.startswith("Thread 'long': ") and "segment-0001.md" in out
    status, out, _ = run(capsys, "transcripts", str(tmp_path / "w"), "--show", "1")
    assert status == 0 and out.startswith('# Transcript of thread "long", messages 0-')
    assert "Review every module." in out
    status, out, _ = run(capsys, "transcripts", str(tmp_path / "w"), "--search", "every module")
    first = out.splitlines()[0]
    assert status == 0 and first.startswith("/transcripts/long-")
    assert first.endswith(".jsonl message 0 (human) line 1: Review every module.")
    status, out, _ = run(capsys, "transcripts", str(tmp_path / "w"), "--search", "f3_7 return")
    assert status == 0 and out.splitlines()[0].endswith("c3.txt:8: def f3_7(): return 7")
    status, _, err = run(capsys, "transcripts", str(tmp_path / "w"), "--search", "!!")
    assert status != 0 and "no word" in err


def test_policy_from_toml_and_window_from_the_file(
    trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("p.toml").write_text(
        "max_input_tokens = 4000\n[tool_results]\nthreshold = { tokens = 200 }\n"
    )
    status, out, _ = run(capsys, "replay", "t.jsonl", "--policy", "p.toml", "--json")
    assert status == 0
    assert json.loads(out)["events"][0]["kind"] == "tool_result_offloaded"


def test_plot_draws_a_png(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    status, out, _ = run(
        capsys, "replay", "t.jsonl", "--max-input-tokens", "4000", "--plot", "calls.png",
        "--workspace", "memory://p",
    )  # fmt: skip
    assert status == 0 and out.endswith("Plot written to calls.png\n")
    assert Path("calls.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.parametrize(
    ("plot", "message"),
    [
        ("folder", "--plot folder: is a folder; give an image file such as calls.png"),
        ("no/such/x.png", "--plot no/such/x.png: no such folder no/such"),
        ("x.txt", "--plot x.txt: cannot draw a .txt file; use one of "),
    ],
)
def test_a_plot_that_cannot_be_written_is_refused_before_the_replay(
    trace: Path, capsys: pytest.CaptureFixture[str], plot: str, message: str
) -> None:
    # found after the replay had written its workspace, or (a folder, 'folder' -> folder.png)
    # written somewhere else than the message said
    pytest.importorskip("matplotlib")
    Path("folder").mkdir()
    status, out, err = run(
        capsys, "replay", "t.jsonl", "--max-input-tokens", "4000", "--plot", plot,
        "--workspace", "ws", "--create",
    )  # fmt: skip
    assert (status, out) == (2, "")
    assert err.startswith(f"ctxfs replay: {message}")
    assert not Path("ws").exists() and not Path("folder.png").exists()


def test_a_plot_without_an_extension_is_a_png_at_that_path(
    trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    status, out, _ = run(
        capsys, "replay", "t.jsonl", "--max-input-tokens", "4000", "--plot", "calls",
        "--workspace", "memory://p",
    )  # fmt: skip
    assert status == 0 and out.endswith("Plot written to calls\n")
    assert Path("calls").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_plot_shows_the_prompt_cache_per_call() -> None:
    pytest.importorskip("matplotlib")
    records: list[Any] = [{"role": "user", "content": "Review every module."}]
    for n in range(30):
        call = {"id": f"c{n}", "name": "read", "args": {"path": f"/m{n}.py"}}
        records.append({"role": "assistant", "content": f"Module {n}.", "tool_calls": [call]})
        body = "\n".join(f"def f{n}_{k}(): return {k}" for k in range(30))
        records.append({"role": "tool", "tool_call_id": f"c{n}", "name": "read", "content": body})
    records.append({"role": "assistant", "content": "All reviewed."})
    history = parse_trace([json.dumps(r) for r in records])
    engine = ContextEngine(Workspace("memory://plot-cache"), ContextPolicy(max_input_tokens=4_000))
    result = replay(history, engine, thread_id="t")
    assert result.prefix_breaks >= 1
    context, cache, view = replay_figure(result).axes
    assert context.get_ylabel() == "context tokens"
    task, users = view.get_lines()
    assert list(task.get_ydata()) == [float(c.task_in_view) for c in result.calls]
    assert all(0.0 <= share <= 1.0 for share in users.get_ydata())
    assert view.get_title().startswith(f"goal retention: the task in {result.task_retention:.1%}")
    bars = cache.containers
    assert [b.get_label() for b in bars] == ["cached", "uncached"]
    assert [r.get_height() for r in bars[0]] == [c.cached_tokens for c in result.calls]
    assert [r.get_height() for r in bars[1]] == [c.uncached_tokens for c in result.calls]
    marks = [line.get_xdata()[0] for line in cache.get_lines()]
    assert marks == [c.index for c in result.calls if c.prefix_broken]
    assert cache.get_title() == (
        f"prompt cache: {result.cache_hit_rate:.1%} of input tokens reused, "
        f"{result.prefix_breaks} prefix break{'s' if result.prefix_breaks > 1 else ''}"
    )


def test_plot_without_matplotlib_names_the_extra(
    trace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    status, _, err = run(
        capsys, "replay", "t.jsonl", "--max-input-tokens", "4000", "--plot", "x.png",
        "--workspace", "memory://p",
    )  # fmt: skip
    assert status == 2
    assert err == "ctxfs replay: --plot needs matplotlib: pip install 'ctxfs[plot]'\n"


BAD_TRACES = [
    (['{"role": "user", "content": "hi"}', "{not json"], "2: not valid JSON"),
    (['{"role": "robot", "content": "hi"}'], "1: unknown role 'robot'; expected one of: "),
    (['"hi"'], "1: expected a JSON object (one per message), got a string"),
    (["[1, 2]"], "1: expected a JSON object (one per message), got a number"),
    (['{"role": "user", "content": 5}'], "1: content must be a string, got a number"),
    (
        ['{"role": "user", "content": "q"}', '{"role": "tool", "tool_call_id": "x"}'],
        "2: tool result for call 'x' has no earlier assistant tool call with that id",
    ),
    (['{"role": "tool", "content": "r"}'], "1: a tool result needs tool_call_id"),
    (
        [
            '{"role": "assistant", "tool_calls": [{"id": "a", "name": "ls", "args": {}}]}',
            '{"role": "tool", "tool_call_id": "a"}',
            "",
            '{"role": "tool", "tool_call_id": "a"}',
        ],
        "4: call 'a' was already answered on line 2",
    ),
    (
        ['{"role": "assistant", "tool_calls": [{"id": "a", "name": "ls", "args": "x"}]}'],
        "1: tool_calls[0].args must be a JSON object, got a string",
    ),
    (
        [
            '{"role": "assistant", "tool_calls": [{"id": "a", "name": "ls"}]}',
            '{"role": "assistant", "tool_calls": [{"id": "a", "name": "ls"}]}',
        ],
        "2: tool call id 'a' is still open: the call on line 1 has no result yet",
    ),
    ([""], " the trace holds no messages"),
    (['{"role": "user", "content": ' + "[" * 100_000 + "]" * 100_000 + "}"], "1: JSON nested too"),
]


@pytest.mark.parametrize(("lines", "message"), BAD_TRACES)
def test_bad_traces_name_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: list[str], message: str
) -> None:
    path = write_trace(tmp_path, lines, "bad.jsonl")
    status, out, err = run(capsys, "replay", str(path), "--max-input-tokens", "1000")
    assert (status, out) == (2, "")
    assert err.startswith(f"ctxfs replay: {path}:{message}"), err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_missing_and_undecodable_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "replay", str(tmp_path / "nope.jsonl"), "--max-input-tokens", "9")
    assert (status, err) == (2, f"ctxfs replay: {tmp_path / 'nope.jsonl'}: no such file\n")
    (tmp_path / "latin.jsonl").write_bytes(b'{"role": "user", "content": "ok"}\n{"x": "\xe9"}\n')
    status, _, err = run(capsys, "replay", str(tmp_path / "latin.jsonl"), "--max-input-tokens", "9")
    assert status == 2 and err.startswith(f"ctxfs replay: {tmp_path / 'latin.jsonl'}:2: not valid")


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (None, "give the context window with --max-input-tokens N\n"),
        ("{}", "give the context window with --max-input-tokens N or set max_input_tokens in p"),
        (
            '{"max_input_tokens": 900, "tool_result": {}}',
            "the policy in p is invalid: ContextPolicy has no setting 'tool_result'; did you "
            "mean 'tool_results'? valid settings: ",
        ),
        ("[1]", "policy file p: expected an object of ContextPolicy settings\n"),
        ("{", "policy file p:1: not valid JSON: Expecting property name enclosed in double"),
        ("[" * 100_000 + "]" * 100_000, "policy file p: nested too deeply to read\n"),
        ('{"max_input_tokens": 1' + "0" * 5_000 + "}", "policy file p:1: not valid JSON: a nu"),
        (
            '{"max_input_tokens": 900,\n "max_input_tokens": 9000}',
            "policy file p: not valid settings: the key 'max_input_tokens' appears twice",
        ),
    ],
)
def test_bad_policies_are_one_line(
    trace: Path, capsys: pytest.CaptureFixture[str], policy: str | None, message: str
) -> None:
    argv = ["replay", "t.jsonl"]
    if policy is not None:
        Path("p").write_text(policy)
        argv += ["--policy", "p"]
    status, _, err = run(capsys, *argv)
    assert status == 2 and err.startswith(f"ctxfs replay: {message}"), err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ("a = " + "[" * 5_000, "policy file p.toml: nested too deeply to read\n"),
        ("max_input_tokens = 1" + "0" * 5_000, "policy file p.toml: not valid TOML: Exceeds"),
    ],
)
def test_bad_toml_policies_are_one_line(
    trace: Path, capsys: pytest.CaptureFixture[str], policy: str, message: str
) -> None:
    """Regression: a TOML number over 4,300 digits was an internal error (exit 70)."""
    Path("p.toml").write_text(policy)
    status, _, err = run(capsys, "replay", "t.jsonl", "--policy", "p.toml")
    assert status == 2 and err.startswith(f"ctxfs replay: {message}"), err
    assert err.count("\n") == 1


def test_rich_table_shows_the_same_rows(trace: Path) -> None:
    import io

    from ctxfs import ContextEngine, Workspace, check_recovery, read_trace, replay
    from ctxfs._cli._replay import load_policy, render_rich

    workspace = Workspace("memory://rich")
    engine = ContextEngine(workspace, load_policy("policy.json", 4000))
    result = replay(read_trace("t.jsonl"), engine, thread_id="t")
    buffer = io.StringIO()
    recovery = check_recovery(result, workspace)
    render_rich(result, recovery, trace="t.jsonl", workspace=workspace, out=buffer, width=200)
    drawn = buffer.getvalue()
    assert "without ctxfs" in drawn and RESULT_PATH in drawn
    assert "peak tokens: 170 (without ctxfs: 526)" in drawn


def test_installed_console_script(trace: Path) -> None:
    script = Path(sys.executable).parent / "ctxfs"
    done = subprocess.run(
        [str(script), "replay", "t.jsonl", "--max-input-tokens", "4000", "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**os.environ, "TMPDIR": tempfile.gettempdir()},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["peak_tokens"] == 526
    done = subprocess.run(
        [str(script), "replay", "missing.jsonl", "--max-input-tokens", "4000"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert (done.returncode, done.stderr) == (2, "ctxfs replay: missing.jsonl: no such file\n")


def test_a_trace_without_an_assistant_message_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_trace(tmp_path, [{"role": "user", "content": "hello?"}], "quiet.jsonl")
    status, out, err = run(capsys, "replay", str(path), "--max-input-tokens", "1000")
    assert (status, out) == (2, "")
    assert err == (
        f"ctxfs replay: {path}: the trace has no assistant message, so there is no model call "
        "to replay; a trace records a conversation with at least one assistant turn\n"
    )


def test_an_internal_error_is_one_line_with_its_own_status(
    trace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import ctxfs._cli._replay

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(ctxfs._cli._replay, "replay", broken)
    assert run(capsys, "replay", "t.jsonl", "--max-input-tokens", "1000") == (
        70,
        "",
        "ctxfs replay: internal error (RuntimeError: boom second line); please report it\n",
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["ls", "{ws}"],
        ["cat", "{ws}", "/a.txt"],
        ["glob", "{ws}", "*"],
        ["grep", "{ws}", "a"],
        ["transcripts", "{ws}"],
        ["memory", "show", "{ws}"],
        ["session", "show", "{ws}"],
        ["threads", "{ws}", "--json"],
        ["gc", "{ws}", "--older-than", "1d", "--apply"],
        ["mcp", "serve", "{ws}"],
        ["demo", "--workspace", "{ws}", "--no-live"],
    ],
)
def test_a_stdout_closed_before_the_start_is_one_line_and_nothing_done(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
) -> None:
    """Regression: ``ctxfs session show WS bug >&-`` was an internal error (exit 70):
    Python gives a stream closed before the start as ``None``."""
    root = tmp_path / "ws"
    Workspace(root).write_text("/a.txt", "a\n")
    before = sorted(p.name for p in root.rglob("*"))
    monkeypatch.setattr(sys, "stdout", None)
    status = main([word.format(ws=root) for word in argv])
    err = capsys.readouterr().err
    assert status == 2
    assert err == f"ctxfs {argv[0]}: standard output is closed; nothing was done\n"
    assert sorted(p.name for p in root.rglob("*")) == before


@pytest.mark.parametrize("window", ["1000", "1"])
def test_a_demo_window_too_small_for_its_settings_is_refused_before_anything_is_written(
    window: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the demo's policy was built after the workspace was filled, and its validation error
    # came out as a defect of ctxfs (exit status 70)
    folder = tmp_path / "ws"
    argv = ["demo", "--workspace", str(folder), "--create", "--no-live"]
    assert main([*argv, "--max-input-tokens", window]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ctxfs demo: --max-input-tokens {window} does not fit the demo's ")
    assert "tool_results.threshold (tokens=1500) is larger than max_input_tokens" in err
    assert err.count("\n") == 1
    assert not folder.exists()


@pytest.mark.parametrize("window", ["0", "-5", "many"])
def test_a_demo_window_that_is_no_positive_number_is_a_usage_error(
    window: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["demo", "--workspace", str(tmp_path), "--no-live", "--max-input-tokens", window])
    assert exited.value.code == 2
    assert "argument --max-input-tokens: " in capsys.readouterr().err


@pytest.mark.parametrize("failure", [KeyboardInterrupt, RuntimeError])
def test_a_failed_replay_leaves_no_temporary_workspace(
    failure: type[BaseException],
    trace: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the folder is named only in the report, so a failure left an unnamed folder behind
    def failing(*args: object, **kwargs: object) -> None:
        raise failure("stopped")

    monkeypatch.setattr("ctxfs._cli._replay.replay", failing)
    status, _, _ = run(capsys, "replay", str(trace), "--max-input-tokens", "4000")
    assert status == (130 if failure is KeyboardInterrupt else 70)
    assert list((tmp_path / "tmp").glob("ctxfs-replay-*")) == []
    monkeypatch.undo()  # still kept when the replay succeeds
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    status, out, _ = run(capsys, "replay", str(trace), "--max-input-tokens", "4000")
    assert status == 0
    (kept,) = (tmp_path / "tmp").glob("ctxfs-replay-*")
    assert f"Workspace: {kept} " in out
