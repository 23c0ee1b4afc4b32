"""Reading offloaded files back never makes another copy, at the window the agent runs in.

The agent's recovery tools page at a share of its window (12,000 tokens at a 60k window),
not at the tools' default 25,000: a clipped ``read_file`` view is the same text again only
at that budget. Compaction repeats views with the tools the agent is offered, so clearing
them saves nothing new (issue 22: at a 60k window all 10 clipped views were saved again).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import tool

from ctxfs import (
    ContextEvent,
    ContextPolicy,
    ToolResultCleared,
    ToolResultOffloaded,
    Workspace,
    pointer_of,
    resolve_pointers,
)
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.testing import ScriptedChatModel, tool_call
from ctxfs.tools import tool_functions

LINES = 24_000


@tool
def export_table() -> str:
    """Returns the whole table (very large)."""
    return "\n".join(
        f"row {n:05d} | status=ok | owner=team-{n % 17} | latency={n % 997}" for n in range(LINES)
    )


def _reader(page: int) -> Callable[[Sequence[BaseMessage]], AIMessage]:
    def reply(messages: Sequence[BaseMessage]) -> AIMessage:
        for message in messages:
            held = pointer_of(message)
            if held is not None and held.kind in ("result", "cleared"):
                args = {"file_path": held.path, "offset": page * 2_000}
                return tool_call("read_file", args)
        raise AssertionError("no offloaded result to read back")

    return reply


def test_clipped_views_of_offloaded_files_make_no_new_copies_at_a_60k_window() -> None:
    workspace = Workspace("memory://reread-60k")
    events: list[ContextEvent] = []
    middleware = ContextMiddleware(
        workspace, ContextPolicy(max_input_tokens=60_000), on_event=lambda e, _: events.append(e)
    )
    views = 10
    model = ScriptedChatModel(
        responses=[tool_call("export_table"), *(_reader(k) for k in range(views)), "Done."]
    )
    agent = create_agent(model, [export_table], middleware=[middleware])
    out = agent.invoke({"messages": [("user", "go through the table")]})

    offloaded = [e for e in events if isinstance(e, ToolResultOffloaded)]
    assert [e.tool_name for e in offloaded] == ["export_table"]
    # every view was clipped at the agent's budget, which is not the tools' default
    calls = {c["id"]: c["args"] for m in out["messages"] for c in getattr(m, "tool_calls", [])}
    default = {f.name: f for f in tool_functions(workspace)}["read_file"]
    views_seen = [
        m for m in resolve_pointers(out["messages"], workspace) if isinstance(m, ToolMessage)
    ][1:]
    assert len(views_seen) == views
    for view in views_seen:
        assert "clipped" in view.text or "offset=" in view.text  # a page, cut to the budget
        assert default(**calls[view.tool_call_id]) != view.text  # not the default budget's
    cleared = [e for e in events if isinstance(e, ToolResultCleared)]
    rereads = [e for e in cleared if e.kind == "reread"]
    assert len(rereads) >= views // 2, cleared
    assert all(e.kind != "saved" for e in cleared), cleared
    # not one new copy: /tool_results/ holds the offloaded export alone
    saved = [
        p for p in workspace.glob("/tool_results/**").paths if workspace.info(p).type == "file"
    ]
    assert saved == [offloaded[0].path]
    # each cleared view reads back as the text the model saw when it came
    first_seen = {
        m.tool_call_id: m.text
        for request in model.requests
        for m in request
        if isinstance(m, ToolMessage) and m.name == "read_file" and pointer_of(m) is None
    }
    for view in views_seen:
        assert first_seen[view.tool_call_id] == view.text
