"""A ctxfs workspace on S3, or on any S3-compatible server (MinIO, Ceph, R2, moto, ...).

Everything ctxfs offloads, and every file the agent writes, goes to ``s3://bucket/prefix``.
Point it at any S3-compatible server with its endpoint URL; credentials come from the usual
places (``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY``, ``~/.aws``, instance roles)::

    pip install 'ctxfs[s3,langchain]'
    python examples/s3_workspace.py s3://my-bucket/agents/run-1
    python examples/s3_workspace.py s3://my-bucket/run-1 --endpoint-url http://127.0.0.1:9000

The endpoint can also come from the ``CTXFS_S3_ENDPOINT_URL`` environment variable. The
model is scripted (offline); swap in any LangChain chat model.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.tools import tool

from ctxfs import ContextPolicy, Workspace
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.testing import ScriptedChatModel, tool_call


@tool
def export_audit_log() -> str:
    """Exports the audit log of the account (long)."""
    return "\n".join(f"event={n:05d} actor=user{n % 17} action=login ok" for n in range(4_000))


def open_workspace(url: str, endpoint_url: str | None) -> Workspace:
    """Opens ``url``; ``endpoint_url`` selects an S3-compatible server other than AWS."""
    options: dict[str, Any] = {}
    if endpoint_url:
        options["endpoint_url"] = endpoint_url
    return Workspace(url, storage_options=options)


def main(argv: Sequence[str] | None = None) -> str:
    """Runs a short agent on the S3 workspace; returns the listing of what ctxfs stored."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="s3://bucket/prefix")
    parser.add_argument(
        "--endpoint-url",
        default=os.environ.get("CTXFS_S3_ENDPOINT_URL"),
        help="S3-compatible endpoint, e.g. http://127.0.0.1:9000 (default: AWS)",
    )
    args = parser.parse_args(argv)

    workspace = open_workspace(args.url, args.endpoint_url)
    model = ScriptedChatModel(
        responses=[
            tool_call("export_audit_log"),
            tool_call("write_file", {"file_path": "/notes/audit.md", "content": "all ok\n"}),
            "The audit log is clean; notes are in /notes/audit.md.",
        ]
    )
    policy = ContextPolicy(max_input_tokens=16_000, tool_results={"threshold": {"tokens": 2_000}})
    agent = create_agent(
        model, [export_audit_log], middleware=[ContextMiddleware(workspace, policy)]
    )
    agent.invoke(
        {"messages": [{"role": "user", "content": "Check the audit log."}]},
        {"configurable": {"thread_id": "audit"}},
    )
    found = workspace.glob("**/*")
    listing = "\n".join(f"{args.url.rstrip('/')}{path}" for path in found.paths)
    print(listing)
    return listing


if __name__ == "__main__":
    main()
