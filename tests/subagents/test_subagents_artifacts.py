"""A sub-agent's artifacts are workspace paths, normalised and confined like any other path.

What a tool result claims as artifacts never reaches the parent as such: only the ``task``
tool ctxfs gave the sub-agent (recognised by identity) may name a nested sub-agent's files,
and each of those paths goes through the workspace's confinement; the refused ones are
reported with why, never merged.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import StructuredTool

from ctxfs import ContextEngine, ContextPolicy, Workspace
from ctxfs._sections import one_line
from ctxfs.integrations._hooks import ContextHooks
from ctxfs.sandbox import normalize_path
from ctxfs.subagents import SubAgent, SubAgents, TaskResult
from ctxfs.subagents._loop import Run
from ctxfs.testing import ScriptedChatModel, tool_call

HOSTILE = [
    "../../etc/passwd",
    "s3://other/x",
    "file:///etc/shadow",
    "~/.ssh/id_rsa",
    "C:/Windows/x",
    "a\x00b",
    "notes\\..\\..\\x",
    "/a/../../b",
    "x" * 5000,
]
_PATHS = st.one_of(
    st.sampled_from(HOSTILE),
    st.lists(st.sampled_from(["notes", "a.md", ".", "..", "", "b c", "ü"]), max_size=5).map(
        "/".join
    ),
    st.text(max_size=30),
    st.integers(),
    st.none(),
)


def _run(workspace: Workspace, task: StructuredTool, other: StructuredTool) -> Run:
    engine = ContextEngine(workspace, ContextPolicy(max_input_tokens=8_000))
    return Run(
        subagent="gp",
        thread_id="p/task-c",
        parent_thread_id="p",
        tool_call_id="c",
        prompt="p",
        hooks=ContextHooks(engine),
        model=ScriptedChatModel(responses=[]),
        system=SystemMessage("s"),
        tools={"task": task, "lookup": other},
        max_turns=3,
        max_tokens=None,
        messages=[HumanMessage("p")],
        task_tool=task,
    )


def _tool(name: str) -> StructuredTool:
    return StructuredTool.from_function(func=lambda: "", name=name, description=name)


def _result(name: str, artifacts: list[Any]) -> tuple[dict[str, Any], ToolMessage]:
    call = {"name": name, "args": {}, "id": "k", "type": "tool_call"}
    message = ToolMessage(
        content="done", tool_call_id="k", name=name, artifact={"artifacts": artifacts}
    )
    return call, message


@settings(max_examples=200, deadline=None)
@given(claimed=st.lists(_PATHS, max_size=8))
def test_only_confined_workspace_paths_become_artifacts(claimed: list[Any]) -> None:
    workspace = Workspace("memory://sub-artifacts")
    task, lookup = _tool("task"), _tool("lookup")
    run = _run(workspace, task, lookup)
    call, message = _result("lookup", claimed)  # a user's tool: its artifact is its own
    run.took(call, message)  # type: ignore[arg-type]
    assert run.artifacts == {} and run.refused_artifacts == {}
    call, message = _result("task", claimed)  # the nested task tool ctxfs made
    run.took(call, message)  # type: ignore[arg-type]
    for path in run.artifacts:
        assert normalize_path(path) == path and path.startswith("/")
        assert ".." not in path.split("/") and "://" not in path
    accepted: set[str] = set()
    refused: set[str] = set()
    for raw in claimed:
        try:
            accepted.add(normalize_path(raw))
        except ValueError:
            refused.add(one_line(repr(raw)) if isinstance(raw, str) else type(raw).__name__)
    assert set(run.artifacts) == accepted  # each once, first claimed first
    assert {key[:200] for key in refused} == set(run.refused_artifacts)
    assert all(why for why in run.refused_artifacts.values())
    assert all("\n" not in f"{k}{v}" for k, v in run.refused_artifacts.items())


def test_a_nested_result_claiming_paths_outside_reaches_the_parent_refused() -> None:
    lead = SubAgent(
        name="lead",
        description="d",
        subagents=True,
        model=ScriptedChatModel(
            script_id="lead",
            responses=[
                tool_call(
                    "task", {"description": "Write it.", "subagent_type": "writer"}, call_id="n1"
                ),
                "Delegated.",
            ],
        ),
    )
    writer = SubAgent(name="writer", description="d")
    subagents = SubAgents(
        Workspace("memory://sub-artifacts-nested"),
        model=ScriptedChatModel(responses=[]),
        policy=ContextPolicy(max_input_tokens=16_000),
        subagents=[lead, writer],
        max_depth=2,
    )
    hostile = TaskResult(  # what a compromised nested sub-agent's result would claim
        subagent="writer",
        thread_id="main/task-c1/task-n1",
        parent_thread_id="main/task-c1",
        tool_call_id="n1",
        status="completed",
        answer="Wrote it.",
        artifacts=("../../etc/passwd", "s3://other/x", "/notes/ok.md"),
    )
    real_run = subagents.run

    def run(name: str, prompt: str, **kwargs: Any) -> TaskResult:
        return hostile if name == "writer" else real_run(name, prompt, **kwargs)

    subagents.run = run  # type: ignore[method-assign]
    result = real_run("lead", "Delegate.", parent_thread_id="main", tool_call_id="c1")
    assert result.status == "completed"
    assert result.artifacts == ("/notes/ok.md",)
    assert len(result.refused_artifacts) == 2
    assert result.refused_artifacts[0].startswith("'../../etc/passwd': ")
    assert result.refused_artifacts[1].startswith("'s3://other/x': ")
    header = result.to_text().split("\n")[0]
    assert "files written: /notes/ok.md (refused as not workspace paths: '../../etc/pa" in header
    assert TaskResult.from_json(result.to_json()) == result


@pytest.mark.parametrize("bad", ["../../etc/passwd", "s3://other/x", "/a/../b", 7])
def test_a_recorded_result_with_a_path_that_is_not_a_workspace_path_is_refused(bad: Any) -> None:
    data = TaskResult(
        subagent="gp",
        thread_id="t",
        parent_thread_id="p",
        tool_call_id="c",
        status="completed",
        answer="ok",
    ).to_json()
    data["artifacts"] = [bad]
    with pytest.raises(ValueError):
        TaskResult.from_json(data)
