"""The ``ctxfs`` command line.

Subcommands:
    demo    Run the offline demo: a scripted agent on a small context budget, live.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, one subparser per subcommand."""
    parser = argparse.ArgumentParser(
        prog="ctxfs",
        description="Keep long-running LLM agents inside their context window, losing nothing.",
    )
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
    demo.add_argument(
        "--endpoint-url", metavar="URL", help="S3-compatible endpoint for an s3:// workspace"
    )
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    return int(args.handler(args))


def _demo(args: argparse.Namespace) -> int:
    try:
        from ctxfs.demo import DemoOptions, run_demo
    except ImportError as exc:
        print(f"ctxfs demo: {exc}", file=sys.stderr)
        return 2
    live = not args.no_live and sys.stdout.isatty()
    options = DemoOptions(
        workspace=args.workspace,
        endpoint_url=args.endpoint_url,
        model=args.model,
        live=live,
        thread_id=args.thread_id,
        max_input_tokens=args.max_input_tokens,
        pace=0.35 if live else 0.0,  # about 8 s for a person to follow; none in CI
    )
    try:
        report = run_demo(options)
    except ImportError as exc:
        print(f"ctxfs demo: {exc}", file=sys.stderr)
        return 2
    print(f"Finished in {report.seconds:.1f} s, {len(report.turns)} model calls.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
