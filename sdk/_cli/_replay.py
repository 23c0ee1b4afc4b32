"""``ctxfs replay``: a recorded trace through the engine, shown as a table, JSON or a plot.

The replay itself is :mod:`ctxfs.replay`; this module loads the policy file, opens the
workspace, and presents the result. Everything is written to the given streams, so tests pin
the exact output.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import tempfile
import tomllib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage
from pydantic import ValidationError

from ctxfs._archive._transcripts import thread_transcript_dir
from ctxfs._cli._common import (
    CREATE_HELP,
    CliError,
    open_workspace,
    positive_int,
    raw_stream,
    terminal_safe,
    validation_text,
)
from ctxfs._compaction._engine import ContextEngine
from ctxfs._events import ContextEvent, Summarized, describe_event
from ctxfs._json import JsonDepthError, JsonDuplicateKeyError, loads_bounded
from ctxfs._policy._settings import ContextPolicy
from ctxfs._replay._recovery import Recovery, check_recovery
from ctxfs._replay._run import ModelCall, ReplayResult, replay
from ctxfs._replay._trace import read_trace
from ctxfs._workspace._workspace import Workspace
from ctxfs.tools._format import plural

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "add_replay_parser",
    "describe_event",
    "event_kind",
    "event_record",
    "load_policy",
    "plot_format",
    "render_plain",
    "render_rich",
    "replay_figure",
    "replay_json",
    "write_plot",
]

PROGRESS_MIN_MESSAGES = 100
"""Traces at least this long get a progress bar (on a terminal, with rich installed)."""


def add_replay_parser(commands: Any) -> None:
    """Adds the ``replay`` subcommand to the subparsers action ``commands``."""
    parser = commands.add_parser(
        "replay",
        help="replay a recorded agent trace (JSONL) through ctxfs and show what it did",
        description=(
            "Replays a trace as the agent would have lived it: each tool result goes through "
            "result offload as it arrives, and the history is compacted before each assistant "
            "turn. Shows the context tokens of every model call with and without ctxfs, what "
            "was offloaded or summarized where, and checks that everything removed reads back "
            "byte-exact from the workspace."
        ),
    )
    parser.add_argument("trace", metavar="TRACE.jsonl", help="the trace: one message per line")
    parser.add_argument(
        "--max-input-tokens",
        type=positive_int,
        metavar="N",
        help="the model's context window (required unless the policy file sets it)",
    )
    parser.add_argument(
        "--policy",
        metavar="FILE",
        help="ContextPolicy settings as JSON or TOML (.toml), e.g. "
        '{"tool_results": {"threshold": {"tokens": 2000}}}',
    )
    parser.add_argument(
        "--workspace",
        metavar="URL",
        help="where offloads and transcripts go: a folder, memory://name or s3://bucket/prefix "
        "(default: a new temporary folder)",
    )
    parser.add_argument("--create", action="store_true", help=CREATE_HELP)
    parser.add_argument(
        "--endpoint-url", metavar="URL", help="S3-compatible endpoint for an s3:// workspace"
    )
    parser.add_argument(
        "--thread-id", metavar="ID", help="conversation id (default: the trace's file name)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead")
    parser.add_argument(
        "--plot",
        metavar="FILE.png",
        help="also draw context tokens per model call, with and without ctxfs (needs "
        "matplotlib: pip install 'ctxfs[plot]')",
    )
    parser.add_argument(
        "--plain", action="store_true", help="plain text even on a terminal with rich installed"
    )
    parser.set_defaults(handler=run_replay)


def run_replay(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """Runs ``ctxfs replay``; returns the exit status."""
    history = read_trace(args.trace)
    if not any(isinstance(message, AIMessage) for message in history):
        raise CliError(
            f"{args.trace}: the trace has no assistant message, so there is no model call to "
            "replay; a trace records a conversation with at least one assistant turn"
        )
    policy = load_policy(args.policy, args.max_input_tokens)
    plot = plot_format(args.plot) if args.plot else None  # before the replay writes anything
    if args.workspace:
        return _report(args, out, err, history, policy, plot, args.workspace)
    folder = tempfile.mkdtemp(prefix="ctxfs-replay-")
    try:
        return _report(args, out, err, history, policy, plot, folder)
    except BaseException:
        # the folder is named only in the report: a replay that failed leaves nothing behind
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _report(
    args: argparse.Namespace,
    out: IO[str],
    err: IO[str],
    history: list[BaseMessage],
    policy: ContextPolicy,
    plot: str | None,
    url: str,
) -> int:
    """Replays ``history`` into the workspace at ``url`` and prints the report."""
    workspace = open_workspace(url, args, must_exist=False)  # a missing one needs --create
    thread_id = args.thread_id or Path(args.trace).stem
    engine = ContextEngine(workspace, policy)
    with _progress(err, len(history)) as on_message:
        result = replay(history, engine, thread_id=thread_id, on_message=on_message)
    recovery = check_recovery(result, workspace)
    if plot is not None:
        write_plot(result, args.plot, plot)
    if args.json:
        document = replay_json(result, recovery, trace=args.trace, workspace=workspace)
        out.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    elif not args.plain and out.isatty() and _has_rich():
        render_rich(result, recovery, trace=args.trace, workspace=workspace, out=out)
    else:
        out.write(render_plain(result, recovery, trace=args.trace, workspace=workspace))
    if args.plot and not args.json:
        out.write(f"Plot written to {args.plot}\n")
    return 0


# -- the policy ------------------------------------------------------------------------------


def load_policy(path: str | None, max_input_tokens: int | None) -> ContextPolicy:
    """Reads ContextPolicy settings from a JSON or TOML file; the window from the flag wins.

    Raises:
        CliError: The file cannot be read or parsed, the settings are invalid, or no window
            was given anywhere.
    """
    data: dict[str, Any] = {}
    if path is not None:
        data = _read_settings(path)
    if max_input_tokens is not None:
        data["max_input_tokens"] = max_input_tokens
    elif "max_input_tokens" not in data:
        where = f" or set max_input_tokens in {path}" if path else ""
        raise CliError(f"give the context window with --max-input-tokens N{where}")
    try:
        return ContextPolicy.model_validate(data)
    except ValidationError as exc:
        source = f"the policy in {path}" if path else "the policy"
        raise CliError(f"{source} is invalid: {validation_text(exc)}") from None


def _read_settings(path: str) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CliError(f"policy file {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"policy file {path}: cannot read it ({exc})") from None
    try:
        if path.endswith(".toml"):
            data: object = tomllib.loads(text)
        else:
            data = loads_bounded(text)
    except tomllib.TOMLDecodeError as exc:
        raise CliError(f"policy file {path}: not valid TOML: {exc}") from None
    except JsonDepthError:
        raise CliError(f"policy file {path}: nested too deeply to read") from None
    except JsonDuplicateKeyError as exc:  # no position: the key names it
        raise CliError(f"policy file {path}: not valid settings: {exc}") from None
    except json.JSONDecodeError as exc:
        raise CliError(
            f"policy file {path}:{exc.lineno}: not valid JSON: {exc.msg} (column {exc.colno}); "
            "name the file .toml for TOML"
        ) from None
    except RecursionError:  # TOML nested thousands deep
        raise CliError(f"policy file {path}: nested too deeply to read") from None
    except ValueError as exc:  # TOML: a number too long for int()
        raise CliError(f"policy file {path}: not valid TOML: {exc}") from None
    if not isinstance(data, dict):
        raise CliError(f"policy file {path}: expected an object of ContextPolicy settings")
    return data


# -- events ---------------------------------------------------------------------------------


def event_kind(event: ContextEvent) -> str:
    """``ToolResultOffloaded`` -> ``tool_result_offloaded``: the event's kind in JSON."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", type(event).__name__).lower()


