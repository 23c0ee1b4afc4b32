"""``ctxfs transcripts`` shows parent and sub-agent threads and how they relate."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxfs import ContextPolicy, Workspace
from ctxfs._cli._main import main
from ctxfs.subagents import SubAgent, SubAgents
from ctxfs.testing import ScriptedChatModel, tool_call


def test_transcripts_lists_parent_and_child_threads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws_dir = tmp_path / "ws"
    ws = Workspace(ws_dir)
    inner = SubAgent(
        name="inner",
        description="d",
        model=ScriptedChatModel(script_id="in", responses=["Inner done."]),
    )
    outer = SubAgent(
        name="outer",
        description="d",
        subagents=True,
        model=ScriptedChatModel(
            script_id="out",
            responses=[
                tool_call(
                    "task", {"description": "Deeper.", "subagent_type": "inner"}, call_id="n1"
                ),
                "Outer done.",
            ],
        ),
    )
    agents = SubAgents(
        ws,
        model=ScriptedChatModel(responses=[]),
        policy=ContextPolicy(max_input_tokens=16_000),
        subagents=[inner, outer],
        max_depth=2,
    )
    agents.run("outer", "Go.", parent_thread_id="main", tool_call_id="c1")

    assert main(["transcripts", str(ws_dir)]) == 0
    out = capsys.readouterr().out
    blocks = {b.splitlines()[0].split("'")[1]: b for b in out.strip().split("\n\n")}
    assert list(blocks) == ["main", "main/task-c1", "main/task-c1/task-n1"]
    assert blocks["main"].splitlines()[1:] == [
        "  -> sub-agent thread 'main/task-c1' (outer, completed)"
    ]
    assert blocks["main/task-c1"].splitlines()[1].startswith("    1  messages 0-3  ")
    assert blocks["main/task-c1"].splitlines()[2:] == [
        "  sub-agent 'outer' for thread 'main' (task call 'c1'): completed",
        "  -> sub-agent thread 'main/task-c1/task-n1' (inner, completed)",
    ]
    assert blocks["main/task-c1/task-n1"].splitlines()[2:] == [
        "  sub-agent 'inner' for thread 'main/task-c1' (task call 'n1'): completed"
    ]

    assert (
        main(["transcripts", str(ws_dir), "--thread", "main/task-c1/task-n1", "--show", "1"]) == 0
    )
    assert "Deeper." in capsys.readouterr().out
