"""A Deep Agents agent whose files live on S3, with ctxfs keeping its context small.

Deep Agents' own tools (``ls``, ``read_file``, ``write_file``, ``edit_file``, ``glob``,
``grep``, ``delete``) work on a ctxfs workspace through
:class:`~ctxfs.integrations.deepagents.WorkspaceBackend`, and ctxfs's middleware offloads large
tool results to the same workspace, so the agent reads them back with the tools it knows::

    pip install 'ctxfs[s3,deepagents]'
    python examples/deepagents_s3.py s3://my-bucket/agents/run-1
    python examples/deepagents_s3.py s3://my-bucket/run-1 --endpoint-url http://127.0.0.1:9000

The endpoint can also come from the ``CTXFS_S3_ENDPOINT_URL`` environment variable;
credentials come from the usual places (``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY``,
``~/.aws``, instance roles). The model is scripted (offline); swap in any LangChain chat model.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any

from deepagents import create_deep_agent
from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from ctxfs import ContextPolicy, Workspace, pointer_of
from ctxfs.integrations.deepagents import WorkspaceBackend
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.testing import ScriptedChatModel, tool_call


@tool
def export_audit_log() -> str:
    """Exports the audit log of the account (long)."""
    lines = [f"event={n:05d} actor=user{n % 17} action=login ok" for n in range(4_000)]
    lines[2_718] = "event=02718 actor=user15 action=login FAILED from 203.0.113.9"
    return "\n".join(lines)


def grep_the_saved_log(messages: Sequence[BaseMessage]) -> Any:
    """The model's next step: search the file ctxfs saved the log to (named by the pointer
    that replaced the result) with Deep Agents' grep."""
    held = pointer_of(next(m for m in messages if isinstance(m, ToolMessage)))
    assert held is not None, "the audit log was kept inline"
    return tool_call("grep", {"pattern": "FAILED", "path": held.path, "output_mode": "content"})


def main(argv: Sequence[str] | None = None) -> str:
    """Runs the agent on the S3 workspace; returns what the workspace holds afterwards."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="s3://bucket/prefix")
    parser.add_argument(
        "--endpoint-url",
        default=os.environ.get("CTXFS_S3_ENDPOINT_URL"),
        help="S3-compatible endpoint, e.g. http://127.0.0.1:9000 (default: AWS)",
    )
    args = parser.parse_args(argv)

    options = {"endpoint_url": args.endpoint_url} if args.endpoint_url else {}
    workspace = Workspace(args.url, storage_options=options)
    model = ScriptedChatModel(
        responses=[
            tool_call("export_audit_log"),
            grep_the_saved_log,
            tool_call("write_file", {"file_path": "/scratch.md", "content": "draft\n"}),
            tool_call(
                "write_file",
                {"file_path": "/notes/audit.md", "content": "1 failed login: event 2718\n"},
            ),
            tool_call("delete", {"file_path": "/scratch.md"}),
            tool_call("ls", {"path": "/"}),
            "One failed login (event 2718); notes are in /notes/audit.md.",
        ]
    )
    policy = ContextPolicy(max_input_tokens=32_000, tool_results={"threshold": {"tokens": 2_000}})
    agent = create_deep_agent(
        model,
        [export_audit_log],
        backend=WorkspaceBackend(workspace),
        # Deep Agents brings the file tools; ctxfs brings the context steps.
        middleware=[ContextMiddleware(workspace, policy, tools=False)],
        checkpointer=InMemorySaver(),
    )
    result = agent.invoke(
        {"messages": [{"role": "user", "content": "Check the audit log for failed logins."}]},
        {"configurable": {"thread_id": "audit"}},
    )
    for message in result["messages"]:
        if isinstance(message, ToolMessage):
            print(f"[{message.name}] {' '.join(message.text.split())[:150]}")
    listing = "\n".join(f"{args.url.rstrip('/')}{path}" for path in workspace.glob("**/*").paths)
    print(listing)
    return listing


if __name__ == "__main__":
    main()
