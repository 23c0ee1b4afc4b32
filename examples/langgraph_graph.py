"""A hand-written LangGraph agent with ctxfs's building blocks.

Two pieces around the usual model / tools loop:

- ``compaction_node(engine, tools=tools)`` runs before every model call, budgets the whole
  request (messages and tool schemas) and writes the compacted history
  back to the state (only when a trigger fires);
- ``offload_tool_node(ToolNode(tools), engine)`` offloads large tool results before they are
  written to the state.

Run it offline (a scripted model)::

    python examples/langgraph_graph.py
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from ctxfs import ContextEngine, ContextPolicy, Workspace, pointer_of
from ctxfs.integrations.langgraph import compaction_node, offload_tool_node
from ctxfs.testing import ScriptedChatModel, tool_call
from ctxfs.tools import workspace_tools


@tool
def fetch_metrics(service: str) -> str:
    """Returns a day of per-minute metrics of a service (long)."""
    lines = [
        f"{service} minute={m:04d} p99_ms={120 + m % 37} errors={m % 211 == 17}"
        for m in range(1440)
    ]
    return "\n".join(lines)


def _find_errors(messages: Sequence[BaseMessage]) -> AIMessage:
    pointer = pointer_of(messages[-1])
    path = pointer.path if pointer is not None else "/tool_results"
    return tool_call("grep", {"pattern": "errors=True", "path": path, "output_mode": "count"})


def build_graph(model: BaseChatModel, workspace: Workspace) -> Any:
    """The graph: compact -> model -> (tools -> compact -> model)* -> end."""
    engine = ContextEngine(workspace, ContextPolicy(max_input_tokens=16_000))
    # the recovery tools page at the policy's share of the window instead of overflowing it
    sized = workspace_tools(workspace, max_output_tokens=engine.policy.tool_output_tokens)
    tools = [fetch_metrics, *sized]
    bound = model.bind_tools(tools)

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    # the budget is the whole request: the tool schemas the model is bound to count too
    graph.add_node("compact", compaction_node(engine, tools=tools))
    graph.add_node("model", call_model)
    graph.add_node("tools", offload_tool_node(ToolNode(tools), engine))
    graph.add_edge(START, "compact")
    graph.add_edge("compact", "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "compact")
    return graph.compile(checkpointer=InMemorySaver())


def main(argv: Sequence[str] | None = None) -> str:
    """Runs the graph once and returns the final answer."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", default="memory://langgraph-example")
    args = parser.parse_args(argv)
    model = ScriptedChatModel(
        responses=[
            tool_call("fetch_metrics", {"service": "checkout"}),
            _find_errors,
            "checkout had errors in 7 of the day's 1,440 minutes.",
        ]
    )
    app = build_graph(model, Workspace(args.workspace))
    result = app.invoke(
        {
            "messages": [
                {"role": "user", "content": "How many minutes with errors did checkout have today?"}
            ]
        },
        {"configurable": {"thread_id": "metrics"}},
    )
    for message in result["messages"]:
        print(f"{message.type:>5}: {message.text[:100]!r}")
    return str(result["messages"][-1].text)


if __name__ == "__main__":
    print(main())