def event_record(event: ContextEvent) -> dict[str, Any]:
    """The event as a JSON object: ``kind``, ``path`` (or ``null``), then its fields.

    ``path`` is where the content now lives (for a summary: the lossless transcript file).
    A field of the event that is itself called ``kind`` is renamed ``event_kind``.
    """
    values = {f.name: getattr(event, f.name) for f in fields(event)}
    path = values.get("path")
    if path is None and values.get("segment_paths"):
        path = values["segment_paths"][0]
    record: dict[str, Any] = {"kind": event_kind(event), "path": path}
    for name, value in values.items():
        key = "event_kind" if name == "kind" else name
        record[key] = list(value) if isinstance(value, tuple) else value
    return record


# -- JSON -----------------------------------------------------------------------------------


def replay_json(
    result: ReplayResult, recovery: Recovery, *, trace: str, workspace: Workspace
) -> dict[str, Any]:
    """The machine-readable result of ``ctxfs replay --json``."""
    events: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for call in result.calls:
        records = [event_record(e) for e in call.events]
        calls.append(
            {
                "index": call.index,
                "message_index": call.message_index,
                "tokens": call.tokens,
                "baseline_tokens": call.baseline_tokens,
                "cached_tokens": call.cached_tokens,
                "uncached_tokens": call.uncached_tokens,
                "prefix_broken": call.prefix_broken,
                "task_in_view": call.task_in_view,
                "user_messages": call.user_messages,
                "user_messages_in_view": call.user_messages_in_view,
                "plan_in_view": call.plan_in_view,
                "events": records,
            }
        )
        events += [{**r, "call": call.index} for r in records]
    events += [{**event_record(e), "call": None} for e in result.trailing_events]
    return {
        "trace": trace,
        "thread_id": result.thread_id,
        "workspace": workspace.url,
        "transcripts": thread_transcript_dir(result.thread_id),
        "messages": len(result.history),
        "max_input_tokens": result.max_input_tokens,
        "model_calls": calls,
        "events": events,
        "peak_tokens": result.peak_tokens,
        "baseline_peak_tokens": result.baseline_peak_tokens,
        "total_input_tokens": result.total_input_tokens,
        "baseline_total_input_tokens": result.baseline_total_input_tokens,
        "calls_over_budget": result.calls_over_budget,
        "cached_tokens": result.cached_tokens,
        "uncached_tokens": result.uncached_tokens,
        "cache_hit_rate": round(result.cache_hit_rate, 4),
        "prefix_breaks": result.prefix_breaks,
        "task_retention": round(result.task_retention, 4),
        "user_retention": round(result.user_retention, 4),
        "plan_retention": round(result.plan_retention, 4),
        "removed_bytes": recovery.removed_bytes,
        "recovered_bytes": recovery.recovered_bytes,
        "lost_message_ids": list(recovery.lost),
    }


