"""A checkpointed parent delegating to sub-agents, run in a subprocess by
test_subagents_crash.py and killed where it is told.

Usage: python _crash_subagents.py WORKSPACE_DIR SQLITE_PATH

With ``CTXFS_KILL=<text>:<n>`` in the environment, the process SIGKILLs itself right after
the n-th workspace write whose path contains the text: ``/tool_results/`` (a sub-agent's
offload), ``segment-0001.md`` (a sub-task's transcript), ``task.json`` (a sub-task's record:
written when it starts and when it ends), ``/notes/`` (a sub-agent's write_file).
Run again without it, the parent resumes from the SQLite checkpoint and finishes; it prints
its final messages and artifacts as JSON.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, messages_to_dict
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from ctxfs import ContextPolicy, Workspace
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.subagents import SubAgentMiddleware, SubAgents
from ctxfs.testing import ScriptedChatModel, tool_call

CONFIG: Any = {"configurable": {"thread_id": "crash"}, "recursion_limit": 100}


@tool
def fetch_page(topic: str, n: int) -> str:
    """Returns page n about a topic (about 1,500 tokens)."""
    return "\n".join(f"{topic} page {n} line {i}: the ledger closes at 18:00" for i in range(120))


def _topic(messages: Sequence[BaseMessage]) -> str:
    return str(messages[1].content).split()[1]  # "Study <topic> ..."


def _sub_script() -> list[Any]:
    def page(n: int) -> Any:
        return lambda messages: tool_call("fetch_page", {"topic": _topic(messages), "n": n})

    def note(messages: Sequence[BaseMessage]) -> AIMessage:
        topic = _topic(messages)
        return tool_call("write_file", {"file_path": f"/notes/{topic}.md", "content": topic})

    def report(messages: Sequence[BaseMessage]) -> str:
        return f"{_topic(messages)}: 2 pages read; the ledger closes at 18:00."

    return [page(0), page(1), note, report]


def _task(topic: str, call_id: str) -> dict[str, Any]:
    return {
        "name": "task",
        "id": call_id,
        "type": "tool_call",
        "args": {"description": f"Study {topic} and report.", "subagent_type": "general-purpose"},
    }


def _parent_script() -> list[Any]:
    return [
        AIMessage(content="", tool_calls=[_task("billing", "t1")]),
        AIMessage(content="", tool_calls=[_task("refunds", "t2"), _task("payouts", "t3")]),
        "All three topics studied.",
    ]


def _install_kill_switch() -> None:
    spec = os.environ.get("CTXFS_KILL")
    if not spec:
        return
    text, _, count = spec.rpartition(":")
    remaining = [int(count)]
    original = Workspace.write_bytes

    def write_bytes(self: Workspace, path: str, data: bytes, **kwargs: Any) -> Any:
        info = original(self, path, data, **kwargs)
        if text in path:
            remaining[0] -= 1
            if remaining[0] == 0:
                os.kill(os.getpid(), signal.SIGKILL)
        return info

    Workspace.write_bytes = write_bytes  # type: ignore[method-assign]


def main(workspace_dir: str, db_path: str) -> None:
    _install_kill_switch()
    workspace = Workspace(workspace_dir)
    policy = ContextPolicy(max_input_tokens=8_000, tool_results={"threshold": {"tokens": 500}})
    agents = SubAgents(
        workspace,
        model=ScriptedChatModel(script_id="sub", responses=_sub_script()),
        policy=policy,
        tools=[fetch_page],
    )
    connection = sqlite3.connect(db_path, check_same_thread=False)
    agent = create_agent(
        ScriptedChatModel(script_id="parent", responses=_parent_script()),
        [],
        middleware=[ContextMiddleware(workspace, policy), SubAgentMiddleware(agents)],
        checkpointer=SqliteSaver(connection),
    )
    state = agent.get_state(CONFIG)
    if not state.values:
        agent.invoke({"messages": [("user", "study the topics")]}, CONFIG, durability="sync")
    elif state.next:
        agent.invoke(None, CONFIG, durability="sync")
    values = agent.get_state(CONFIG).values
    print(
        json.dumps(
            {
                "messages": messages_to_dict(values["messages"]),
                "artifacts": values.get("artifacts", []),
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
