"""Quick start: a LangChain agent whose context ctxfs keeps in check, in one line.

The agent calls a tool that returns thousands of rows. ctxfs saves the full result to the
workspace and gives the model a pointer with a preview; the agent then searches the saved
result with the workspace's ``grep`` tool, which ``ContextMiddleware`` adds to the agent.

Run it offline (a scripted model plays the agent)::

    python examples/quickstart.py

or with a real model (needs its provider package and API key)::

    python examples/quickstart.py --model openai:gpt-4.1-mini
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from langchain.agents import create_agent
from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from ctxfs import ContextPolicy, Workspace, pointer_of
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.testing import ScriptedChatModel, tool_call


@tool
def list_orders() -> str:
    """Lists every order of the day, one per line (long)."""
    rows = []
    for n in range(5_000):
        status = "REFUNDED" if n % 997 == 0 else "paid"
        rows.append(f"order={100_000 + n} customer=c{n % 313:03d} total={n % 90 + 9}.99 {status}")
    return "\n".join(rows)


def _grep_the_saved_result(messages: Sequence[BaseMessage]) -> AIMessage:
    pointer = pointer_of(messages[-1])
    path = pointer.path if pointer is not None else "/tool_results"
    return tool_call("grep", {"pattern": "REFUNDED", "path": path, "output_mode": "content"})


def scripted_model() -> ScriptedChatModel:
    """The offline stand-in for a model: what a model would do with these tools."""
    return ScriptedChatModel(
        responses=[
            tool_call("list_orders", content="Let me list today's orders."),
            _grep_the_saved_result,
            "Six orders were refunded today: 100000, 100997, 101994, 102991, 103988, 104985.",
        ]
    )


def main(argv: Sequence[str] | None = None) -> str:
    """Runs the agent once and returns its answer."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", default="memory://quickstart", help="folder or URL")
    parser.add_argument("--model", help="provider:name for init_chat_model (default: offline)")
    args = parser.parse_args(argv)

    workspace = Workspace(args.workspace)
    policy = ContextPolicy(max_input_tokens=32_000, tool_results={"threshold": {"tokens": 2_000}})
    model: BaseChatModel = init_chat_model(args.model) if args.model else scripted_model()
    agent = create_agent(
        model,
        [list_orders],
        middleware=[ContextMiddleware(workspace, policy)],  # <- the one line
        checkpointer=InMemorySaver(),
    )
    result = agent.invoke(
        {"messages": [{"role": "user", "content": "Which orders were refunded today?"}]},
        {"configurable": {"thread_id": "quickstart"}},
    )
    for message in result["messages"]:
        print(f"{message.type:>5}: {message.text[:120]!r}")
    return str(result["messages"][-1].text)


if __name__ == "__main__":
    print(main())
