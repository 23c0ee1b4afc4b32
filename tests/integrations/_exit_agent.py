"""One user turn of a checkpointed agent with ``durability="exit"``, run in a subprocess by
test_exit_rerun.py, killed where it is told.

Usage: python _exit_agent.py WORKSPACE_DIR SQLITE_PATH TURN

The turn asks the agent to read three pages; the model (deterministic, from the state it
sees) calls ``fetch_page`` three times, then answers. With ``durability="exit"`` nothing of
the turn reaches the checkpoint until it ends, so a turn killed mid-way (``CTXFS_KILL=
<folder>:<n>``: SIGKILL right after the n-th file written under that workspace folder) is
re-run from the previous turn's state: the same requests again, with new message ids, while
the archive already holds what the killed run committed. Prints one JSON line: the kinds of
the failure events the middleware reported and the largest request the model received.
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
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from ctxfs import (
    ArchiveFailed,
    ContextEvent,
    ContextOverBudget,
    ContextPolicy,
    TiktokenCounter,
    Workspace,
)
from ctxfs.integrations.langchain import ContextMiddleware

CONFIG: Any = {"configurable": {"thread_id": "exit"}, "recursion_limit": 100}
WINDOW = 6_000
POLICY = ContextPolicy(
    max_input_tokens=WINDOW,
    tool_results={"threshold": {"tokens": 2_000}},
    clearing={"enabled": False},
    summarization={"trigger": {"fraction": 0.6}, "keep": {"fraction": 0.2}},
)
COUNTER = TiktokenCounter()
LARGEST = [0]


@tool
def fetch_page(n: int) -> str:
    """Returns page n of the manual (about 1,400 tokens); its last line names the process, so
    a re-run turn reads pages that differ from the killed run's: its history forks."""
    lines = [f"page {n} line {i}: settle batches before the ledger closes" for i in range(120)]
    return "\n".join([*lines, f"read by process {os.getpid()}"])


class PageReader(BaseChatModel):
    """Reads the three pages the latest user turn asks for, then says so: each reply is
    decided by the last message it is sent, so a re-run turn asks for the same things."""

    @property
    def _llm_type(self) -> str:
        return "page-reader"

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        LARGEST[0] = max(LARGEST[0], COUNTER.count_messages(messages))
        last = messages[-1]  # the turn's request, or the page just read
        if isinstance(last, ToolMessage):
            done = int(str(last.content).split()[1])
            turn, page = done // 3, done + 1
        else:
            turn = int(str(last.content).split()[1].rstrip(":"))
            page = 3 * turn
        if page < 3 * turn + 3:
            reply = AIMessage(
                "",
                tool_calls=[{"name": "fetch_page", "args": {"n": page}, "id": f"call-{page}"}],
                id=f"ai-{page}",
            )
        else:
            reply = AIMessage(f"turn {turn}: pages read", id=f"ai-{turn}-done")
        return ChatResult(generations=[ChatGeneration(message=reply)])


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


def main(workspace_dir: str, db_path: str, turn: int) -> None:
    _install_kill_switch()
    failures: list[str] = []

    def on_event(event: ContextEvent, thread: str) -> None:
        if isinstance(event, ArchiveFailed | ContextOverBudget):
            failures.append(f"{type(event).__name__}: {event}")

    connection = sqlite3.connect(db_path, check_same_thread=False)
    agent = create_agent(
        PageReader(),
        [fetch_page],
        middleware=[ContextMiddleware(Workspace(workspace_dir), POLICY, on_event=on_event)],
        checkpointer=SqliteSaver(connection),
    )
    human = HumanMessage(f"turn {turn}: read the next three pages", id=f"turn-{turn}")
    agent.invoke({"messages": [human]}, CONFIG, durability="exit")
    print(json.dumps({"failures": failures, "largest": LARGEST[0]}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
