"""Sub-agents: a parent hands two explorations to sub-agents that run in parallel, in their
own context windows, over the shared workspace; then it looks up a detail one of them saw.

- ``SubAgents`` is the registry (``general-purpose`` plus the ``auditor`` registered here);
- ``SubAgentMiddleware`` gives the ``create_agent`` parent the ``task`` tool;
- ``ContextMiddleware`` keeps the parent (and offloads what it reads) as usual.

The parent's context receives the two reports only. The sub-agents' large tool results were
offloaded under their own threads, so the parent greps them when it needs a detail. The
sub-agents' steps arrive on the parent's custom stream.

Run it offline (scripted models)::

    python examples/parallel_subagents.py [--workspace DIR]

then ``ctxfs transcripts DIR`` shows the parent and sub-agent threads.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from ctxfs import ContextPolicy, Workspace
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.subagents import SubAgent, SubAgentMiddleware, SubAgents
from ctxfs.testing import ScriptedChatModel, tool_call


@tool
def ledger(region: str) -> str:
    """Returns a region's ledger for the day, one payment per line (long)."""
    lines = [f"{region} payment {n:05d}: settled {n % 97 + 3} EUR" for n in range(600)]
    lines[412] = f"{region} payment 00412: REFUNDED TWICE, 75 EUR, ticket OPS-2291"
    return "\n".join(lines) if region == "north" else "\n".join(lines[:412] + lines[413:])


def _region(messages: Sequence[BaseMessage]) -> str:
    return "north" if "north" in str(messages[1].content) else "south"  # [system, task, ...]


def _auditor_script() -> list[Any]:
    def read(messages: Sequence[BaseMessage]) -> AIMessage:
        return tool_call("ledger", {"region": _region(messages)})

    def note(messages: Sequence[BaseMessage]) -> AIMessage:
        region = _region(messages)
        content = f"# {region}\n\nAudited 600 payments.\n"
        return tool_call("write_file", {"file_path": f"/audit/{region}.md", "content": content})

    def report(messages: Sequence[BaseMessage]) -> str:
        region = _region(messages)
        finding = "one payment was refunded twice" if region == "north" else "all in order"
        return f"{region}: 600 payments audited, {finding}. Notes: /audit/{region}.md."

    return [read, note, report]


def _parent_script() -> list[Any]:
    def task(region: str, call_id: str) -> dict[str, Any]:
        return {
            "name": "task",
            "id": call_id,
            "type": "tool_call",
            "args": {
                "description": f"Audit the {region} ledger; report anomalies.",
                "subagent_type": "auditor",
            },
        }

    def look_up(messages: Sequence[BaseMessage]) -> str:
        hit = str(messages[-1].content).splitlines()[0]
        ticket = hit.rsplit("ticket ", 1)[-1]
        return f"North has a payment refunded twice (ticket {ticket}); south is in order."

    return [
        AIMessage(content="", tool_calls=[task("north", "audit-n"), task("south", "audit-s")]),
        tool_call(
            "grep", {"pattern": "REFUNDED TWICE", "path": "/tool_results", "output_mode": "content"}
        ),
        look_up,
    ]


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description="ctxfs sub-agents, offline")
    parser.add_argument(
        "--workspace",
        default="memory://subagents-example",
        help="a folder or any fsspec URL (default: in memory)",
    )
    args = parser.parse_args(argv)
    workspace = Workspace(args.workspace)
    policy = ContextPolicy(max_input_tokens=32_000, tool_results={"threshold": {"tokens": 1_000}})

    auditor = SubAgent(
        name="auditor",
        description="Audits one region's ledger and writes notes under /audit.",
        system_prompt="You audit ledgers. Report anomalies in one line.",
        tools=(ledger,),
        max_turns=10,
    )
    subagents = SubAgents(
        workspace,
        model=ScriptedChatModel(script_id="auditor", responses=_auditor_script()),
        policy=policy,
        subagents=[auditor],
    )
    agent = create_agent(
        ScriptedChatModel(script_id="parent", responses=_parent_script()),
        [],
        middleware=[ContextMiddleware(workspace, policy), SubAgentMiddleware(subagents)],
        checkpointer=InMemorySaver(),
    )
    config: RunnableConfig = {"configurable": {"thread_id": "audit"}}
    for mode, chunk in agent.stream(
        {"messages": [{"role": "user", "content": "Audit both regions."}]},
        config,
        stream_mode=["custom", "updates"],
    ):
        event = chunk.get("ctxfs", {}) if mode == "custom" and isinstance(chunk, dict) else {}
        if event.get("event") == "TaskProgress" and event["data"]["kind"] != "tool":
            print(f"[{event['thread_id']}] {event['text']}")
    state = agent.get_state(config).values
    for message in state["messages"]:
        if message.type == "tool" and message.name == "task":
            print(f"report: {message.text.splitlines()[0]}")
    print(f"artifacts: {state['artifacts']}")
    answer = str(state["messages"][-1].content)
    print(answer)
    return answer


if __name__ == "__main__":
    main()
