"""The task tool in a hand-written LangGraph graph: a ToolNode runs it, the artifacts reducer
merges what the sub-agents wrote, and their steps reach the graph's custom stream."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from ctxfs import ContextEngine, ContextPolicy, Workspace
from ctxfs.integrations.langgraph import compaction_node, offload_tool_node
from ctxfs.subagents import SubAgents, merge_artifacts
from ctxfs.testing import ScriptedChatModel, tool_call
from ctxfs.tools import workspace_tools


class State(MessagesState):
    artifacts: Annotated[list[str], merge_artifacts]


def _task(n: int, call_id: str) -> dict[str, Any]:
    return {
        "name": "task",
        "id": call_id,
        "type": "tool_call",
        "args": {"description": f"Write note {n}.", "subagent_type": "general-purpose"},
    }


def _graph(ws: Workspace) -> Any:
    def write(messages: Any) -> AIMessage:
        n = str(messages[1].content).split()[-1].rstrip(".")
        return tool_call("write_file", {"file_path": f"/notes/{n}.md", "content": n})

    sub_model = ScriptedChatModel(script_id="sub", responses=[write, "Written."])
    policy = ContextPolicy(max_input_tokens=16_000)
    agents = SubAgents(ws, model=sub_model, policy=policy)
    engine = ContextEngine(ws, policy)
    tools = [*workspace_tools(ws), agents.task_tool()]
    parent = ScriptedChatModel(
        script_id="parent",
        responses=[
            AIMessage(content="", tool_calls=[_task(1, "a"), _task(2, "b")]),
            AIMessage(content="", tool_calls=[_task(1, "c")]),  # note 1 again: no repeat
            "Both notes written.",
        ],
    )

    def model(state: State) -> dict[str, Any]:
        return {"messages": [parent.bind_tools(tools).invoke(state["messages"])]}

    graph = StateGraph(State)
    graph.add_node("compact", compaction_node(engine, tools=tools))
    graph.add_node("model", model)
    graph.add_node("tools", offload_tool_node(ToolNode(tools), engine))
    graph.add_edge(START, "compact")
    graph.add_edge("compact", "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "compact")
    return graph.compile(checkpointer=InMemorySaver())


@pytest.mark.parametrize("run_async", [False, True], ids=["sync", "async"])
def test_task_tool_in_a_hand_written_graph(run_async: bool) -> None:
    ws = Workspace("memory://sub-graph-" + ("async" if run_async else "sync"))
    graph = _graph(ws)
    config: Any = {"configurable": {"thread_id": "g1"}}
    request = {"messages": [("user", "Write the notes.")]}
    chunks: list[Any] = []

    async def go() -> None:
        async for chunk in graph.astream(request, config, stream_mode="custom"):
            chunks.append(chunk)

    if run_async:
        asyncio.run(go())
    else:
        chunks.extend(graph.stream(request, config, stream_mode="custom"))
    progress = [c["ctxfs"] for c in chunks if c["ctxfs"]["event"] == "TaskProgress"]
    state = graph.get_state(config).values
    assert state["artifacts"] == ["/notes/1.md", "/notes/2.md"]
    answers = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in answers] == ["a", "b", "c"]
    opening = '<subagent_answer subagent="general-purpose" status="completed">\nWritten.\n'
    assert all(m.text.split("\n", 1)[1].startswith(opening) for m in answers)
    header = "[sub-agent 'general-purpose': 2 turn(s); transcript: "
    assert all(m.text.startswith(header) for m in answers)
    assert answers[0].artifact["thread_id"] == "g1/task-a"
    assert {e["thread_id"] for e in progress} == {"g1/task-a", "g1/task-b", "g1/task-c"}
    assert progress[0]["text"].startswith("sub-agent 'general-purpose' (task '")
    assert state["messages"][-1].content == "Both notes written."


def test_without_an_artifacts_key_the_tool_updates_only_messages() -> None:
    ws = Workspace("memory://sub-graph-plain")
    agents = SubAgents(
        ws,
        model=ScriptedChatModel(
            responses=[tool_call("write_file", {"file_path": "/x.md", "content": "x"}), "Done."]
        ),
        policy=ContextPolicy(max_input_tokens=16_000),
    )
    tool = agents.task_tool(parent_thread_id="p", artifacts_key=None)
    out = tool.invoke(
        {
            "name": "task",
            "id": "c",
            "type": "tool_call",
            "args": {"description": "Write x.", "subagent_type": "general-purpose"},
        }
    )
    assert isinstance(out, ToolMessage) and out.artifact["artifacts"] == ["/x.md"]
    assert out.artifact["thread_id"] == "p/task-c" and out.artifact["status"] == "completed"


def test_a_workspace_that_refuses_the_record_is_an_error_result_not_a_crash() -> None:
    ws = Workspace("memory://sub-graph-readonly").view(read_only=["/transcripts"])
    agents = SubAgents(
        ws,
        model=ScriptedChatModel(responses=["never"]),
        policy=ContextPolicy(max_input_tokens=16_000),
    )
    out = agents.task_tool(parent_thread_id="p").invoke(
        {
            "name": "task",
            "id": "c",
            "type": "tool_call",
            "args": {"description": "x", "subagent_type": "general-purpose"},
        }
    )
    assert isinstance(out, ToolMessage) and out.status == "error"
    assert out.text.startswith(
        "Error: sub-agent 'general-purpose' could not start: the workspace refused its record ("
    )
