"""Staying on task through create_agent: the todo list and the task statement stay in view,
the model can ask for a compaction and search what was archived."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import TodoListMiddleware
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from ctxfs import ContextEvent, ContextPolicy, Summarized, Workspace, is_pinned, is_summary
from ctxfs._summary._pins import in_view_kind
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.testing import ScriptedChatModel, tool_call

TASK = "Read the whole manual and list every rule about ledger batches."
TODOS = [
    {"content": "read every page of the manual", "status": "in_progress"},
    {"content": "list the ledger rules", "status": "pending"},
]


@tool
def fetch_page(n: int) -> str:
    """Returns page n of the manual (about 700 tokens)."""
    return "\n".join(
        f"page {n} line {i}: settle batches before the ledger closes" for i in range(60)
    )


def _agent(
    responses: list[Any],
    ws: Workspace,
    events: list[ContextEvent],
    policy: ContextPolicy | None = None,
) -> tuple[Any, Any]:
    policy = policy or ContextPolicy(
        max_input_tokens=8_000,
        clearing={"enabled": False},
        summarization={"trigger": {"fraction": 0.8}, "keep": {"fraction": 0.3}},
    )
    model = ScriptedChatModel(responses=responses)
    agent = create_agent(
        model,
        [fetch_page],
        middleware=[
            TodoListMiddleware(),
            ContextMiddleware(ws, policy, on_event=lambda e, _: events.append(e)),
        ],
        checkpointer=InMemorySaver(),
    )
    return agent, model


def test_the_plan_and_the_task_survive_every_summary() -> None:
    ws, events = Workspace("memory://on-task-plan"), []
    pages = [tool_call("fetch_page", {"n": n}) for n in range(14)]
    agent, model = _agent([tool_call("write_todos", {"todos": TODOS}), *pages, "done"], ws, events)
    config: Any = {"configurable": {"thread_id": "p1"}}
    out = agent.invoke({"messages": [("user", TASK)]}, config)
    assert out["messages"][-1].text == "done"
    assert any(isinstance(e, Summarized) for e in events)
    assert all(TASK in "\n".join(m.text for m in request) for request in model.requests)
    after = [r for r in model.requests if any(is_summary(m) for m in r)]
    assert after
    for request in after:
        plans = [m for m in request if in_view_kind(m) == "in_view" and "<plan>" in m.text]
        assert len(plans) == 1
        assert "[in_progress] read every page of the manual" in plans[0].text


def test_the_model_can_compact_on_request_and_search_the_archive() -> None:
    ws, events = Workspace("memory://on-task-compact"), []
    pages = [tool_call("fetch_page", {"n": n}) for n in range(8)]
    script = [
        *pages,
        tool_call("compact_conversation", {}),
        tool_call("history_search", {"query": "page 0 line 7 ledger"}),
        "done",
    ]
    # a window no summary is needed in before the model asks for one; clearing spares the
    # eight pages, so the summary archives them as they were read
    roomy = ContextPolicy(
        max_input_tokens=100_000,
        summarization={"keep": {"tokens": 2_000}},
        clearing={"keep": {"results": 8}},
    )
    agent, model = _agent(script, ws, events, roomy)
    config: Any = {"configurable": {"thread_id": "p2"}}
    out = agent.invoke({"messages": [("user", TASK)]}, config)
    answers = {m.name: m.text for m in out["messages"] if isinstance(m, ToolMessage)}
    assert answers["compact_conversation"].startswith("Compacted:")
    assert sum(isinstance(e, Summarized) for e in events) == 1
    assert is_summary(out["messages"][0])
    assert any(is_pinned(m) and m.text == TASK for m in out["messages"])
    assert "page 0 line 7: settle batches" in answers["history_search"]
    # the request after the compaction: the system prompt, the summary, the task right after
    request = model.requests[len(pages) + 1]
    assert is_summary(request[1]) and request[2].text == TASK


def test_compact_on_request_refuses_when_nothing_is_worth_it() -> None:
    ws, events = Workspace("memory://on-task-refuse"), []
    agent, _ = _agent([tool_call("compact_conversation", {}), "done"], ws, events)
    out = agent.invoke({"messages": [("user", TASK)]}, {"configurable": {"thread_id": "p3"}})
    answer = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert answer.text.startswith("Error: nothing worth compacting now")
    assert not any(isinstance(e, Summarized) for e in events)


@pytest.mark.parametrize("name", ["compact_conversation"])
def test_a_user_tool_with_the_same_name_is_not_taken_for_ctxfs(name: str) -> None:
    @tool(name)
    def own() -> str:
        """The user's own tool."""
        return "the user's tool ran"

    ws = Workspace("memory://on-task-own")
    model = ScriptedChatModel(responses=[tool_call(name, {}), "done"])
    agent = create_agent(
        model,
        [own],
        middleware=[
            ContextMiddleware(ws, ContextPolicy(max_input_tokens=8_000), on_tool_conflict="keep")
        ],
        checkpointer=InMemorySaver(),
    )
    out = agent.invoke({"messages": [("user", TASK)]}, {"configurable": {"thread_id": "p4"}})
    answer = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert answer.text == "the user's tool ran"
