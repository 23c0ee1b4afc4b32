"""ContextMiddleware inside real create_agent graphs, with a scripted model and checkpoints."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from typing import Annotated, Any

import pytest
from _agents import MARKER, MIDDLE, TOOLS, checkpoint_blobs, report_text
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command

from ctxfs import (
    ContextEngine,
    ContextEvent,
    ContextPolicy,
    OffloadFailed,
    ToolInputOffloaded,
    ToolResultOffloaded,
    Workspace,
    is_pinned,
    pointer_of,
)
from ctxfs._layout import file_name
from ctxfs._pointers._pointer import RESULT_TAG, input_pointers
from ctxfs.integrations.langchain import ContextMeasured, ContextMiddleware
from ctxfs.testing import ScriptedChatModel, tool_call

CONFIG = {"configurable": {"thread_id": "t1"}}


def _read_back(messages: Sequence[BaseMessage]) -> AIMessage:
    """A reply that reads the last lines of the file the previous pointer names."""
    last = messages[-1]
    assert isinstance(last, ToolMessage) and isinstance(last.content, str)
    held = pointer_of(last)
    path = held.path if held is not None else None
    assert path is not None, last.content
    return tool_call("read_file", {"file_path": path, "offset": 2995, "limit": 10})


def _agent(
    ws: Workspace, policy: ContextPolicy, responses: list[Any], **kwargs: Any
) -> tuple[Any, ScriptedChatModel, InMemorySaver, list[tuple[ContextEvent, str]]]:
    events: list[tuple[ContextEvent, str]] = []
    model = ScriptedChatModel(responses=responses)
    saver = InMemorySaver()
    middleware = ContextMiddleware(
        ws, policy, on_event=lambda e, t: events.append((e, t)), **kwargs
    )
    agent = create_agent(model, TOOLS, middleware=[middleware], checkpointer=saver)
    return agent, model, saver, events


def test_large_result_is_offloaded_before_it_reaches_the_checkpoint(
    policy: ContextPolicy,
) -> None:
    ws = Workspace("memory://mw-offload")
    agent, model, saver, events = _agent(
        ws, policy, [tool_call("big_report"), _read_back, "Found it."]
    )
    out = agent.invoke({"messages": [("user", "check the report")]}, CONFIG)

    pointer, read = (m for m in out["messages"] if isinstance(m, ToolMessage))
    assert isinstance(pointer.content, str) and pointer.content.startswith(RESULT_TAG)
    held = pointer_of(pointer)
    path = held.path if held is not None else None
    assert path is not None and path.startswith("/tool_results/t1/")
    assert ws.read_text(path) == report_text()
    # The model was sent the pointer, never the full text.
    sent = model.requests[1][-1]
    assert isinstance(sent, ToolMessage) and sent.content == pointer.content
    # read_file brings back the line the preview did not show.
    assert MARKER in read.text and read.name == "read_file"
    assert out["messages"][-1].content == "Found it."
    # No checkpoint and no pending write ever held the full text.
    assert MIDDLE not in checkpoint_blobs(saver, "t1")
    offloads = [e for e, _ in events if isinstance(e, ToolResultOffloaded)]
    assert [(e.path, e.tool_name) for e in offloads] == [(path, "big_report")]
    assert all(thread == "t1" for _, thread in events)


def test_middleware_contributes_the_workspace_tools(policy: ContextPolicy) -> None:
    ws = Workspace("memory://mw-tools")
    names = [t.name for t in ContextMiddleware(ws, policy).own_tools]
    assert names == [
        "ls",
        "read_file",
        "write_file",
        "edit_file",
        "glob",
        "grep",
        "history_search",
        "history_read",
        "compact_conversation",
    ]
    assert ContextMiddleware(ws, policy, tools=False).own_tools == ()
    assert ContextMiddleware(ws, policy, tools=[TOOLS[1]]).own_tools == (TOOLS[1],)


def test_middleware_takes_an_engine_like_the_langgraph_blocks(policy: ContextPolicy) -> None:
    engine = ContextEngine(Workspace("memory://mw-engine"), policy)
    middleware = ContextMiddleware(engine)
    assert middleware.engine is engine
    assert [t.name for t in middleware.own_tools][:2] == ["ls", "read_file"]
    with pytest.raises(TypeError, match="either an engine"):
        ContextMiddleware(engine, policy)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="needs a policy"):
        ContextMiddleware(engine.workspace)  # type: ignore[call-overload]


def test_agent_writes_through_the_workspace_tools_but_not_into_sdk_areas(
    policy: ContextPolicy,
) -> None:
    ws = Workspace("memory://mw-write")
    responses = [
        tool_call("write_file", {"file_path": "/notes/a.md", "content": "hello\n"}),
        tool_call("write_file", {"file_path": "/tool_results/x.txt", "content": "no"}),
        "ok",
    ]
    agent, _, _, _ = _agent(ws, policy, responses)
    out = agent.invoke({"messages": [("user", "write")]}, CONFIG)
    results = [m.text for m in out["messages"] if isinstance(m, ToolMessage)]
    assert results[0].startswith("Created /notes/a.md")
    assert results[1].startswith("Error: /tool_results/x.txt is in the read-only area")
    assert ws.read_text("/notes/a.md") == "hello\n"


@tool
def report_and_stop(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
    """Stores the report and ends the run."""
    message = ToolMessage(content=report_text(), tool_call_id=tool_call_id)
    return Command(update={"messages": [message]}, goto=END)


def test_command_results_are_offloaded_and_routed_as_without_ctxfs(
    policy: ContextPolicy,
) -> None:
    def run(middleware: list[Any]) -> tuple[list[BaseMessage], str]:
        model = ScriptedChatModel(responses=[tool_call("report_and_stop"), "after"])
        saver = InMemorySaver()
        agent = create_agent(model, [report_and_stop], middleware=middleware, checkpointer=saver)
        out = agent.invoke({"messages": [("user", "report")]}, CONFIG)
        return out["messages"], checkpoint_blobs(saver, "t1")

    plain, plain_blobs = run([])
    managed, blobs = run([ContextMiddleware(Workspace("memory://mw-command"), policy)])
    assert [type(m) for m in managed] == [type(m) for m in plain]  # same routing
    assert managed[2].text.startswith(RESULT_TAG) and MIDDLE in plain[2].text
    assert MIDDLE in plain_blobs and MIDDLE not in blobs


def test_wrap_tool_call_keeps_every_command_field(policy: ContextPolicy) -> None:
    middleware = ContextMiddleware(Workspace("memory://mw-fields"), policy, tools=False)
    big = ToolMessage(content=report_text(), tool_call_id="c1", id="m1")
    command = Command(
        graph=Command.PARENT, update={"messages": [big], "other": 1}, goto=["a", "b"], resume=3
    )
    out = middleware.wrap_tool_call(None, lambda _: command)  # type: ignore[arg-type]
    assert isinstance(out, Command)
    assert (out.graph, out.goto, out.resume) == (Command.PARENT, ["a", "b"], 3)
    assert isinstance(out.update, dict) and out.update["other"] == 1
    (message,) = out.update["messages"]
    assert message.id == "m1" and message.text.startswith(RESULT_TAG)
    assert big.content == report_text()  # the input was not mutated
    pairs = Command(update=[("messages", [big]), ("x", 2)], goto="model")
    out = middleware.wrap_tool_call(None, lambda _: pairs)  # type: ignore[arg-type]
    assert isinstance(out, Command) and out.goto == "model"
    assert isinstance(out.update, list) and out.update[1] == ("x", 2)
    assert out.update[0][1][0].text.startswith(RESULT_TAG)


def test_async_agent_offloads_the_same_way(policy: ContextPolicy) -> None:
    ws = Workspace("memory://mw-async")
    agent, _, saver, events = _agent(ws, policy, [tool_call("big_report"), _read_back, "Found it."])
    out = asyncio.run(agent.ainvoke({"messages": [("user", "check")]}, CONFIG))
    assert MARKER in out["messages"][-2].text
    assert out["messages"][-1].content == "Found it."
    assert MIDDLE not in checkpoint_blobs(saver, "t1")
    assert any(isinstance(e, ToolResultOffloaded) for e, _ in events)
    assert any(isinstance(e, ContextMeasured) for e, _ in events)


def test_threads_get_their_own_folders_and_default_without_a_thread_id(
    policy: ContextPolicy,
) -> None:
    ws = Workspace("memory://mw-threads")
    for thread in ("alpha", "beta"):
        agent, _, _, _ = _agent(ws, policy, [tool_call("big_report"), "ok"])
        agent.invoke({"messages": [("user", "go")]}, {"configurable": {"thread_id": thread}})
    model = ScriptedChatModel(responses=[tool_call("big_report"), "ok"])
    no_saver = create_agent(model, TOOLS, middleware=[ContextMiddleware(ws, policy)])
    no_saver.invoke({"messages": [("user", "go")]})
    folders = sorted(info.path.split("/")[2].split("-")[0] for info in ws.ls("/tool_results"))
    assert folders == ["alpha", "beta", "default"]


def test_concurrent_runs_without_a_thread_id_are_kept_apart_by_run_id(
    policy: ContextPolicy,
) -> None:
    ws = Workspace("memory://mw-runs")
    events: list[tuple[ContextEvent, str]] = []
    middleware = ContextMiddleware(ws, policy, on_event=lambda e, t: events.append((e, t)))
    runs = [uuid.uuid4(), uuid.uuid4()]

    async def main() -> None:
        async def run(run_id: uuid.UUID) -> None:
            model = ScriptedChatModel(responses=[tool_call("big_report"), "ok"])
            agent = create_agent(model, TOOLS, middleware=[middleware])  # no checkpointer
            await agent.ainvoke({"messages": [("user", "go")]}, {"run_id": run_id})

        await asyncio.gather(*(run(r) for r in runs))

    asyncio.run(main())
    offloaded = sorted(t for e, t in events if isinstance(e, ToolResultOffloaded))
    assert offloaded == sorted(f"run-{r}" for r in runs)
    measured = {t for e, t in events if isinstance(e, ContextMeasured)}
    assert measured == {f"run-{r}" for r in runs}  # compaction sees the same name per run
    folders = {info.path.split("/")[2] for info in ws.ls("/tool_results")}
    assert folders == {file_name(f"run-{r}") for r in runs}


def test_a_subgraph_agent_gets_a_sub_thread(policy: ContextPolicy) -> None:
    ws = Workspace("memory://mw-sub")
    events: list[tuple[ContextEvent, str]] = []
    inner = create_agent(
        ScriptedChatModel(responses=[tool_call("big_report"), "inner done"]),
        TOOLS,
        middleware=[ContextMiddleware(ws, policy, on_event=lambda e, t: events.append((e, t)))],
    )
    parent = StateGraph(MessagesState)
    parent.add_node("researcher", inner)
    parent.add_edge(START, "researcher")
    parent.add_edge("researcher", END)
    graph = parent.compile(checkpointer=InMemorySaver())
    graph.invoke({"messages": [("user", "research")]}, CONFIG)
    offloaded = [(e, t) for e, t in events if isinstance(e, ToolResultOffloaded)]
    ((event, thread),) = offloaded
    assert thread.startswith("t1/researcher:")  # the node and the task of this invocation
    assert "/t1_researcher_" in event.path


def test_old_large_inputs_are_offloaded_in_state_by_id(tmp_path: Any) -> None:
    ws = Workspace(tmp_path / "ws")
    policy = ContextPolicy(
        max_input_tokens=4_000,
        tool_inputs={"trigger": {"tokens": 1_500}, "keep_messages": 2, "min_chars": 500},
    )
    content = "".join(f"def f{i}(x):\n    return x * {i}\n" for i in range(200))
    responses = [
        tool_call("write_file", {"file_path": "/src/big.py", "content": content}),
        tool_call("small_status"),
        tool_call("small_status"),
        "done",
    ]
    agent, _, saver, events = _agent(ws, policy, responses)
    out = agent.invoke({"messages": [("user", "write it")]}, CONFIG)
    # no summary: one of the task statement alone would add more than it replaces
    assert out["messages"][0].content == "write it" and not is_pinned(out["messages"][0])
    write = out["messages"][1]
    assert isinstance(write, AIMessage) and write.id == "scripted-0"
    moved = write.tool_calls[0]["args"]["content"]
    assert moved.startswith("[ctxfs: tool input offloaded]")
    path = input_pointers(write)[0, "content"].path
    assert path is not None and ws.read_text(path) == content
    assert ws.read_text("/src/big.py") == content
    assert [type(e) for e, _ in events].count(ToolInputOffloaded) == 1
    # The change was persisted: the latest checkpoint holds the pointer, not the content.
    latest = saver.get_tuple(CONFIG)
    assert latest is not None
    messages = latest.checkpoint["channel_values"]["messages"]
    assert messages[1].tool_calls[0]["args"]["content"] == moved
    assert [m.id for m in messages] == [m.id for m in out["messages"]]


def test_failed_offload_keeps_the_result_inline_and_logs(
    policy: ContextPolicy, caplog: pytest.LogCaptureFixture
) -> None:
    ws = Workspace("memory://mw-fail", read_only=["/tool_results"])
    agent, _, _, events = _agent(ws, policy, [tool_call("big_report"), "ok"])
    with caplog.at_level(logging.WARNING, logger="ctxfs"):
        out = agent.invoke({"messages": [("user", "go")]}, CONFIG)
    result = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert MARKER in result.text  # nothing lost: the full text stayed
    assert out["messages"][-1].content == "ok"
    assert any(isinstance(e, OffloadFailed) for e, _ in events)
    assert any("offload failed, kept inline" in r.getMessage() for r in caplog.records)


def test_engine_crash_and_callback_crash_never_reach_the_graph(
    policy: ContextPolicy, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = Workspace("memory://mw-crash")

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    middleware = ContextMiddleware(ws, policy, on_event=boom)
    monkeypatch.setattr(middleware.engine, "offload_tool_result_detailed", boom)
    monkeypatch.setattr(middleware.engine, "compact", boom)
    model = ScriptedChatModel(responses=[tool_call("big_report"), "still fine"])
    agent = create_agent(model, TOOLS, middleware=[middleware])
    with caplog.at_level(logging.ERROR, logger="ctxfs"):
        out = agent.invoke({"messages": [("user", "go")]})
    assert out["messages"][-1].content == "still fine"
    assert MARKER in out["messages"][2].text
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "offloading the result" in logged and "compacting thread default failed" in logged
