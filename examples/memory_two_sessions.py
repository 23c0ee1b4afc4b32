"""Long-term memory across two sessions: learned facts injected, an old detail recalled.

Session 1: the user says where the staging database is, and the agent reads the export job's
long log to find why it failed. The context is small, so ctxfs archives the old part of the
conversation to ``/transcripts/``. When the session ends, the memory learns from it (a
model extracts facts with a confidence; the scripted one here) and writes
``/memories/alice/memory.json``.

Session 2, a new conversation (and, here, new objects, as in a new process): the system
prompt carries a ``<memory>`` block (the user's context and the facts) and a ``<recalled>``
block: what retrieval found in session 1's archived transcript about the new request.

Run it offline::

    python examples/memory_two_sessions.py [--workspace ./ws]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from langchain.agents import create_agent
from langchain_core.messages import BaseMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from ctxfs import ContextPolicy, Workspace
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.memory import LongTermMemory, MemoryMiddleware
from ctxfs.testing import ScriptedChatModel, tool_call

DETAIL = "nightly export failed: disk quota exceeded on volume vol-7731"


@tool
def read_log(part: int) -> str:
    """Reads one part of the nightly export job's log."""
    lines = [f"{part:02d}:{n:03d} export step ok, rows copied" for n in range(60)]
    return "\n".join([*lines, DETAIL] if part == 1 else lines)


def extraction_model() -> ScriptedChatModel:
    """What a small extraction model would answer about session 1."""
    update = {
        "user": {"work": "Runs the data platform's nightly jobs."},
        "new_facts": [
            {
                "content": "The staging database listens on port 6543.",
                "category": "knowledge",
                "confidence": 0.9,
                "tags": ["infra"],
            },
            {"content": "May prefer short answers.", "category": "preference", "confidence": 0.5},
        ],
    }
    return ScriptedChatModel(responses=[tool_call("MemoryUpdate", update)])


def session(
    workspace: Workspace, thread: str, request: str, replies: list[object]
) -> tuple[str, list[BaseMessage]]:
    """One session: a fresh memory and agent on the workspace; returns the answer and the
    first request the model was sent."""
    memory = LongTermMemory(workspace, ("alice",), model=extraction_model())
    policy = ContextPolicy(
        max_input_tokens=4_000,
        tool_results={"threshold": {"tokens": 3_000}},
        clearing={"enabled": False},
        summarization={"trigger": {"fraction": 0.6}, "keep": {"messages": 2}},
    )
    model = ScriptedChatModel(responses=replies)  # type: ignore[arg-type]
    agent = create_agent(
        model,
        [read_log],
        system_prompt="You are the ops assistant.",
        # memory first: the context engine then counts the memory in the request's budget
        middleware=[MemoryMiddleware(memory), ContextMiddleware(workspace, policy, tools=False)],
        checkpointer=InMemorySaver(),
    )
    result = agent.invoke(
        {"messages": [{"role": "user", "content": request}]},
        {"configurable": {"thread_id": thread}},
    )
    memory.flush()  # the session ends: learn from what is still waiting for its debounce
    return str(result["messages"][-1].content), model.requests[0]


def main(argv: Sequence[str] | None = None) -> str:
    """Runs both sessions; returns the system prompt of session 2's first model call."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", default="memory://memory-example", help="folder or URL")
    args = parser.parse_args(argv)
    workspace = Workspace(args.workspace)

    answer, _ = session(
        workspace,
        "session-1",
        "Our staging database is on port 6543. Why did the nightly export fail?",
        [*(tool_call("read_log", {"part": n}) for n in range(1, 6)), "Volume vol-7731 is full."],
    )
    print(f"Session 1 answer: {answer}")
    print(f"Archived: {', '.join(workspace.glob('*.md', '/transcripts').paths)}")
    print(workspace.read_text("/memories/alice/memory.md"))

    answer, request = session(
        workspace,
        "session-2",
        "Re-run the nightly export on the staging database.",
        ["Re-running it against port 6543, after freeing space on vol-7731."],
    )
    system = str(request[0].content)
    print(f"Session 2 system prompt:\n{system}\n")
    print(f"Session 2 answer: {answer}")
    return system


if __name__ == "__main__":
    main()
