"""A checkpointed agent run in a subprocess by test_crash_resume.py, killed where it is told.

Usage: python _crash_agent.py WORKSPACE_DIR SQLITE_PATH

With ``CTXFS_KILL=<folder>:<n>`` in the environment, the process SIGKILLs itself right after
the n-th file written under that workspace folder (``/tool_results``: during an offload;
``/transcripts``: during a summarization; ``/notes``: inside a tool call) — after the write,
before its result reaches the checkpoint. Run again without it, the agent resumes from the
SQLite checkpoint and finishes; it prints the final messages as JSON.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import messages_to_dict
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from ctxfs import ContextPolicy, Workspace
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.testing import ScriptedChatModel, tool_call

CONFIG: Any = {"configurable": {"thread_id": "crash"}, "recursion_limit": 200}
PAGES = 10


@tool
def fetch_page(n: int) -> str:
    """Returns page n of the manual (about 700 tokens)."""
    return "\n".join(
        f"page {n} line {i}: settle batches before the ledger closes" for i in range(60)
    )


@tool
def big_report(n: int) -> str:
    """Returns report n (about 3,000 tokens)."""
    return "\n".join(f"report {n} row {i} value={i * n % 97}" for i in range(300))


def notes(upto: int) -> str:
    """The notes file after page ``upto``."""
    return "".join(f"- page {n} read\n" for n in range(upto + 1))


def script() -> list[Any]:
    replies: list[Any] = []
    for n in range(PAGES):
        replies.append(tool_call("fetch_page", {"n": n}))
        if n % 3 == 0:
            replies.append(tool_call("big_report", {"n": n}))
        replies.append(tool_call("write_file", {"file_path": "/notes/log.md", "content": notes(n)}))
    replies.append("All pages read; notes in /notes/log.md.")
    return replies


def _install_kill_switch() -> None:
    spec = os.environ.get("CTXFS_KILL")
    if not spec:
        return
    folder, _, count = spec.rpartition(":")
    remaining = [int(count)]
    original = Workspace.write_bytes

    def write_bytes(self: Workspace, path: str, data: bytes, **kwargs: Any) -> Any:
        info = original(self, path, data, **kwargs)
        if path.startswith(folder + "/"):
            remaining[0] -= 1
            if remaining[0] == 0:
                os.kill(os.getpid(), signal.SIGKILL)
        return info

    Workspace.write_bytes = write_bytes  # type: ignore[method-assign]


def main(workspace_dir: str, db_path: str) -> None:
    _install_kill_switch()
    workspace = Workspace(workspace_dir)
    policy = ContextPolicy(
        max_input_tokens=6_000,
        tool_results={"threshold": {"tokens": 1_000}},
        summarization={"trigger": {"fraction": 0.8}, "keep": {"fraction": 0.3}},
    )
    connection = sqlite3.connect(db_path, check_same_thread=False)
    agent = create_agent(
        ScriptedChatModel(responses=script()),
        [fetch_page, big_report],
        middleware=[ContextMiddleware(workspace, policy)],
        checkpointer=SqliteSaver(connection),
    )
    state = agent.get_state(CONFIG)
    if not state.values:
        agent.invoke({"messages": [("user", "read the manual")]}, CONFIG, durability="sync")
    elif state.next:
        agent.invoke(None, CONFIG, durability="sync")
    final = agent.get_state(CONFIG).values["messages"]
    print(json.dumps(messages_to_dict(final)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
