"""The issue's scenario: a create_agent parent delegates three exploration tasks, two of them in
parallel; its context holds only the calls and the answers, and it recovers a detail a
sub-agent saw from the shared workspace with grep and read_file. Sync and async."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from ctxfs import ContextPolicy, Workspace
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.subagents import SubAgent, SubAgentMiddleware, SubAgents, task_records
from ctxfs.testing import ScriptedChatModel, tool_call

DETAIL = "order 8841 refunded twice by worker-3"
CONFIG: Any = {"configurable": {"thread_id": "main"}}


@tool
def query(name: str) -> str:
    """Runs a named query over the orders table (about 3,000 tokens of rows)."""
    rows = [f"{name} row {i}: order {1000 + i} settled by worker-{i % 5}" for i in range(300)]
    if name == "refunds":
        rows[217] = f"{name} row 217: {DETAIL}"
    return "\n".join(rows)


def _topic(messages: Sequence[BaseMessage]) -> str:
    task = str(messages[1].content)  # [system, task, ...]: the task names its query
    return "refunds" if "refunds" in task else "settlements"


def _explorer_script(together: threading.Barrier) -> list[Any]:
    def first(messages: Sequence[BaseMessage]) -> AIMessage:
        together.wait()  # both parallel sub-agents must be running at once to get past this
        return tool_call("query", {"name": _topic(messages)})

    def note(messages: Sequence[BaseMessage]) -> AIMessage:
        topic = _topic(messages)
        return tool_call("write_file", {"file_path": f"/notes/{topic}.md", "content": "300 rows"})

    def report(messages: Sequence[BaseMessage]) -> str:
        topic = _topic(messages)
        anomaly = "one order was refunded twice" if topic == "refunds" else "nothing odd"
        return f"The {topic} query returned 300 rows; {anomaly}. Notes in /notes/{topic}.md."

    return [first, note, report]


def _parent_script() -> list[Any]:
    def read_match(messages: Sequence[BaseMessage]) -> AIMessage:
        found = str(messages[-1].content)
        path, line = re.search(r"^(/tool_results/\S+?):(\d+):", found, re.M).groups()  # type: ignore[union-attr]
        return tool_call("read_file", {"file_path": path, "offset": int(line) - 1, "limit": 1})

    def answer(messages: Sequence[BaseMessage]) -> str:
        first_line = str(messages[-1].content).splitlines()[0]
        return "Recovered: " + first_line.split("\t", 1)[1]

    return [
        tool_call(
            "task",
            {
                "description": "Where is the payment retry limit set? Report the "
                "file and the value.",
                "subagent_type": "config-finder",
            },
            call_id="t1",
        ),
        AIMessage(
            content="",
            tool_calls=[
                {
                    "name": "task",
                    "id": "t2",
                    "type": "tool_call",
                    "args": {
                        "description": "Run the refunds query and report anomalies.",
                        "subagent_type": "log-explorer",
                    },
                },
                {
                    "name": "task",
                    "id": "t3",
                    "type": "tool_call",
                    "args": {
                        "description": "Run the settlements query and report anomalies.",
                        "subagent_type": "log-explorer",
                    },
                },
            ],
        ),
        tool_call(
            "grep", {"pattern": "refunded twice", "path": "/tool_results", "output_mode": "content"}
        ),
        read_match,
        answer,
    ]


def _setup() -> tuple[Workspace, ScriptedChatModel, list[ScriptedChatModel], Any]:
    ws = Workspace("memory://sub-scenario-" + str(id(object())))
    ws.write_text("/repo/config/payments.toml", "[payments]\ncurrency = 'EUR'\nretry_limit = 7\n")
    finder = ScriptedChatModel(
        script_id="finder",
        responses=[
            tool_call("grep", {"pattern": "retry_limit", "path": "/repo"}),
            tool_call("write_file", {"file_path": "/notes/config.md", "content": "limit 7\n"}),
            "retry_limit is 7, set in /repo/config/payments.toml line 3.",
        ],
    )
    explorer = ScriptedChatModel(
        script_id="explorer", responses=_explorer_script(threading.Barrier(2, timeout=60))
    )
    agents = SubAgents(
        ws,
        model=explorer,
        policy=ContextPolicy(max_input_tokens=16_000, tool_results={"threshold": {"tokens": 500}}),
        subagents=[
            SubAgent(name="config-finder", description="Finds settings.", model=finder),
            SubAgent(name="log-explorer", description="Runs queries.", tools=(query,)),
        ],
    )
    parent = ScriptedChatModel(script_id="parent", responses=_parent_script())
    agent = create_agent(
        parent,
        [],
        middleware=[
            ContextMiddleware(ws, ContextPolicy(max_input_tokens=32_000)),
            SubAgentMiddleware(agents),
        ],
        checkpointer=InMemorySaver(),
    )
    return ws, parent, [finder, explorer], agent


def _stream(agent: Any, run_async: bool) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    progress: list[dict[str, Any]] = []
    final: dict[str, Any] = {}
    request = {"messages": [("user", "Audit payments. PARENT-ONLY-MARKER")]}
    modes = ["custom", "values"]

    def take(mode: str, chunk: Any) -> None:
        if mode == "custom":
            progress.append(chunk["ctxfs"])
        else:
            final.update(chunk)

    if run_async:

        async def go() -> None:
            async for mode, chunk in agent.astream(request, CONFIG, stream_mode=modes):
                take(mode, chunk)

        asyncio.run(go())
    else:
        for mode, chunk in agent.stream(request, CONFIG, stream_mode=modes):
            take(mode, chunk)
    return progress, final


@pytest.mark.parametrize("run_async", [False, True], ids=["sync", "async"])
def test_three_delegated_explorations_then_a_detail_recovered(run_async: bool) -> None:
    ws, parent, sub_models, agent = _setup()
    progress, final = _stream(agent, run_async)
    messages = final["messages"]

    # The parent's history: the calls and the answers, nothing the sub-agents read.
    assert [m.type for m in messages] == [
        "human",
        "ai",
        "tool",
        "ai",
        "tool",
        "tool",
        "ai",
        "tool",
        "ai",
        "tool",
        "ai",
    ]
    answers = [m for m in messages[:6] if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in answers] == ["t1", "t2", "t3"]
    assert (
        answers[0]
        .text.split("\n", 2)[2]
        .startswith("retry_limit is 7, set in /repo/config/payments.toml")
    )
    assert (
        answers[1]
        .text.split("\n", 2)[2]
        .startswith("The refunds query returned 300 rows; one order was ")
    )
    assert all(m.status == "success" for m in answers)
    before_recovery = parent.requests[2]  # what the parent was sent after the three tasks
    assert [m.type for m in before_recovery] == ["human", "ai", "tool", "ai", "tool", "tool"]
    assert not any("8841" in str(m.content) for m in before_recovery)
    assert max(len(str(m.content)) for m in before_recovery) < 600  # answers, no rows

    # The detail comes back from the shared workspace, byte-exact.
    assert messages[-1].content == f"Recovered: refunds row 217: {DETAIL}"
    assert messages[7].text.startswith("/tool_results/main_task-t2-")

    # Isolation: the sub-agents were sent their task and nothing of the parent's.
    for model in sub_models:
        for request in model.requests:
            assert request[0].type == "system" and request[1].type == "human"
            assert not any("PARENT-ONLY-MARKER" in str(m.content) for m in request)
            assert not any(m.id and m.id.startswith("parent-") for m in request)

    # Artifacts merged into the parent's state: each once, first written first.
    assert final["artifacts"][0] == "/notes/config.md"
    assert sorted(final["artifacts"]) == [
        "/notes/config.md",
        "/notes/refunds.md",
        "/notes/settlements.md",
    ]

    # Progress streamed from all three sub-agents, each from started to finished, with
    # their own context events (the offload of each query result) under their threads.
    by_thread: dict[str, list[str]] = {}
    for event in progress:
        if event["event"] == "TaskProgress":
            assert event["data"]["parent_thread_id"] == "main"
            by_thread.setdefault(event["thread_id"], []).append(event["data"]["kind"])
    assert sorted(by_thread) == ["main/task-t1", "main/task-t2", "main/task-t3"]
    for kinds in by_thread.values():
        assert kinds[0] == "started" and kinds[-1] == "finished" and "model" in kinds
    offloads = {e["thread_id"] for e in progress if e["event"] == "ToolResultOffloaded"}
    assert offloads == {"main/task-t2", "main/task-t3"}

    # Threads and how they relate, from the workspace alone.
    assert [(r.parent_thread_id, r.thread_id, r.status) for r in task_records(ws)] == [
        ("main", "main/task-t1", "completed"),
        ("main", "main/task-t2", "completed"),
        ("main", "main/task-t3", "completed"),
    ]


def test_an_unknown_type_and_a_failing_sub_agent_leave_the_parent_running() -> None:
    ws = Workspace("memory://sub-scenario-faults")

    def broken(messages: Sequence[BaseMessage]) -> str:
        raise ValueError("model returned garbage")

    agents = SubAgents(
        ws,
        model=ScriptedChatModel(responses=[broken]),
        policy=ContextPolicy(max_input_tokens=16_000),
    )
    parent = ScriptedChatModel(
        responses=[
            tool_call("task", {"description": "x", "subagent_type": "nobody"}, call_id="a"),
            tool_call(
                "task", {"description": "y", "subagent_type": "general-purpose"}, call_id="b"
            ),
            "Carried on.",
        ]
    )
    agent = create_agent(parent, [], middleware=[SubAgentMiddleware(agents)])
    messages = agent.invoke({"messages": [("user", "go")]})["messages"]
    unknown, failed = (m for m in messages if isinstance(m, ToolMessage))
    assert unknown.status == "error" and unknown.text == (
        "Error: no sub-agent named 'nobody'; registered: 'general-purpose'. Call task again "
        "with one of these as subagent_type."
    )
    assert failed.status == "error"
    assert failed.text.startswith(
        "Error: sub-agent 'general-purpose' failed. What it did is in its transcript: /transcripts/"
    )
    assert "Why: ValueError: model returned garbage." in failed.text
    assert "(thread 'default/task-b')" in failed.text
    assert messages[-1].content == "Carried on."