# -- tables ---------------------------------------------------------------------------------

_HEADERS = ("call", "msg", "tokens", "cached", "without ctxfs", "events")
_COLUMNS = len(_HEADERS) - 1


def _row(call: ModelCall) -> tuple[str, ...]:
    return (
        str(call.index),
        str(call.message_index),
        f"{call.tokens:,}",
        f"{call.cached_tokens:,}" + ("*" if call.prefix_broken else ""),
        f"{call.baseline_tokens:,}",
    )


def _heading(result: ReplayResult, trace: str, workspace: Workspace) -> list[str]:
    return [
        f"Replayed {trace}: {len(result.history)} messages, {len(result.calls)} model calls, "
        f"window {result.max_input_tokens:,} tokens",
        f"Workspace: {workspace.url} (thread {result.thread_id!r})",
    ]


def _totals(result: ReplayResult, recovery: Recovery) -> list[str]:
    total, baseline = result.total_input_tokens, result.baseline_total_input_tokens
    saved = f", {1 - total / baseline:.1%} fewer" if baseline else ""
    counts: dict[str, int] = {}
    for event in result.events:
        counts[event_kind(event)] = counts.get(event_kind(event), 0) + 1
    events = ", ".join(f"{k.replace('_', ' ')}: {n}" for k, n in counts.items()) or "none"
    share = recovery.recovered_bytes / recovery.removed_bytes if recovery.removed_bytes else 1.0
    return [
        f"peak tokens: {result.peak_tokens:,} (without ctxfs: {result.baseline_peak_tokens:,})",
        f"total input tokens: {total:,} (without ctxfs: {baseline:,}{saved})",
        f"calls over the window: {result.calls_over_budget}",
        f"prompt cache: {result.cached_tokens:,} tokens a prefix cache would reuse, "
        f"{result.uncached_tokens:,} read anew ({result.cache_hit_rate:.1%} reused), "
        f"{plural(result.prefix_breaks, 'prefix break')} (* in the cached column)",
        f"in view: the task statement in {result.task_retention:.1%} of calls, each user "
        f"message in {result.user_retention:.1%} of (call, message) pairs, the plan in "
        f"{result.plan_retention:.1%} of calls once there is one",
        f"events: {events}",
        f"removed from the context: {recovery.removed_bytes:,} bytes of "
        f"{plural(recovery.removed_messages, 'message')}, recoverable byte-exact: {share:.1%}",
    ]


