"""``ctxfs mcp serve WORKSPACE_URL``: serve a workspace to MCP clients over stdio.

stdout carries the protocol, so the command writes nothing else there; a failure to start
(a bad URL, an unreachable bucket, the ``mcp`` extra missing) is one line on stderr, as for
every command.
"""

from __future__ import annotations

import argparse
import contextlib
from typing import IO, Any

from ctxfs._cli._common import CREATE_HELP, CliError, add_storage_arguments, open_workspace
from ctxfs.tools import DEFAULT_MAX_OUTPUT_TOKENS

__all__ = ["add_mcp_parser"]


def add_mcp_parser(commands: Any) -> None:
    """Adds ``mcp`` (with its ``serve`` subcommand) to ``commands``."""
    mcp = commands.add_parser(
        "mcp",
        help="serve a workspace to MCP clients (Claude Code, editors)",
        description="Model Context Protocol server over a ctxfs workspace.",
    )
    actions = mcp.add_subparsers(dest="mcp_command", required=True, metavar="ACTION")
    serve = actions.add_parser("serve", help="serve a workspace over stdio", description=_SERVE)
    serve.add_argument(
        "url",
        metavar="WORKSPACE_URL",
        help="a folder, memory://name, s3://bucket/prefix or another fsspec URL",
    )
    serve.add_argument("--create", action="store_true", help=CREATE_HELP)
    add_storage_arguments(serve)
    serve.add_argument(
        "--read-only",
        action="append",
        default=[],
        metavar="PATH",
        help="a folder the tools must not change (repeatable); '/' for the whole workspace",
    )
    serve.add_argument(
        "--max-output-tokens",
        type=int,
        default=DEFAULT_MAX_OUTPUT_TOKENS,
        metavar="N",
        help=f"most tokens of one tool answer (default: {DEFAULT_MAX_OUTPUT_TOKENS})",
    )
    serve.add_argument(
        "--max-resource-bytes",
        type=int,
        default=None,
        metavar="N",
        help="largest file served as one resource read (default: 10000000)",
    )
    serve.add_argument(
        "--thread-id",
        default="mcp",
        metavar="ID",
        help="folder under /tool_results where large outputs are saved (default: mcp)",
    )
    serve.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    import anyio  # a missing extra is named by the command line's error handler

    from ctxfs.integrations.mcp import DEFAULT_MAX_RESOURCE_BYTES, create_server, serve_stdio
    from ctxfs.sandbox import normalize_path

    areas = [normalize_path(area) for area in args.read_only]
    workspace = open_workspace(args.url, args, must_exist=False, read_only="/" in areas)
    try:
        server = create_server(
            workspace,
            read_only_areas=[area for area in areas if area != "/"],
            max_output_tokens=args.max_output_tokens,
            thread_id=args.thread_id,
            max_resource_bytes=(
                DEFAULT_MAX_RESOURCE_BYTES
                if args.max_resource_bytes is None
                else args.max_resource_bytes
            ),
        )
    except ValueError as exc:
        raise CliError(str(exc)) from None
    anyio.run(serve_stdio, server)
    _end_abandoned_calls()
    return 0


def _end_abandoned_calls() -> None:
    """Ends the process now when calls of a client that left are still running in worker
    threads: they have no one to answer, and the interpreter would wait for them at exit."""
    import os
    import sys
    import threading

    if any(t.is_alive() and not t.daemon for t in threading.enumerate()[1:]):
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(0)


_SERVE = """Serve the workspace at WORKSPACE_URL to an MCP client over stdin/stdout (the client
starts this command). Tools: list_directory, read_text_file (head, tail, offset, limit),
read_multiple_files, write_file, edit_file, search_files, grep, get_file_info,
list_allowed_directories, history_search, history_read. The areas ctxfs writes
(/tool_results, /tool_inputs, /transcripts, /memories, /sessions) are read-only to the
tools; the first three are listed as ctxfs:/// resources. Every answer fits
--max-output-tokens: reads and searches page, a larger output is saved under
/tool_results/ID/ and the answer says where."""
