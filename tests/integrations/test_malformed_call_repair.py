"""A turn after a tool call with malformed arguments, when that turn also compacts.

Found in an adversarial pass: ``create_agent`` answers a call the model botched (an
``invalid_tool_calls`` entry with no result) with an error result of its own, and its model
node then writes the whole state again, ``[RemoveMessage(REMOVE_ALL), *repaired, *answer]``.
ctxfs wrote its compaction into the answer as replacements and ``RemoveMessage``s by id;
after a remove-all the reducer takes them as they are, so the state came to hold
``RemoveMessage`` objects, the archived messages again, and duplicate ids, and the next
compaction archived all of that. The compaction is now written as a rebuild of its own, with
LangChain's error result after its call, so the state is what ctxfs compacted.
"""

from __future__ import annotations

import asyncio

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from ctxfs import ContextPolicy, Workspace, is_pinned, is_summary, restore_history
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.testing import ScriptedChatModel, tool_call


@tool
def bash(command: str) -> str:
    """Runs a command."""
    return f"output of {command}\n" * 300


def _script() -> list[AIMessage | str]:
    replies: list[AIMessage | str] = []
    for turn in range(6):
        replies.append(tool_call("bash", {"command": f"step {turn}"}))
        if turn in (2, 4):
            botched = {
                "name": "bash",
                "args": '{"command": "unterminated',
                "id": f"bad{turn}",
                "error": "not JSON",
                "type": "invalid_tool_call",
            }
            replies.append(
                AIMessage(
                    "",
                    tool_calls=[{"name": "bash", "args": {"command": "ok"}, "id": f"ok{turn}"}],
                    invalid_tool_calls=[botched],
                )
            )
    return [*replies, "done"]


def _pairs_are_whole(messages: list[BaseMessage]) -> None:
    calls = [
        c["id"]
        for m in messages
        if isinstance(m, AIMessage)
        for c in (*m.tool_calls, *m.invalid_tool_calls)
    ]
    answered = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
    assert set(answered) <= set(calls)


@pytest.mark.parametrize("run", ["sync", "async"])
def test_compacting_on_the_turn_langchain_repairs_a_botched_call_keeps_the_state_clean(
    run: str,
) -> None:
    workspace = Workspace(f"memory://repair-{run}")
    middleware = ContextMiddleware(workspace, ContextPolicy(max_input_tokens=3_000))
    agent = create_agent(
        ScriptedChatModel(responses=_script()),
        [bash],
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 200}
    start = {"messages": [HumanMessage("go", id="u0")]}
    if run == "sync":
        agent.invoke(start, config)
    else:
        asyncio.run(agent.ainvoke(start, config))
    everything: dict[str, BaseMessage] = {}
    for snapshot in agent.get_state_history(config):
        for message in snapshot.values.get("messages", []):
            assert message.type != "remove", "a RemoveMessage was written into the state"
            if not is_summary(message) and not is_pinned(message):
                everything.setdefault(str(message.id), message)
    final = agent.get_state(config).values["messages"]
    ids = [m.id for m in final]
    assert len(ids) == len(set(ids)), ids
    _pairs_are_whole(final)
    restored = restore_history(final, workspace, thread_id="t")
    assert all(m.type != "remove" for m in restored)
    restored_ids = [m.id for m in restored]
    assert len(restored_ids) == len(set(restored_ids)), "a message was archived twice"
    # every botched call got LangChain's error result, and it is in the history once
    errors = [m for m in restored if isinstance(m, ToolMessage) and m.status == "error"]
    assert sorted(m.tool_call_id for m in errors) == ["bad2", "bad4"]
    assert set(everything) <= set(restored_ids)
