"""ctxfs inside ``create_deep_agent``: one workspace for Deep Agents' tools and ctxfs's steps.

The issue's scenario: with ctxfs's middleware in a deep agent, ``write_file`` then ``delete``
then ``ls`` disagreed (the tools acted on two stores). With :class:`WorkspaceBackend` they
agree, on every storage; and a middleware whose tools would hide Deep Agents' own says so.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from deepagents import create_deep_agent
from langchain.agents.middleware import TodoListMiddleware
from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver

from ctxfs import ContextEvent, ContextPolicy, Summarized, Workspace, is_summary, pointer_of
from ctxfs._summary._pins import in_view_kind, render_plan
from ctxfs.integrations.deepagents import WorkspaceBackend
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.testing import ScriptedChatModel, tool_call

CONFIG: Any = {"configurable": {"thread_id": "deep"}}
POLICY = ContextPolicy(max_input_tokens=32_000, tool_results={"threshold": {"tokens": 500}})


def _tool_messages(out: dict[str, Any]) -> dict[str, str]:
    return {m.name or "": m.text for m in out["messages"] if isinstance(m, ToolMessage)}


def _deep_agent(
    workspace: Workspace, script: list[Any], tools: list[BaseTool] | None = None
) -> Any:
    return create_deep_agent(
        ScriptedChatModel(responses=script),
        tools or [],
        backend=WorkspaceBackend(workspace),
        middleware=[ContextMiddleware(workspace, POLICY, tools=False)],
        checkpointer=InMemorySaver(),
    )


def test_write_delete_ls_agree(workspace: Workspace) -> None:
    agent = _deep_agent(
        workspace,
        [
            tool_call("write_file", {"file_path": "/notes/a.md", "content": "first\n"}),
            tool_call("write_file", {"file_path": "/notes/b.md", "content": "second\n"}),
            tool_call("delete", {"file_path": "/notes/a.md"}),
            tool_call("ls", {"path": "/notes"}),
            "Done.",
        ],
    )
    out = agent.invoke({"messages": [{"role": "user", "content": "tidy the notes"}]}, CONFIG)
    results = [m.text for m in out["messages"] if isinstance(m, ToolMessage)]
    assert results == [
        "Updated file /notes/a.md",
        "Updated file /notes/b.md",
        "Deleted /notes/a.md",
        "['/notes/b.md']",
    ]
    assert workspace.glob("**/*").paths == ("/notes/b.md",)
    assert workspace.read_text("/notes/b.md") == "second\n"


@tool
def export_audit_log() -> str:
    """Exports the audit log of the account (long)."""
    return "\n".join(f"event={n:05d} actor=user{n % 17} action=login ok" for n in range(600))


def _read_offloaded(messages: list[BaseMessage]) -> Any:
    """Reads back the file ctxfs saved the audit log to, with Deep Agents' read_file."""
    held = pointer_of(next(m for m in messages if isinstance(m, ToolMessage)))
    assert held is not None
    return tool_call("read_file", {"file_path": held.path, "offset": 41, "limit": 2})


def test_deep_agents_tools_read_what_ctxfs_offloaded(workspace: Workspace) -> None:
    agent = _deep_agent(
        workspace,
        [
            tool_call("export_audit_log"),
            _read_offloaded,
            tool_call("write_file", {"file_path": "/tool_results/x.txt", "content": "forged"}),
            "Line 42 is event 41.",
        ],
        tools=[export_audit_log],
    )
    out = agent.invoke({"messages": [{"role": "user", "content": "what is event 41?"}]}, CONFIG)
    pointer, read, refused = (m for m in out["messages"] if isinstance(m, ToolMessage))
    assert pointer.text.startswith("[ctxfs: tool result offloaded]")
    assert "event=00041 actor=user7 action=login ok" in read.text
    assert "event=00043" not in read.text  # the window asked for, not the whole file
    assert "read-only area /tool_results/" in refused.text
    (saved,) = workspace.glob("**/*.txt", "/tool_results").paths
    assert workspace.read_text(saved) == export_audit_log.invoke({})


def test_the_issue_scenario_is_refused_with_the_way_out() -> None:
    workspace = Workspace("memory://deep-clash")
    agent = create_deep_agent(
        ScriptedChatModel(responses=["never reached"]),
        middleware=[ContextMiddleware(workspace, POLICY)],
    )
    with pytest.raises(ValueError) as refused:
        agent.invoke({"messages": [{"role": "user", "content": "hi"}]})
    message = str(refused.value)
    assert message.startswith(
        "ContextMiddleware's tools edit_file, glob, grep, ls, read_file, write_file have the "
        "names of other tools of this agent"
    )
    assert "on_tool_conflict='keep'" in message and "on_tool_conflict='replace'" in message
    assert "backend=ctxfs.integrations.deepagents.WorkspaceBackend(workspace)" in message


def _bound_ls(model: ScriptedChatModel) -> Any:
    (ls,) = (t for t in model.request_tools[0] if getattr(t, "name", None) == "ls")
    return ls


@pytest.mark.parametrize("choice", ["keep", "replace"])
def test_on_tool_conflict_chooses_whose_tool_runs(choice: Any) -> None:
    workspace = Workspace("memory://deep-choice")
    workspace.write_text("/notes/a.md", "a")
    middleware = ContextMiddleware(workspace, POLICY, on_tool_conflict=choice)
    model = ScriptedChatModel(responses=[tool_call("ls", {"path": "/notes"}), "Listed."])
    agent = create_deep_agent(model, backend=WorkspaceBackend(workspace), middleware=[middleware])
    out = agent.invoke({"messages": [{"role": "user", "content": "list the notes"}]})
    names = [getattr(t, "name", None) for t in model.request_tools[0]]
    assert names.count("ls") == 1 and names.count("read_file") == 1
    ours = dict(zip(names, model.request_tools[0], strict=True))["ls"] in middleware.own_tools
    assert ours is (choice == "replace")
    listing = _tool_messages(out)["ls"]
    # Deep Agents' ls prints a Python list of paths; ctxfs's prints one path per line.
    assert listing == ("['/notes/a.md']" if choice == "keep" else "/notes/a.md")


