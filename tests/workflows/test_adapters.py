"""A stage run by a ctxfs sub-agent, and memory retrieved by ctxfs.memory's keyword search."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from ctxfs import ContextPolicy, Workspace
from ctxfs._errors import UnknownSubAgentError
from ctxfs.memory import Fact, KeywordRetriever, MemoryDocument, fact_id
from ctxfs.memory._document import encode_document
from ctxfs.memory._store import memory_path
from ctxfs.subagents import SubAgents
from ctxfs.testing import ScriptedChatModel, tool_call
from ctxfs.workflows import Stage, StageInput, Workflow, subagent_agent

OUTPUT = {"summary": "The cron runs in UTC.", "confidence": "medium"}


def _sources_read(messages: list[BaseMessage]) -> str:
    # The sub-agent's last message is the read_file result: it saw the raw material.
    assert "cron runs at 00:00 UTC" in messages[-1].text
    return json.dumps(OUTPUT | {"raw_data_refs": ["/research/sources.md"]})


def test_a_stage_run_by_a_sub_agent(workspace: Workspace) -> None:
    workspace.write_text("/research/sources.md", "cron runs at 00:00 UTC\n")
    model = ScriptedChatModel(
        responses=[tool_call("read_file", {"file_path": "/research/sources.md"}), _sources_read]
    )
    subagents = SubAgents(workspace, model=model, policy=ContextPolicy(max_input_tokens=8_000))
    seen: list[StageInput] = []

    def plan(stage_input: StageInput) -> dict[str, Any]:
        seen.append(stage_input)
        return {"summary": "Read /research/sources.md.", "confidence": "high"}

    flow = Workflow(
        stages=[
            Stage(name="planner", prompt="Plan.", agent=plan),
            Stage(name="researcher", prompt="Read the sources.", agent=subagent_agent(subagents)),
        ],
        workspace=workspace,
    )
    run = flow.run("Why does the job fail?", workflow_id="sub")
    assert run.status == "completed"
    assert run.outputs["researcher"].model_dump(include={"summary", "confidence"}) == OUTPUT
    (task,) = [m for m in model.requests[0] if m.type == "human"]
    assert "Read the sources." in task.text and "Why does the job fail?" in task.text
    assert "Read /research/sources.md." in task.text  # the planner's output, passed on
    assert seen[0].attempt == 1
    # The sub-agent's conversation is archived under its own thread, named from the workflow.
    assert any("workflow-sub" in p for p in workspace.glob("**/*", "/transcripts").paths)


def test_an_unknown_sub_agent_is_refused_when_the_stage_is_built(workspace: Workspace) -> None:
    model = ScriptedChatModel(responses=["{}"])
    subagents = SubAgents(workspace, model=model, policy=ContextPolicy(max_input_tokens=8_000))
    with pytest.raises(UnknownSubAgentError, match="general-purpose"):
        subagent_agent(subagents, "researcher")


def test_memory_from_a_keyword_retriever_is_kept_in_the_state(workspace: Workspace) -> None:
    facts = [
        "The settlement job runs on UTC cron since March.",
        "Alice prefers reports in bullet points.",
    ]
    document = MemoryDocument(
        namespace=("team",),
        facts=tuple(
            Fact(
                id=fact_id(text),
                content=text,
                category="knowledge",
                confidence=0.9,
                created_at=datetime(2026, 1, 1, tzinfo=UTC),
            )
            for text in facts
        ),
    )
    workspace.write_bytes(memory_path(("team",)), encode_document(document))
    shown: list[tuple[str, ...]] = []

    def agent(stage_input: StageInput) -> dict[str, Any]:
        shown.append(stage_input.memory)
        return {"summary": "ok", "confidence": "high"}

    flow = Workflow(
        stages=[Stage(name="only", prompt="p", agent=agent)],
        workspace=workspace,
        memory=KeywordRetriever(workspace),
    )
    run = flow.run("Why does the settlement job fail?", workflow_id="mem")
    (memory,) = shown
    assert memory[0] == f"{facts[0]} (from {memory_path(('team',))})"
    assert all("bullet points" not in item for item in memory)
    assert run.state.memory == list(memory)
