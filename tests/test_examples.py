"""Every script in examples/ runs offline, with its scripted model, and does what it says."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from ctxfs import TranscriptArchive, Workspace

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_example_is_tested() -> None:
    tested = {
        "quickstart",
        "langgraph_graph",
        "s3_workspace",
        "openai_messages",
        "memory_two_sessions",
    }
    tested |= {"parallel_subagents"}
    tested |= {"workflow_research"}
    tested |= {"deepagents_s3"}
    tested |= {"mcp_client"}
    tested |= {"memory_audit"}  # tests/memory/test_memory_example.py
    tested |= {"lifecycle_gc"}  # tested in tests/lifecycle/test_lifecycle_cli.py
    assert {p.stem for p in EXAMPLES.glob("*.py")} == tested


def test_quickstart(capsys: pytest.CaptureFixture[str]) -> None:
    answer = _load("quickstart").main([])
    assert "100997" in answer
    printed = capsys.readouterr().out
    assert "[ctxfs: tool result offloaded]" in printed and "/tool_results/quickstart/" in printed


def test_quickstart_on_a_local_folder(tmp_path: Path) -> None:
    _load("quickstart").main(["--workspace", str(tmp_path / "ws")])
    (saved,) = (tmp_path / "ws" / "tool_results").glob("*/*.txt")
    assert saved.read_text().count("REFUNDED") == 6


def test_langgraph_graph(capsys: pytest.CaptureFixture[str]) -> None:
    assert "7 of the day's 1,440 minutes" in _load("langgraph_graph").main([])
    printed = capsys.readouterr().out
    assert "[ctxfs: tool result offloaded]" in printed and ".txt:7" in printed


def test_openai_messages() -> None:
    assert _load("openai_messages").main([]) == "Row 42 is: row-0042,25,ok"


def test_openai_messages_continues_the_transcript_across_compactions(tmp_path: Path) -> None:
    # Summaries must keep their ctxfs tag between turns: a round trip of the history through
    # OpenAI dicts would archive the first summary as conversation and restart at message 0.
    answer = _load("openai_messages").main(
        ["--workspace", str(tmp_path / "ws"), "--summarize-at", "5"]
    )
    assert answer == "Row 42 is: row-0042,25,ok"
    segments = TranscriptArchive(Workspace(tmp_path / "ws"), "openai-example").segments()
    assert len(segments) == 2
    first, second = segments
    assert first.start == 0 and first.stop > 0
    assert second.start == first.stop and second.stop > second.start


def test_s3_workspace(s3_endpoint: str, s3_bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("CTXFS_S3_ENDPOINT_URL", s3_endpoint)
    url = f"s3://{s3_bucket}/agents/run-1"
    listing = _load("s3_workspace").main([url]).splitlines()
    assert f"{url}/notes/audit.md" in listing
    assert any(line.startswith(f"{url}/tool_results/audit/") for line in listing)


def test_parallel_subagents(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answer = _load("parallel_subagents").main(["--workspace", str(tmp_path / "ws")])
    assert answer == "North has a payment refunded twice (ticket OPS-2291); south is in order."
    printed = capsys.readouterr().out
    assert "artifacts: ['/audit/north.md', '/audit/south.md']" in printed
    finished = "[audit/task-audit-n] sub-agent 'auditor' (task 'audit-n' of 'audit') finished"
    assert finished in printed
    assert (tmp_path / "ws" / "transcripts").is_dir()


def test_mcp_client(capfd: pytest.CaptureFixture[str]) -> None:
    # the server runs as a subprocess over stdio, on a temporary folder (its stderr needs a
    # real file descriptor, hence capfd)
    failure = _load("mcp_client").main([])
    assert failure == "01:12:01 job=export step=4321 FAILED disk quota exceeded on /var/export"
    printed = capfd.readouterr().out
    assert "[ctxfs: output saved] The output of edit_file" in printed
    assert "resource ctxfs:///tool_results/mcp/edit_file-" in printed
    assert "refused: Error: /tool_results/forged.txt is in the read-only area" in printed


def test_deepagents_s3(
    s3_endpoint: str,
    s3_bucket: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("CTXFS_S3_ENDPOINT_URL", s3_endpoint)
    url = f"s3://{s3_bucket}/agents/deep-1"
    listing = _load("deepagents_s3").main([url]).splitlines()
    assert f"{url}/notes/audit.md" in listing
    assert not any(line.endswith("/scratch.md") for line in listing)  # deleted by the agent
    assert any(line.startswith(f"{url}/tool_results/audit") for line in listing)
    printed = capsys.readouterr().out
    assert "[export_audit_log] [ctxfs: tool result offloaded]" in printed
    assert "[grep] /tool_results/audit" in printed
    assert "2719: event=02718 actor=user15 action=login FAILED" in printed
    assert "[delete] Deleted /scratch.md" in printed


def test_workflow_research(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    example = _load("workflow_research")
    summary = example.main(["--workspace", str(tmp_path / "ws")])
    assert summary.startswith("Move to the event queue: it removes double settlement")
    printed = capsys.readouterr().out
    assert "settlement-queue: completed; state file /sessions/settlement-queue.json" in printed
    ws = Workspace(tmp_path / "ws")
    state = json.loads(ws.read_text("/sessions/settlement-queue.json"))
    assert [s["stage"] for s in state["completed_stages"]] == [
        "planner",
        "researcher",
        "synthesizer",
    ]
    refs = state["completed_stages"][1]["output"]["raw_data_refs"]
    assert refs == [f"/research/settlement-queue/{n}" for n in example.SOURCES]
    assert "412 payments" in ws.read_text(refs[0])  # the raw material, readable by path


def test_memory_two_sessions(tmp_path: Path) -> None:
    system = _load("memory_two_sessions").main(["--workspace", str(tmp_path / "ws")])
    memory, recalled = system.split("<recalled>")
    assert "- [knowledge, 0.90] The staging database listens on port 6543." in memory
    assert "short answers" not in memory  # under the confidence threshold
    assert "disk quota exceeded on volume vol-7731" in recalled  # from session 1's transcript
    assert (tmp_path / "ws" / "memories" / "alice" / "memory.json").is_file()
