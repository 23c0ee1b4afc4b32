"""The ``task`` tool under hostile arguments and damaged records: an error result, never a
raise, and no record of a task that never ran."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import ToolMessage

from ctxfs import ContextPolicy, TaskRecordError, Workspace
from ctxfs.subagents import SubAgents, task_records
from ctxfs.subagents._record import read_record, record_path
from ctxfs.testing import ScriptedChatModel

POLICY = ContextPolicy(max_input_tokens=8_000)


def _call(tool: Any, description: str, call_id: str = "c1") -> ToolMessage:
    args = {"description": description, "subagent_type": "general-purpose"}
    out = tool.invoke({"type": "tool_call", "name": "task", "args": args, "id": call_id})
    assert isinstance(out, ToolMessage)
    return out


@pytest.mark.parametrize("description", ["", "   ", "\n\t"])
def test_an_empty_description_is_refused_before_anything_runs(description: str) -> None:
    workspace = Workspace("memory://")
    model = ScriptedChatModel(responses=["done"])
    agents = SubAgents(workspace, model=model, policy=POLICY)
    out = _call(agents.task_tool(parent_thread_id="main"), description)
    assert out.status == "error"
    assert "could not start: the task description is empty" in out.text
    assert model.requests == [] and task_records(workspace) == ()


def test_a_depth_beyond_the_registry_is_an_error_result() -> None:
    workspace = Workspace("memory://")
    agents = SubAgents(workspace, model=ScriptedChatModel(responses=["x"]), policy=POLICY)
    out = _call(agents.task_tool(parent_thread_id="main", depth=5), "do it")
    assert out.status == "error" and "depth 5 is outside 1..max_depth (1)" in out.text
    assert task_records(workspace) == ()


class _NoTools(ScriptedChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("this model cannot call tools")


def test_a_model_that_cannot_take_tools_is_an_error_result_and_leaves_no_record() -> None:
    workspace = Workspace("memory://")
    agents = SubAgents(workspace, model=_NoTools(responses=["x"]), policy=POLICY)
    out = _call(agents.task_tool(parent_thread_id="main"), "do it")
    assert out.status == "error"
    assert "could not start: NotImplementedError: this model cannot call tools" in out.text
    assert task_records(workspace) == ()  # no "running" record of a task that never ran


_NUMBERS = st.sampled_from([1e999, -1e999, float("nan"), "x", None, [], {}, True, 10**30])


@settings(max_examples=40, deadline=None)
@given(field=st.sampled_from(["turns", "tokens"]), value=_NUMBERS)
def test_a_record_with_a_number_out_of_range_is_no_record(field: str, value: Any) -> None:
    workspace = Workspace("memory://")
    model = ScriptedChatModel(responses=["fresh"])
    agents = SubAgents(workspace, model=model, policy=POLICY)
    first = agents.run("general-purpose", "p", parent_thread_id="main", tool_call_id="d1")
    path = record_path(first.thread_id)
    data = json.loads(workspace.read_bytes(path))
    data["result"][field] = value
    workspace.write_bytes(path, json.dumps(data).encode())  # 1e999 is written as Infinity
    try:
        recorded = read_record(workspace, first.thread_id)
    except TaskRecordError:  # damaged: reported and kept, never run over
        assert task_records(workspace) == ()
        with pytest.raises(TaskRecordError, match=path):
            agents.run("general-purpose", "p", parent_thread_id="main", tool_call_id="d1")
        assert len(model.requests) == 1
    else:
        assert recorded is not None and isinstance(getattr(recorded.result, field), int)
