"""Workspace lifecycle: list a workspace's threads, then remove the ones past retention.

An agent works on three conversations (threads) in one workspace; each offloads a long tool
result to ``/tool_results/<thread>/``. Two of them are then made ten days old (the example
backdates their files, which a folder on this machine allows). A garbage collector with a
seven-day retention plans first (a dry run: what goes, what stays and why), then applies
that plan, as a service would on a schedule; the recent thread's pointer still resolves.

The same from a shell::

    ctxfs threads ./ws
    ctxfs gc ./ws --older-than 7d            # the plan only
    ctxfs gc ./ws --older-than 7d --apply

Run it offline (a scripted model plays the agent)::

    python examples/lifecycle_gc.py [--workspace ./ws]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Sequence

from langchain.agents import create_agent
from langchain_core.messages import BaseMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from ctxfs import ContextPolicy, Workspace, pointer_of, resolve_pointers
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.lifecycle import GarbageCollector, GcReport, format_duration, list_threads
from ctxfs.testing import ScriptedChatModel, tool_call

THREADS = ("monday-report", "tuesday-report", "today-report")


@tool
def export_log(day: str) -> str:
    """Reads the export job's log of one day (long)."""
    return "\n".join(f"{day} {n:04d} export step ok, rows copied" for n in range(2_000))


def run_agent(workspace: Workspace, thread: str) -> list[BaseMessage]:
    """One conversation: the agent reads a long log (ctxfs offloads it) and answers."""
    model = ScriptedChatModel(
        responses=[tool_call("export_log", {"day": thread.split("-")[0]}), "All steps ran."]
    )
    policy = ContextPolicy(max_input_tokens=32_000, tool_results={"threshold": {"tokens": 2_000}})
    agent = create_agent(
        model,
        [export_log],
        middleware=[ContextMiddleware(workspace, policy, tools=False)],
        checkpointer=InMemorySaver(),
    )
    result = agent.invoke(
        {"messages": [{"role": "user", "content": "Did the export run?"}]},
        {"configurable": {"thread_id": thread}},
    )
    return list(result["messages"])


def backdate(folder: str, days: float) -> None:
    """Makes every file below ``folder`` (on this machine) ``days`` old."""
    then = time.time() - days * 86_400
    for top, _dirs, names in os.walk(folder):
        for name in names:
            os.utime(os.path.join(top, name), (then, then))


def main(argv: Sequence[str] | None = None) -> GcReport:
    """Runs the three conversations, ages two, and collects them; returns the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", help="a folder (default: a new temporary one)")
    args = parser.parse_args(argv)
    folder = args.workspace or tempfile.mkdtemp(prefix="ctxfs-lifecycle-")
    workspace = Workspace(folder)

    kept_messages = {thread: run_agent(workspace, thread) for thread in THREADS}
    for thread in THREADS[:2]:
        backdate(os.path.join(folder, "tool_results", thread), days=10)

    print("Threads:")
    for info in list_threads(workspace):
        print(f"  {info.name:<16} {len(info.files)} file(s) {info.total_bytes:>7,} bytes")

    collector = GarbageCollector(workspace, {"older_than": "7d"})
    plan = collector.plan()  # changes nothing
    for collection in plan.collect:
        print(f"remove {collection.thread.name}: {collection.reason}")
    for kept in plan.kept:
        print(f"keep   {kept.thread.name}: {kept.reason}")

    report = collector.apply(plan)
    print(f"Removed {len(report.removed)} thread(s), {report.freed_bytes:,} bytes freed.")

    # the recent thread's pointer still resolves to the full result
    today = kept_messages[THREADS[2]]
    pointer = next(p for p in map(pointer_of, today) if p is not None)
    restored = resolve_pointers(today, workspace)
    lines = sum(m.text.count("export step ok") for m in restored)
    print(f"{pointer.path} still resolves: {lines:,} lines")
    idle = plan.now - max(c.thread.family_activity or plan.now for c in plan.collect)
    print(f"(the removed threads were idle for {format_duration(idle)})")
    return report


if __name__ == "__main__":
    main()
