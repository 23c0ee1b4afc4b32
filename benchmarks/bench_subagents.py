"""Sub-agents: the parent's input tokens with delegation vs doing the same exploration inline.

Not a test: prints what one run measured. Usage::

    python benchmarks/bench_subagents.py [--topics 3] [--pages 8] [--lines 60] [--json]

A scripted, exploration-heavy task: for each of ``--topics`` topics, read ``--pages`` pages
(``--lines`` lines each) with a ``fetch_page`` tool, then report one finding per topic.

- **inline**: the parent reads every page itself.
- **delegated**: the parent hands each topic to a ``general-purpose`` sub-agent with the
  ``task`` tool (all topics in one answer, so they run in parallel); each sub-agent reads
  the pages and reports a line.

Both parents run with the same :class:`~ctxfs.integrations.langchain.ContextMiddleware`
policy, and so do the sub-agents; every request a model receives is counted (system message,
messages, tool schemas) from the middleware's and the sub-agents' ``ContextMeasured`` events.
Printed: the parent's peak request and the sum of its requests in both runs and their ratios
(delegated / inline), and the sub-agents' own totals: delegation moves the reading into
windows that are thrown away, it does not make it free.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import tool

from ctxfs import ContextEvent, ContextPolicy, Workspace
from ctxfs.integrations.langchain import ContextMeasured, ContextMiddleware
from ctxfs.subagents import SubAgentMiddleware, SubAgents
from ctxfs.testing import ScriptedChatModel, tool_call


@dataclass(frozen=True)
class Tokens:
    """Requests one side's models received."""

    parent_calls: int
    parent_peak: int
    parent_total: int
    sub_calls: int = 0
    sub_total: int = 0


def _page_tool(lines: int) -> Any:
    @tool
    def fetch_page(topic: str, n: int) -> str:
        """Returns page n of the notes about a topic."""
        return "\n".join(
            f"{topic} page {n} line {i}: batch {n * lines + i} settled in {i % 89} ms"
            for i in range(lines)
        )

    return fetch_page


def _topic(messages: Sequence[BaseMessage]) -> str:
    return str(messages[1].content).split()[1]  # "Explore <topic> ..."


def _reader_script(pages: int) -> list[Any]:
    def page(n: int) -> Any:
        return lambda messages: tool_call("fetch_page", {"topic": _topic(messages), "n": n})

    def report(messages: Sequence[BaseMessage]) -> str:
        return f"{_topic(messages)}: {pages} pages read, every batch settled."

    return [*(page(n) for n in range(pages)), report]


def _policy() -> ContextPolicy:
    return ContextPolicy(max_input_tokens=128_000)


def _counter(sink: list[int]) -> Any:
    def on_event(event: ContextEvent, thread: str) -> None:
        if isinstance(event, ContextMeasured):
            sink.append(event.tokens_after)

    return on_event


def inline(topics: int, pages: int, lines: int) -> Tokens:
    """The parent reads every page itself."""
    names = [f"topic{t}" for t in range(topics)]
    replies: list[Any] = [
        tool_call("fetch_page", {"topic": name, "n": n}) for name in names for n in range(pages)
    ]
    replies.append("; ".join(f"{name}: every batch settled" for name in names))
    seen: list[int] = []
    ws = Workspace("memory://bench-inline")
    agent = create_agent(
        ScriptedChatModel(responses=replies),
        [_page_tool(lines)],
        middleware=[ContextMiddleware(ws, _policy(), on_event=_counter(seen))],
    )
    agent.invoke({"messages": [("user", "Explore the topics.")]}, {"recursion_limit": 10_000})
    return Tokens(parent_calls=len(seen), parent_peak=max(seen), parent_total=sum(seen))


def delegated(topics: int, pages: int, lines: int) -> Tokens:
    """The parent hands each topic to a sub-agent, all in one answer."""
    names = [f"topic{t}" for t in range(topics)]
    calls = [
        {
            "name": "task",
            "id": f"t{i}",
            "type": "tool_call",
            "args": {
                "description": f"Explore {name}: read its {pages} pages and report.",
                "subagent_type": "general-purpose",
            },
        }
        for i, name in enumerate(names)
    ]
    parent_seen: list[int] = []
    sub_seen: list[int] = []
    ws = Workspace("memory://bench-delegated")
    agents = SubAgents(
        ws,
        model=ScriptedChatModel(script_id="reader", responses=_reader_script(pages)),
        policy=_policy(),
        tools=[_page_tool(lines)],
        on_event=_counter(sub_seen),
    )
    agent = create_agent(
        ScriptedChatModel(
            script_id="parent",
            responses=[AIMessage(content="", tool_calls=calls), "All topics explored."],
        ),
        [],
        middleware=[
            ContextMiddleware(ws, _policy(), on_event=_counter(parent_seen)),
            SubAgentMiddleware(agents),
        ],
    )
    agent.invoke({"messages": [("user", "Explore the topics.")]})
    return Tokens(
        parent_calls=len(parent_seen),
        parent_peak=max(parent_seen),
        parent_total=sum(parent_seen),
        sub_calls=len(sub_seen),
        sub_total=sum(sub_seen),
    )


def measure(topics: int, pages: int, lines: int) -> dict[str, Any]:
    """Both runs and the ratios (delegated / inline)."""
    a, b = inline(topics, pages, lines), delegated(topics, pages, lines)
    return {
        "inline": asdict(a),
        "delegated": asdict(b),
        "peak_ratio": b.parent_peak / a.parent_peak,
        "total_ratio": b.parent_total / a.parent_total,
        "all_agents_total_ratio": (b.parent_total + b.sub_total) / a.parent_total,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=3)
    parser.add_argument("--pages", type=int, default=8)
    parser.add_argument("--lines", type=int, default=60)
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args(argv)
    result = measure(args.topics, args.pages, args.lines)
    if args.json:
        print(json.dumps(result, indent=1))
        return result
    a, b = result["inline"], result["delegated"]
    print(f"{args.topics} topics x {args.pages} pages x {args.lines} lines")
    print(f"{'':24}{'inline':>12}{'delegated':>12}{'ratio':>8}")
    print(f"{'parent model calls':24}{a['parent_calls']:>12,}{b['parent_calls']:>12,}")
    print(
        f"{'parent peak request':24}{a['parent_peak']:>12,}{b['parent_peak']:>12,}"
        f"{result['peak_ratio']:>8.3f}"
    )
    print(
        f"{'parent total input':24}{a['parent_total']:>12,}{b['parent_total']:>12,}"
        f"{result['total_ratio']:>8.3f}"
    )
    print(f"{'sub-agents total input':24}{'':>12}{b['sub_total']:>12,}")
    print(
        f"{'all agents total input':24}{a['parent_total']:>12,}"
        f"{b['parent_total'] + b['sub_total']:>12,}{result['all_agents_total_ratio']:>8.3f}"
    )
    return result


if __name__ == "__main__":
    main()