def render_plain(
    result: ReplayResult, recovery: Recovery, *, trace: str, workspace: Workspace
) -> str:
    """The replay as plain text: heading, one row per model call, totals."""
    rows = [_row(call) for call in result.calls]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(_HEADERS[:_COLUMNS])]
    indent = " " * (sum(widths) + 2 * len(widths))

    def line(cells: Sequence[str], events: str) -> str:
        text = "  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True))
        return f"{text}  {events}".rstrip()

    out = [*_heading(result, trace, workspace), "", line(_HEADERS[:_COLUMNS], _HEADERS[-1])]
    for call, row in zip(result.calls, rows, strict=True):
        described = [describe_event(e) for e in call.events] or [""]
        out.append(line(row, described[0]))
        out += [f"{indent}{text}" for text in described[1:]]
        if call.reason:
            out.append(f"{indent}target not reached: {call.reason}")
    if result.trailing_events:
        out.append("after the last model call:")
        out += [f"{indent}{describe_event(e)}" for e in result.trailing_events]
    return "\n".join([*out, "", *_totals(result, recovery)]) + "\n"


def render_rich(
    result: ReplayResult,
    recovery: Recovery,
    *,
    trace: str,
    workspace: Workspace,
    out: IO[str],
    width: int | None = None,
) -> None:
    """The replay as a rich table (needs rich)."""
    from rich.console import Console
    from rich.table import Table

    # rich writes its own escape sequences, so it gets the raw stream and safe text
    console = Console(file=raw_stream(out), width=width, highlight=False)
    for text in _heading(result, trace, workspace):
        console.print(terminal_safe(text), markup=False)
    table = Table(show_edge=False, pad_edge=False)
    for header in _HEADERS:
        table.add_column(header, justify="left" if header == "events" else "right")
    for call, row in zip(result.calls, (_row(c) for c in result.calls), strict=True):
        described = [describe_event(e) for e in call.events]
        if call.reason:
            described.append(f"target not reached: {call.reason}")
        over = call.tokens > result.max_input_tokens
        tokens = f"[red]{row[2]}[/red]" if over else row[2]
        table.add_row(row[0], row[1], tokens, row[3], row[4], _escape("\n".join(described)))
    if result.trailing_events:
        text = "\n".join(describe_event(e) for e in result.trailing_events)
        table.add_row("", "", "", "", "after", _escape(text))
    console.print(table)
    for text in _totals(result, recovery):
        console.print(terminal_safe(text), markup=False)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(terminal_safe(text))


def _has_rich() -> bool:
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


@contextmanager
def _progress(err: IO[str], total: int) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar on a terminal's stderr for long traces; otherwise nothing."""
    if total < PROGRESS_MIN_MESSAGES or not err.isatty() or not _has_rich():
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(file=raw_stream(err)), transient=True) as progress:
        task = progress.add_task("replaying", total=total)

        def advance(done: int, _total: int) -> None:
            progress.update(task, completed=done)

        yield advance


# -- plot -----------------------------------------------------------------------------------


