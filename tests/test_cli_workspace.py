"""``ctxfs ls | cat | glob | grep | transcripts``: the agent's tool outputs, from a shell."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ctxfs import Workspace
from ctxfs._cli._main import main
from tests.conftest import BUCKET, s3_options


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def ws(tmp_path: Path) -> str:
    workspace = Workspace(tmp_path / "ws")
    workspace.write_text("/logs/app.log", "boot ok\n-v flag seen\nERROR disk full\nretry ok\n")
    workspace.write_text("/notes/plan.md", "# Plan\n- check the error\n")
    workspace.write_text("/tool_results/t/c1.txt", "Error: big result\n")
    return str(tmp_path / "ws")


def test_ls_and_glob(ws: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "ls", ws) == (0, "/logs/\n/notes/\n/tool_results/\n", "")
    assert run(capsys, "ls", ws, "/logs") == (0, "/logs/app.log\n", "")
    assert run(capsys, "glob", ws, "*.md") == (0, "/notes/plan.md\n", "")
    assert run(capsys, "glob", ws, "*.py") == (0, "No files match '*.py' under /\n", "")
    assert run(capsys, "ls", ws, "--offset", "2") == (0, "/tool_results/\n", "")
    assert run(capsys, "glob", ws, "**", "--offset", "2") == (0, "/tool_results/t/c1.txt\n", "")


def test_cat_is_byte_exact_and_pages_like_read_file(
    ws: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "cat", ws, "/notes/plan.md") == (0, "# Plan\n- check the error\n", "")
    assert run(capsys, "cat", ws, "/logs/app.log", "--offset", "1", "--limit", "2") == (
        0,
        "     2\t-v flag seen\n     3\tERROR disk full\n"
        "... 1 more line; run it again with --offset 3 to read on\n",
        "",
    )


def test_grep_flags(ws: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "grep", ws, "error") == (0, "/notes/plan.md:2:- check the error\n", "")
    assert run(capsys, "grep", ws, "-i", "error", "-l") == (
        0,
        "/logs/app.log\n/notes/plan.md\n/tool_results/t/c1.txt\n",
        "",
    )
    assert run(capsys, "grep", ws, "-c", "-i", "--glob", "*.log", "ok") == (
        0,
        "/logs/app.log:2\n",
        "",
    )
    assert run(capsys, "grep", ws, "disk", "/logs", "-B", "1", "-A", "1") == (
        0,
        "/logs/app.log-2--v flag seen\n/logs/app.log:3:ERROR disk full\n/logs/app.log-4-retry ok\n",
        "",
    )
    assert run(capsys, "grep", ws, "-F", "--output-mode", "count", "o.") == (
        1,
        "",
        "No matches for 'o.' in / (3 files searched)\n",
    )


def test_grep_double_dash_ends_the_options(ws: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "grep", ws, "-F", "--", "-v", "/logs") == (
        0,
        "/logs/app.log:2:-v flag seen\n",
        "",
    )
    assert run(capsys, "grep", ws, "-c", "--", "--") == (1, "", "No matches for '--' in / "
                                                          "(3 files searched)\n")  # fmt: skip
    with pytest.raises(SystemExit) as exit_info:
        main(["grep", ws])
    assert exit_info.value.code == 2
    assert "the following arguments are required: PATTERN" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["cat", "{ws}", "/nope.txt"], "ctxfs cat: /nope.txt: no such file or directory\n"),
        (["cat", "{ws}", "/nope.txt", "-n"], "ctxfs cat: /nope.txt: no such file or directory\n"),
        (["cat", "{ws}", "/logs", "--offset", "-1"], "ctxfs cat: --offset: Input should be"),
        (["ls", "{ws}", "/../.."], "ctxfs ls: path '/../..' climbs above the workspace root"),
        (["grep", "{ws}", "("], "ctxfs grep: invalid regular expression"),
        (["ls", "{ws}/missing"], "ctxfs ls: no workspace at {ws}/missing: no such folder"),
        (["transcripts", "{ws}", "--thread", "x"], "ctxfs transcripts: no transcripts for"),
        (["ls", "{ws}", "--endpoint-url", "http://x"], "ctxfs ls: cannot open the workspace"),
    ],
)
def test_errors_are_one_line_with_status_2(
    ws: str, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    status, out, err = run(capsys, *(a.format(ws=ws) for a in argv))
    assert (status, out) == (2, "")
    assert err.startswith(message.format(ws=ws)), err
    assert err.count("\n") == 1


def test_transcripts_of_an_empty_workspace(ws: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "transcripts", ws) == (0, f"No transcripts in {ws} (nothing was "
                                                 "summarized yet)\n", "")  # fmt: skip


def test_memory_workspace_is_empty(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "ls", "memory://fresh") == (0, "(directory / is empty)\n", "")


def test_s3_workspace_with_endpoint_url(
    s3_endpoint: str,
    s3_bucket: str,
    aio_session: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = f"s3://{BUCKET}/run-1"
    Workspace(url, storage_options=s3_options(s3_endpoint, aio_session)).write_text(
        "/notes/a.md", "alpha\nbeta\n"
    )
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    assert run(capsys, "ls", url, "/notes", "--endpoint-url", s3_endpoint) == (
        0,
        "/notes/a.md\n",
        "",
    )
    monkeypatch.setenv("CTXFS_S3_ENDPOINT_URL", s3_endpoint)
    assert run(capsys, "grep", url, "beta") == (0, "/notes/a.md:2:beta\n", "")
    assert run(capsys, "cat", url, "/notes/a.md") == (0, "alpha\nbeta\n", "")


def test_a_catastrophic_glob_pattern_returns_at_once(
    ws: str, capsys: pytest.CaptureFixture[str]
) -> None:
    Workspace(ws).write_text("/" + "a" * 100, "")
    assert run(capsys, "glob", ws, "*a*a*a*a*a*a*a*b") == (
        0,
        "No files match '*a*a*a*a*a*a*a*b' under /\n",
        "",
    )


def test_looking_never_writes(ws: str, capsys: pytest.CaptureFixture[str]) -> None:
    before = sorted(p.relative_to(ws) for p in Path(ws).rglob("*"))
    for argv in (["ls", ws], ["glob", ws, "**"], ["grep", ws, "ok"], ["cat", ws, "/notes/plan.md"]):
        assert run(capsys, *argv)[0] == 0
    assert sorted(p.relative_to(ws) for p in Path(ws).rglob("*")) == before


@pytest.mark.parametrize(
    ("index", "reason"),
    [
        ('{"format": "ctxfs-transcript-index", "thread_id": "t", "segments": [', "Expecting"),
        ("[" * 100_000 + "]" * 100_000, "JSON nested 100,000 levels deep"),
        ("[1, 2]", "list indices must be integers or slices, not str"),
        ('{"thread_id": "t", "thread_id": "u"}', "the key 'thread_id' appears twice"),
    ],
)
def test_a_corrupted_transcript_index_is_one_line(
    ws: str, capsys: pytest.CaptureFixture[str], index: str, reason: str
) -> None:
    Workspace(ws).write_text("/transcripts/t-0123456789abcdef/index.json", index)
    status, out, err = run(capsys, "transcripts", ws)
    assert (status, out) == (2, "")
    assert err.startswith(
        "ctxfs transcripts: /transcripts/t-0123456789abcdef/index.json is not a transcript "
        f"index ({reason}"
    ), err
    assert err.count("\n") == 1


def test_a_missing_bucket_is_not_an_empty_workspace(
    s3_endpoint: str,
    s3_bucket: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    url = "s3://no-such-bucket/run"
    assert run(capsys, "ls", url, "--endpoint-url", s3_endpoint) == (
        2,
        "",
        f"ctxfs ls: cannot open the workspace {url}: bucket 'no-such-bucket' does not exist; "
        "create it, or fix the workspace URL\n",
    )


def test_a_refused_connection_is_one_line_without_advice_for_a_model(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.backends.test_conformance import _dead_endpoint

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    endpoint = _dead_endpoint()
    status, out, err = run(capsys, "grep", "s3://bucket-x/run", "x", "--endpoint-url", endpoint)
    assert (status, out) == (2, "")
    assert err == (
        "ctxfs grep: cannot open the workspace s3://bucket-x/run: could not connect to the "
        f"storage at {endpoint} (EndpointConnectionError); check the endpoint URL and that the "
        "server is running\n"
    )
