"""The langgraph building blocks in hand-written StateGraphs, sync and async."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _agents import MIDDLE, TOOLS, checkpoint_blobs, report_text
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import Runnable
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command

from ctxfs import ContextEngine, ContextEvent, ContextPolicy, ToolResultOffloaded, Workspace
from ctxfs._pointers._pointer import RESULT_TAG
from ctxfs.integrations.langgraph import (
    ToolResultOffloader,
    compaction_node,
    offload_tool_node,
    state_update,
    thread_id_from_config,
)
from ctxfs.testing import ScriptedChatModel, tool_call

CONFIG = {"configurable": {"thread_id": "g1"}}


def _graph(engine: ContextEngine, tools_node: Runnable[Any, Any], model: ScriptedChatModel) -> Any:
    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    async def acall_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    from langchain_core.runnables import RunnableLambda

    graph = StateGraph(MessagesState)
    graph.add_node("compact", compaction_node(engine))
    graph.add_node("model", RunnableLambda(call_model, afunc=acall_model))
    graph.add_node("tools", tools_node)
    graph.add_edge(START, "compact")
    graph.add_edge("compact", "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "compact")
    return graph.compile(checkpointer=InMemorySaver())


@pytest.mark.parametrize("mode", ["wrapped-node", "tool-node-hooks"])
@pytest.mark.parametrize("run", ["sync", "async"])
def test_tool_results_are_offloaded_before_the_checkpoint(
    policy: ContextPolicy, mode: str, run: str
) -> None:
    ws = Workspace("memory://lg")
    engine = ContextEngine(ws, policy)
    events: list[ContextEvent] = []
    if mode == "wrapped-node":
        node = offload_tool_node(ToolNode(TOOLS), engine, on_event=lambda e, _: events.append(e))
    else:
        offloader = ToolResultOffloader(engine, on_event=lambda e, _: events.append(e))
        node = ToolNode(
            TOOLS,
            wrap_tool_call=offloader.wrap_tool_call,
            awrap_tool_call=offloader.awrap_tool_call,
        )
    model = ScriptedChatModel(responses=[tool_call("big_report"), "done"])
    app = _graph(engine, node, model)
    state = {"messages": [HumanMessage("go")]}
    out = app.invoke(state, CONFIG) if run == "sync" else asyncio.run(app.ainvoke(state, CONFIG))
    result = out["messages"][2]
    assert isinstance(result, ToolMessage) and result.text.startswith(RESULT_TAG)
    assert out["messages"][-1].content == "done"
    (offloaded,) = [e for e in events if isinstance(e, ToolResultOffloaded)]
    assert offloaded.path.startswith("/tool_results/g1/")
    assert ws.read_text(offloaded.path) == report_text()
    assert MIDDLE not in checkpoint_blobs(app.checkpointer, "g1")


def test_wrapped_function_node_keeps_command_goto(policy: ContextPolicy) -> None:
    engine = ContextEngine(Workspace("memory://lg-cmd"), policy)

    def tools(state: MessagesState) -> list[Command[Any]]:
        call = state["messages"][-1]
        assert isinstance(call, AIMessage)
        message = ToolMessage(content=report_text(), tool_call_id=call.tool_calls[0]["id"])
        return [Command(update={"messages": [message]}, goto="finish")]

    def finish(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage("finished by goto")]}

    model = ScriptedChatModel(responses=[tool_call("big_report"), "model again"])
    graph = StateGraph(MessagesState)
    graph.add_node("model", lambda s: {"messages": [model.invoke(s["messages"])]})
    graph.add_node("tools", offload_tool_node(tools, engine), destinations=("finish",))
    graph.add_node("finish", finish)
    graph.add_edge(START, "model")
    graph.add_edge("model", "tools")
    graph.add_edge("finish", END)
    out = graph.compile().invoke({"messages": [HumanMessage("go")]})
    assert [m.text for m in out["messages"][2:]][1] == "finished by goto"
    assert out["messages"][2].text.startswith(RESULT_TAG)


def test_compaction_node_writes_nothing_when_nothing_changes(policy: ContextPolicy) -> None:
    node = compaction_node(ContextEngine(Workspace("memory://lg-nop"), policy))
    state = {"messages": [HumanMessage("hi", id="h1"), AIMessage("hello", id="a1")]}
    assert node.invoke(state) == {}
    assert asyncio.run(node.ainvoke(state)) == {}


def test_state_update_replaces_by_id_or_rebuilds() -> None:
    h, a = HumanMessage("hi", id="h"), AIMessage("yo", id="a")
    assert state_update([h, a], [h, a]) is None
    a2 = a.model_copy(update={"content": "short"})
    assert state_update([h, a], [h, a2]) == {"messages": [a2]}
    # A summary takes the place (the id) of the first message it replaces; the rest of what
    # was archived is removed by id, so nothing else in the state is touched.
    s, h2, a3 = SystemMessage("sys", id="s"), HumanMessage("next", id="h2"), AIMessage("b", id="a3")
    summary = HumanMessage("summary", id="ctxfs-summary-t-0001")
    update = state_update([s, h, a, h2, a3], [s, summary, h2, a3])
    assert update == {"messages": [summary.model_copy(update={"id": "h"}), RemoveMessage(id="a")]}
    assert add_messages([s, h, a, h2, a3], update["messages"]) == [
        s,
        summary.model_copy(update={"id": "h"}),
        h2,
        a3,
    ]
    # A message added beside it (another branch, in the same step) is kept.
    note = HumanMessage("from a parallel branch", id="n")
    assert add_messages([s, h, a, h2, a3, note], update["messages"])[-1] == note
    assert state_update([h, a], [a]) == {"messages": [RemoveMessage(id="h")]}
    # What cannot be reached that way is rebuilt: a new message where nothing was dropped.
    rebuilt = state_update([h, a], [h, summary, a])
    assert rebuilt is not None
    first, *rest = rebuilt["messages"]
    assert isinstance(first, RemoveMessage) and first.id == REMOVE_ALL_MESSAGES
    assert rest == [h, summary, a]
    anonymous = HumanMessage("no id")
    assert state_update([anonymous, a], [summary, a]) == {
        "messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), summary, a]
    }


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (None, "default"),
        ({}, "default"),
        ({"configurable": {"thread_id": ""}}, "default"),
        ({"configurable": {"thread_id": 42}}, "42"),
        ({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, "t"),
        ({"configurable": {"thread_id": "t", "checkpoint_ns": "model:1f"}}, "t"),
        ({"configurable": {"thread_id": "t", "checkpoint_ns": "a:1|b:2|tools:3"}}, "t/a:1/b:2"),
        ({"configurable": {"checkpoint_ns": "sub:9|model:1"}}, "default/sub:9"),
        ({"run_id": "r1"}, "run-r1"),
        ({"run_id": "", "configurable": {}}, "default"),
        ({"run_id": "r1", "configurable": {"thread_id": "t"}}, "t"),
        ({"run_id": "r1", "configurable": {"checkpoint_ns": "sub:9|model:1"}}, "run-r1/sub:9"),
    ],
)
def test_thread_id_from_config(config: Any, expected: str) -> None:
    assert thread_id_from_config(config) == expected