def plot_format(path: str) -> str:
    """The image format ``--plot`` writes ``path`` in (its extension, PNG without one),
    checked before the replay runs: the file is written at ``path`` exactly.

    Raises:
        CliError: matplotlib is not installed; ``path`` is a folder, or its folder does not
            exist; its extension names a format matplotlib cannot write.
    """
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        raise CliError("--plot needs matplotlib: pip install 'ctxfs[plot]'") from None
    target = Path(path)
    if target.is_dir():
        raise CliError(f"--plot {path}: is a folder; give an image file such as calls.png")
    if not target.parent.is_dir():
        raise CliError(f"--plot {path}: no such folder {target.parent}")
    extension = target.suffix.removeprefix(".").lower()
    formats = FigureCanvasBase.get_supported_filetypes()
    if extension and extension not in formats:
        names = ", ".join(f".{name}" for name in sorted(formats))
        raise CliError(f"--plot {path}: cannot draw a .{extension} file; use one of {names}")
    return extension or "png"


def write_plot(result: ReplayResult, path: str, image_format: str = "png") -> None:
    """Draws :func:`replay_figure` into an image file at ``path``, in ``image_format``.

    Raises:
        CliError: matplotlib is not installed, or the file cannot be written.
    """
    figure = replay_figure(result)
    try:
        figure.savefig(path, dpi=110, format=image_format)
    except (OSError, ValueError) as exc:
        raise CliError(f"could not write the plot to {path}: {exc}") from None


def replay_figure(result: ReplayResult) -> Figure:
    """The replay as a matplotlib figure: the context per model call, with and without
    ctxfs, below it the prompt cache's view of the same calls, and at the bottom what stayed
    in view (the task statement, the share of user messages).

    The upper panel shows the tokens each call sends, the window and the summaries. The
    lower one splits each call's tokens into those a prefix cache would reuse (cached) and
    those read anew (uncached), and marks each prefix break, with the run's hit rate and
    break count in its title.

    Raises:
        CliError: matplotlib is not installed.
    """
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise CliError("--plot needs matplotlib: pip install 'ctxfs[plot]'") from None
    calls = [c.index for c in result.calls]
    figure = Figure(figsize=(10, 9), layout="constrained")
    axes, cache, view = figure.subplots(3, 1, sharex=True, height_ratios=(3, 2, 1.5))
    axes.plot(calls, [c.baseline_tokens for c in result.calls], label="without ctxfs")
    axes.plot(calls, [c.tokens for c in result.calls], label="with ctxfs")
    axes.axhline(result.max_input_tokens, color="grey", linestyle="--", label="window")
    summaries = [c for c in result.calls if any(isinstance(e, Summarized) for e in c.events)]
    if summaries:
        axes.scatter(
            [c.index for c in summaries],
            [c.tokens for c in summaries],
            marker="v",
            color="black",
            zorder=3,
            label="summary",
        )
    axes.set_ylabel("context tokens")
    axes.set_title(f"{result.thread_id}: context per model call")
    axes.legend()
    cached = [c.cached_tokens for c in result.calls]
    uncached = [c.uncached_tokens for c in result.calls]
    cache.bar(calls, cached, width=1.0, color="tab:green", label="cached")
    cache.bar(calls, uncached, width=1.0, bottom=cached, color="tab:red", label="uncached")
    for n, call in enumerate(c for c in result.calls if c.prefix_broken):
        cache.axvline(
            call.index,
            color="black",
            linewidth=0.6,
            linestyle=":",
            label="prefix break" if n == 0 else None,
        )
    cache.set_ylabel("tokens sent")
    cache.set_title(
        f"prompt cache: {result.cache_hit_rate:.1%} of input tokens reused, "
        f"{plural(result.prefix_breaks, 'prefix break')}"
    )
    cache.legend()
    shares = [
        c.user_messages_in_view / c.user_messages if c.user_messages else 1.0 for c in result.calls
    ]
    view.step(calls, [float(c.task_in_view) for c in result.calls], where="mid", label="task")
    view.step(calls, shares, where="mid", label="user messages (share)")
    view.set_ylim(-0.05, 1.05)
    view.set_xlabel("model call")
    view.set_ylabel("in view")
    view.set_title(
        f"goal retention: the task in {result.task_retention:.1%} of calls, user messages in "
        f"{result.user_retention:.1%}"
    )
    view.legend()
    return figure
