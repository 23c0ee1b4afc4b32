"""An MCP client using a ctxfs workspace through ``ctxfs mcp serve``, as Claude Code would.

The script starts the server as a subprocess (``python -m ctxfs mcp serve WORKSPACE_URL``)
and talks to it over stdio with the official MCP SDK's client: it writes a long log, finds
the error in it with ``grep`` (which the reference filesystem server lacks), reads the
lines around it with a paged ``read_text_file``, and reads a file ctxfs saved through its
``ctxfs:///`` resource::

    pip install 'ctxfs[mcp]'
    python examples/mcp_client.py                  # a temporary folder
    python examples/mcp_client.py memory://demo    # or any workspace URL (s3://bucket/prefix)

Offline: no model is involved, the script plays the model's part.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters


def text_of(result: types.CallToolResult) -> str:
    """The text of a tool result; raises if the tool reported an error."""
    first = result.content[0]
    assert isinstance(first, types.TextContent)
    if result.is_error:
        raise RuntimeError(first.text)
    return first.text


async def session(url: str) -> str:
    """One client session with the server; returns the log line that explains the failure."""
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "ctxfs", "mcp", "serve", url]
    )
    async with Client(server) as client:
        tools = [tool.name for tool in (await client.list_tools()).tools]
        print("tools:", ", ".join(tools))

        log = "".join(
            f"{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d} job=export step={n} ok\n"
            for n in range(5000)
        )
        log = log.replace("step=4321 ok", "step=4321 FAILED disk quota exceeded on /var/export")
        print(
            text_of(
                await client.call_tool("write_file", {"path": "/logs/export.log", "content": log})
            )
        )

        found = text_of(
            await client.call_tool(
                "grep", {"pattern": "FAILED", "path": "/logs", "output_mode": "content"}
            )
        )
        print("grep:", found)
        line_number = int(found.split(":")[1])
        around = text_of(
            await client.call_tool(
                "read_text_file",
                {"path": "/logs/export.log", "offset": line_number - 3, "limit": 5},
            )
        )
        print(around)

        # A diff of 5,000 changed lines is over the answer's token limit: the server saves
        # it under /tool_results and answers with where it is (also a resource) and a preview.
        renamed = await client.call_tool(
            "edit_file",
            {
                "path": "/logs/export.log",
                "edits": [{"oldText": "job=export", "newText": "job=nightly", "replaceAll": True}],
            },
        )
        print(text_of(renamed).splitlines()[0])
        for resource in (await client.list_resources()).resources:
            content = (await client.read_resource(resource.uri)).contents[0]
            assert isinstance(content, types.TextResourceContents)
            print(f"resource {resource.uri}: {len(content.text):,} characters")

        refused = await client.call_tool(
            "write_file", {"path": "/tool_results/forged.txt", "content": "..."}
        )
        first = refused.content[0]
        assert refused.is_error and isinstance(first, types.TextContent)
        print("refused:", first.text)
        return found.split(":", 2)[2]


def main(argv: Sequence[str] | None = None) -> str:
    """Runs the session against the workspace at the URL given (default: a new folder)."""
    parser = argparse.ArgumentParser(description="An MCP client of ctxfs mcp serve.")
    parser.add_argument("url", nargs="?", help="workspace URL (default: a temporary folder)")
    args = parser.parse_args(argv)
    if args.url:
        return anyio.run(session, args.url)
    with tempfile.TemporaryDirectory() as folder:
        return anyio.run(session, folder)


if __name__ == "__main__":
    print("The failure:", main())
