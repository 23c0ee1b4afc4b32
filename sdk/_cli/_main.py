"""The ``ctxfs`` command line.

Subcommands:
    demo         Run the offline demo: a scripted agent on a small context budget, live.
    replay       Replay a recorded agent trace through ctxfs: tokens per model call with and
                 without ctxfs, what moved where, and a check that nothing was lost.
    ls, cat,     Look into any workspace (a folder, memory://, s3://...) with the agent's own
    glob, grep   tools' semantics and output.
    transcripts  List the archived conversation segments, or show one.
    memory       Show, search or forget long-term memory (show | search | forget).
    mcp serve    Serve a workspace to MCP clients (Claude Code, editors) over stdio.
    session      Show the staged workflows of a workspace, or resume one.
    threads, gc  List the threads of a workspace (size, last activity), or remove whole
                 threads past retention (a dry run unless --apply).

Every failure is one line on stderr (``ctxfs <command>: <what went wrong>``) and a non-zero
exit status, never a traceback:

- ``0``: done; ``1``: ``grep`` found nothing, ``session resume`` halted on an invalid
  stage output, or ``gc --apply`` left a collection unfinished.
- ``2``: an error in what was asked (arguments, a trace or policy file, the workspace or its
  storage), or a usage error reported by the argument parser.
- ``70``: an internal error, a defect of ctxfs (the line names the exception; please report
  it).
- ``130``: interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import IO

from ctxfs import __version__
from ctxfs._cli._common import CliError, add_storage_arguments, storage_options
from ctxfs._cli._lifecycle import add_lifecycle_parsers
from ctxfs._cli._mcp import add_mcp_parser
from ctxfs._cli._memory import add_memory_parser
from ctxfs._cli._replay import add_replay_parser
from ctxfs._cli._session import add_session_parser
from ctxfs._cli._workspace import EXIT_ERROR, add_workspace_parsers, parse_grep
from ctxfs._errors import WorkspaceError

__all__ = ["EXIT_INTERNAL", "build_parser", "main"]

EXIT_INTERNAL = 70
"""Exit status of an internal error (``EX_SOFTWARE``): a defect of ctxfs, not of the input."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, one subparser per subcommand."""
    return _parsers()[0]


def _parsers() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The top parser, and the ``grep`` parser (whose operands need their own pass)."""
    parser = argparse.ArgumentParser(
        prog="ctxfs",
        description="Keep long-running LLM agents inside their context window, losing nothing.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo",
        help="run the offline demo (scripted agent, small context budget, live view)",
        description=(
            "A scripted agent investigates a failing job in a generated workspace on a small "
            "context budget, so every ctxfs step shows: result offload, input offload, "
            "summary with a searchable transcript. Offline unless --model is given."
        ),
    )
    demo.add_argument(
        "--workspace",
        metavar="URL",
        help="where the agent works: a folder, memory://name or s3://bucket/prefix "
        "(default: a new temporary folder)",
    )
    add_storage_arguments(demo)
    demo.add_argument(
        "--model",
        metavar="PROVIDER:NAME",
        help="a real chat model through langchain's init_chat_model, e.g. "
        "openai:gpt-4.1-mini (needs the provider package and its API key); "
        "default: the offline scripted model",
    )
    demo.add_argument(
        "--no-live", action="store_true", help="print plain lines instead of a live table"
    )
    demo.add_argument("--thread-id", default="demo", help="conversation id (default: demo)")
    demo.add_argument(
        "--max-input-tokens",
        type=int,
        default=12_000,
        metavar="N",
        help="the context budget (default: 12000)",
    )
    demo.set_defaults(handler=_demo)
    add_replay_parser(commands)
    grep = add_workspace_parsers(commands)
    add_memory_parser(commands)
    add_mcp_parser(commands)
    add_session_parser(commands)
    add_lifecycle_parsers(commands)
    return parser, grep


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit status."""
    words = list(sys.argv[1:] if argv is None else argv)
    parser, grep = _parsers()
    if words[:1] == ["grep"]:
        args = parse_grep(grep, words[1:])
        args.command = "grep"
    else:
        args = parser.parse_args(words)
    out, err = sys.stdout, sys.stderr
    try:
        return int(args.handler(args, out, err))
    except (CliError, WorkspaceError, OSError) as exc:
        _fail(args.command, _one_line(str(exc)), err)
        return EXIT_ERROR
    except KeyboardInterrupt:
        _fail(args.command, "interrupted", err)
        return 130
    except Exception as exc:  # a defect: still one line, never a traceback
        reason = _one_line(f"{type(exc).__name__}: {exc}")
        _fail(args.command, f"internal error ({reason}); please report it", err)
        return EXIT_INTERNAL


def _fail(command: str, message: str, err: IO[str]) -> None:
    err.write(f"ctxfs {command}: {message}\n")


def _one_line(text: str, limit: int = 1_000) -> str:
    """A message on one line, cut short when long (it may quote a huge input)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit] + "…"


def _demo(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    try:
        from ctxfs.demo import DemoOptions, run_demo
    except ImportError as exc:
        err.write(f"ctxfs demo: {exc} (pip install 'ctxfs[demo]')\n")
        return 2
    live = not args.no_live and out.isatty()
    options = DemoOptions(
        workspace=args.workspace,
        storage_options=storage_options(args, args.workspace or ""),
        model=args.model,
        live=live,
        thread_id=args.thread_id,
        max_input_tokens=args.max_input_tokens,
        pace=0.35 if live else 0.0,  # about 8 s for a person to follow; none in CI
    )
    try:
        report = run_demo(options)
    except ImportError as exc:
        err.write(f"ctxfs demo: {exc} (pip install 'ctxfs[demo]')\n")
        return 2
    out.write(f"Finished in {report.seconds:.1f} s, {len(report.turns)} model calls.\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