def test_a_replacing_tool_runs_in_an_async_agent() -> None:
    workspace = Workspace("memory://deep-replace-async")
    workspace.write_text("/notes/a.md", "a")
    middleware = ContextMiddleware(workspace, POLICY, on_tool_conflict="replace")
    model = ScriptedChatModel(responses=[tool_call("ls", {"path": "/notes"}), "Listed."])
    agent = create_deep_agent(model, backend=WorkspaceBackend(workspace), middleware=[middleware])
    out = asyncio.run(agent.ainvoke({"messages": [{"role": "user", "content": "list the notes"}]}))
    assert _tool_messages(out)["ls"] == "/notes/a.md"


def test_an_async_deep_agent_uses_the_backend(workspace: Workspace) -> None:
    agent = _deep_agent(
        workspace,
        [
            tool_call("write_file", {"file_path": "/plan.md", "content": "- step one\n"}),
            tool_call(
                "edit_file", {"file_path": "/plan.md", "old_string": "one", "new_string": "1"}
            ),
            tool_call("grep", {"pattern": "step 1"}),
            "Planned.",
        ],
    )
    out = asyncio.run(agent.ainvoke({"messages": [{"role": "user", "content": "plan"}]}, CONFIG))
    assert _tool_messages(out)["grep"] == "/plan.md"
    assert workspace.read_text("/plan.md") == "- step 1\n"


@tool
def fetch_page(n: int) -> str:
    """Returns page n of the manual (about 700 tokens)."""
    return "\n".join(
        f"page {n} line {i}: settle batches before the ledger closes" for i in range(60)
    )


def test_deep_agents_grep_searches_what_ctxfs_archived() -> None:
    workspace = Workspace("memory://deep-transcripts")
    events: list[ContextEvent] = []
    policy = ContextPolicy(
        max_input_tokens=16_000,
        clearing={"enabled": False},  # so that the window is kept by summaries
        summarization={"trigger": {"fraction": 0.8}, "keep": {"fraction": 0.3}},
    )
    search = {"pattern": "page 0 line 7:", "path": "/transcripts"}
    model = ScriptedChatModel(
        responses=[
            *(tool_call("fetch_page", {"n": n}) for n in range(14)),
            tool_call("grep", search),
            "Page 0 is in the transcript.",
        ]
    )
    middleware = ContextMiddleware(
        workspace, policy, tools=False, on_event=lambda event, _: events.append(event)
    )
    agent = create_deep_agent(
        model,
        [fetch_page],
        backend=WorkspaceBackend(workspace),
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    out = agent.invoke({"messages": [{"role": "user", "content": "read the manual"}]}, CONFIG)
    assert any(isinstance(event, Summarized) for event in events)
    # page 0 left the context; Deep Agents' grep finds it in ctxfs's transcript
    assert all("page 0 line 7:" not in m.text for m in out["messages"][:-2])
    found = _tool_messages(out)["grep"].splitlines()
    assert found and all(line.startswith("/transcripts/") for line in found)
    assert any(line.endswith(".md") for line in found)


def test_the_plan_after_each_summary_is_the_live_write_todos_state() -> None:
    """``write_todos`` keeps the list in the graph state; every summary puts it back as it is
    at that moment, never as the summary or an older list says. (This Deep Agents release
    offers ``write_todos`` in some harness profiles only; the agent here adds LangChain's
    ``TodoListMiddleware``, which those profiles use.)"""
    first = [{"content": "read the manual", "status": "in_progress"}]
    second = [
        {"content": "read the manual", "status": "completed"},
        {"content": "list the ledger rules", "status": "in_progress"},
    ]
    script: list[Any] = [tool_call("write_todos", {"todos": first})]
    script += [tool_call("fetch_page", {"n": n}) for n in range(8)]
    script += [tool_call("write_todos", {"todos": second})]
    script += [tool_call("fetch_page", {"n": n}) for n in range(8, 16)]
    model = ScriptedChatModel(responses=[*script, "done"])
    policy = ContextPolicy(
        max_input_tokens=16_000,
        clearing={"enabled": False},
        summarization={"trigger": {"fraction": 0.8}, "keep": {"fraction": 0.3}},
    )
    agent = create_deep_agent(
        model,
        [fetch_page],
        middleware=[
            TodoListMiddleware(),
            ContextMiddleware(Workspace("memory://deep-plan"), policy, tools=False),
        ],
        checkpointer=InMemorySaver(),
    )
    out = agent.invoke({"messages": [{"role": "user", "content": "list the rules"}]}, CONFIG)
    assert out["messages"][-1].text == "done"
    checked, summary = 0, ""
    for index, request in enumerate(model.requests):
        summaries = [m for m in request if is_summary(m)]
        if not summaries or summaries[0].text == summary:
            continue  # no new summary in this request: nothing was put back
        summary = summaries[0].text
        calls = [m.tool_calls[0] for m in script[:index]]
        written = [c["args"]["todos"] for c in calls if c["name"] == "write_todos"]
        plans = [m.text for m in request if in_view_kind(m) == "in_view" and "<plan>" in m.text]
        assert len(plans) == 1 and render_plan(written[-1]) in plans[0]
        checked += 1
    assert checked >= 2  # summaries before and after the plan changed
