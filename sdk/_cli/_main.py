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

Every failure is one line on stderr (``ctxfs <command>: <what went wrong>``) and a non-zero
exit status, never a traceback:

- ``0``: done; ``1``: ``grep`` or ``memory search`` found nothing, or ``session resume``
  halted on an invalid stage output (or a stage's agent raised).
- ``2``: an error in what was asked (arguments, a trace or policy file, the workspace or its
  storage), or a usage error reported by the argument parser.
- ``70``: an internal error, a defect of ctxfs (the line names the exception; please report
  it).
- ``130``: interrupted; ``141``: stdout was closed early (``ctxfs ... | head``), quietly.

A missing optional dependency is an error in the installation, not a defect: the line names
the extra that brings it (``pip install 'ctxfs[mcp]'``). What a command prints is made
terminal-safe (:func:`~ctxfs._cli._common.terminal_safe`).

Only the chosen command's module is imported: ``--version`` and ``--help`` load none of the
library, and ``ls`` loads the workspace and its tools, not the compaction or LangChain.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import sys
from collections.abc import Sequence
from typing import IO, Any, cast

from ctxfs import __version__
from ctxfs._cli._common import (
    CREATE_HELP,
    EXIT_ERROR,
    CliError,
    TerminalText,
    WholeWrites,
    add_storage_arguments,
    check_folder,
    positive_int,
    storage_options,
    validation_text,
)

__all__ = ["COMMANDS", "EXIT_BROKEN_PIPE", "EXIT_INTERNAL", "build_parser", "main"]

EXIT_INTERNAL = 70
"""Exit status of an internal error (``EX_SOFTWARE``): a defect of ctxfs, not of the input."""

EXIT_BROKEN_PIPE = 141
"""Exit status when stdout closed early (128 + SIGPIPE, as a shell reports ``cat | head``)."""

COMMANDS: dict[str, tuple[str, str]] = {
    "demo": (
        "ctxfs._cli._main:add_demo_parser",
        "run the offline demo (scripted agent, small context budget, live view)",
    ),
    "replay": (
        "ctxfs._cli._replay:add_replay_parser",
        "replay a recorded agent trace (JSONL) through ctxfs and show what it did",
    ),
    "ls": ("ctxfs._cli._workspace:add_workspace_parsers", "list a folder of a workspace"),
    "cat": ("ctxfs._cli._workspace:add_workspace_parsers", "print a file of a workspace"),
    "glob": ("ctxfs._cli._workspace:add_workspace_parsers", "find files by name pattern"),
    "grep": (
        "ctxfs._cli._workspace:add_workspace_parsers",
        "search file contents with a regular expression, like rg",
    ),
    "transcripts": (
        "ctxfs._cli._workspace:add_workspace_parsers",
        "list the archived conversation segments, or show one",
    ),
    "memory": ("ctxfs._cli._memory:add_memory_parser", "show, search or forget long-term memory"),
    "mcp": (
        "ctxfs._cli._mcp:add_mcp_parser",
        "serve a workspace to MCP clients (Claude Code, editors)",
    ),
    "session": ("ctxfs._cli._session:add_session_parser", "show or resume staged workflows"),
    "threads": (
        "ctxfs._cli._lifecycle:add_lifecycle_parsers",
        "list the threads of a workspace with their size and last activity",
    ),
    "gc": (
        "ctxfs._cli._lifecycle:add_lifecycle_parsers",
        "remove whole threads past retention (a dry run unless --apply)",
    ),
}
"""Each subcommand: the function (``module:name``) that adds its parser, and its one-line help.

Only the chosen command's function runs (its module is imported then); the others are
listed by their help, so ``ctxfs --help`` imports none of them.
"""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, with every subcommand's parser built."""
    return _parsers(set(COMMANDS))[0]


def _parsers(
    chosen: set[str],
) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser | None]:
    """The top parser with the ``chosen`` commands' parsers built (the others only listed),
    and the ``grep`` parser when it was built (its operands need their own pass)."""
    parser = argparse.ArgumentParser(
        prog="ctxfs",
        description="Keep long-running LLM agents inside their context window, losing nothing.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    wanted = {COMMANDS[name][0] for name in chosen if name in COMMANDS}  # with their groups
    built: dict[str, Any] = {}
    for name, (target, help) in COMMANDS.items():
        if name in commands.choices:
            continue  # added with its group
        if target not in wanted:
            commands.add_parser(name, help=help, add_help=False)
            continue
        if target not in built:
            module, _, function = target.partition(":")
            built[target] = getattr(importlib.import_module(module), function)(commands)
    grep = next(
        (value for value in built.values() if isinstance(value, argparse.ArgumentParser)), None
    )
    return parser, grep


def add_demo_parser(commands: Any) -> None:
    """Adds ``demo`` to ``commands``."""
    demo = commands.add_parser(
        "demo",
        help=COMMANDS["demo"][1],
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
    demo.add_argument("--create", action="store_true", help=CREATE_HELP)
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
        type=positive_int,
        default=12_000,
        metavar="N",
        help="the context budget (default: 12000)",
    )
    demo.set_defaults(handler=_demo)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit status."""
    words = list(sys.argv[1:] if argv is None else argv)
    shown = io.StringIO()  # what --help or --version prints, written below as output is
    try:
        _check_words(words)
        with contextlib.redirect_stdout(shown):
            args = _parse(words)
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise  # a usage error, already on stderr
        # argparse would print to stdout and drop a failed write (`ctxfs --help >/dev/full`
        # exited 0 having printed nothing): the text goes out as a command's output does
        text = shown.getvalue()

        def show(_args: argparse.Namespace, out: IO[str], _err: IO[str]) -> int:
            out.write(text)
            return 0

        args = argparse.Namespace(command=_printing(words), handler=show)
    except Exception as exc:  # an argument's check that failed in a way it did not expect
        stream = TerminalText(sys.stderr if sys.stderr is not None else io.StringIO())
        command = words[0] if words[:1] and words[0] in COMMANDS else "arguments"
        status, message = _classify(exc)
        _fail(command, message, cast(IO[str], stream))
        return status
    # the commands take text streams; these write everything through terminal_safe
    # (a stream closed before the start, `ctxfs ... >&-`, is None in Python)
    err = cast(IO[str], TerminalText(sys.stderr if sys.stderr is not None else io.StringIO()))
    if sys.stdout is None:
        _fail(args.command, "standard output is closed; nothing was done", err)
        return EXIT_ERROR
    out = cast(IO[str], TerminalText(cast(IO[str], WholeWrites(sys.stdout))))
    try:
        status = int(args.handler(args, out, err))
        out.flush()  # a closed pipe shows here, not at exit
        return status
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except KeyboardInterrupt:
        _fail(args.command, "interrupted", err)
        return 130
    except Exception as exc:
        status, message = _classify(exc)
        _fail(args.command, message, err)
        return status


def _printing(words: list[str]) -> str:
    """The command named in a failure to print help or the version."""
    if words[:1] and words[0] in COMMANDS:
        return words[0]
    return next((word for word in words if word in ("--version", "--help", "-h")), "--help")


def _check_words(words: list[str]) -> None:
    """Refuses a word no command can take: a NUL character (no file name, workspace path or
    id holds one) or a lone surrogate the file system cannot encode (one that did not come
    from the bytes of a command line, which decode to encodable ones).

    Raises:
        CliError: Naming the word by its position.
    """
    for position, word in enumerate(words, 1):
        if "\0" in word:
            raise CliError(f"argument {position} holds a NUL character; remove it")
        try:
            os.fsencode(word)
        except UnicodeError:
            raise CliError(
                f"argument {position} is not valid text (a lone surrogate); use plain text"
            ) from None


def _parse(words: list[str]) -> argparse.Namespace:
    """The parsed command line (a usage error exits through argparse, status 2)."""
    parser, grep = _parsers(set(words[:1]))
    if words[:1] == ["grep"] and grep is not None:
        from ctxfs._cli._workspace import parse_grep

        args = parse_grep(grep, words[1:])
        args.command = "grep"
        return args
    return parser.parse_args(words)


def _classify(exc: Exception) -> tuple[int, str]:
    """The exit status and the line for an exception a command raised."""
    from ctxfs._cli._extras import missing_dependency
    from ctxfs._errors import WorkspaceError

    if isinstance(exc, CliError | WorkspaceError | OSError):
        from ctxfs._cli._wording import for_the_shell

        return EXIT_ERROR, for_the_shell(_one_line(str(exc)))
    missing = missing_dependency(exc)
    if missing is not None:
        return EXIT_ERROR, missing
    # a defect: still one line, never a traceback
    reason = _one_line(f"{type(exc).__name__}: {exc}")
    return EXIT_INTERNAL, f"internal error ({reason}); please report it"


def _quiet_broken_pipe() -> int:
    """Stdout was closed by its reader: stop quietly. Python flushes stdout again at exit,
    which would fail again and print a warning; point it at /dev/null first."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # a stdout without a descriptor (tests): nothing to do
        pass
    return EXIT_BROKEN_PIPE


def _fail(command: str, message: str, err: IO[str]) -> None:
    with contextlib.suppress(BrokenPipeError):  # stderr closed too: nobody to tell
        err.write(f"ctxfs {command}: {message}\n")


def _one_line(text: str, limit: int = 1_000) -> str:
    """A message on one line, cut short when long (it may quote a huge input)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit] + "…"


def _demo(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from pydantic import ValidationError

    from ctxfs.demo import DemoOptions, demo_policy, run_demo

    try:  # before the workspace is made or filled
        demo_policy(args.max_input_tokens)
    except ValidationError as exc:
        raise CliError(
            f"--max-input-tokens {args.max_input_tokens} does not fit the demo's settings: "
            f"{validation_text(exc)}"
        ) from None
    if args.workspace:
        check_folder(args.workspace, args, must_exist=False)
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
    report = run_demo(options)
    out.write(f"Finished in {report.seconds:.1f} s, {len(report.turns)} model calls.\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
