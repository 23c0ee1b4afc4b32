"""``ctxfs threads`` and ``ctxfs gc``: what a workspace holds by thread, and removing old ones.

``threads`` opens the workspace read-only. ``gc`` is a dry run unless ``--apply`` is given
(then it opens the workspace writable); either way it prints the plan: what goes, what
stays and why. Exit status 0, or 1 when ``--apply`` left some collection unfinished (the
next run finishes it), 2 for an error in what was asked.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, Any

from ctxfs._cli._common import CliError, add_storage_arguments, open_workspace

if TYPE_CHECKING:
    from ctxfs.lifecycle import ThreadInfo

__all__ = ["add_lifecycle_parsers", "format_bytes", "parse_bytes"]

_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b)?", re.IGNORECASE)
_POWERS = {"": 1, "b": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}


def parse_bytes(text: str) -> int:
    """A byte count: ``500000``, ``500kB``, ``200MB``, ``1.5GB``, ``2GiB``.

    Raises:
        ValueError: Anything else.
    """
    found = _SIZE.fullmatch(text.strip())
    shown = repr(text if len(text) <= 40 else text[:40] + "…")
    if found is None:
        raise ValueError(f"{shown} is not a size: write e.g. 500000, 200MB or 2GiB")
    unit = (found.group(2) or "").lower()
    power = _POWERS[unit[:1]] if "i" not in unit else 1024 ** "bkmgt".index(unit[0])
    value = float(found.group(1)) * power
    if not math.isfinite(value):  # more digits than a float holds: int() would overflow
        raise ValueError(f"{shown} is larger than any size; write e.g. 200MB or 2GiB")
    return int(value)


def format_bytes(count: int) -> str:
    """A byte count for a person: ``812 B``, ``3.4 kB``, ``12.0 MB``."""
    if count < 1000:
        return f"{count} B"
    value = float(count)
    for unit in ("kB", "MB", "GB", "TB"):
        value /= 1000
        if value < 1000 or unit == "TB":
            break
    return f"{value:.1f} {unit}"


def _size_arg(text: str) -> int:
    try:
        return parse_bytes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _duration_arg(text: str) -> Any:
    from ctxfs.lifecycle import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _idle_arg(text: str) -> Any:
    from datetime import timedelta

    if re.fullmatch(r"\s*0+\s*[wdhms]?\s*", text):
        return timedelta(0)  # no minimum: the cap may take any thread
    return _duration_arg(text)


def add_lifecycle_parsers(commands: Any) -> None:
    """Adds ``threads`` and ``gc`` to ``commands``."""
    common = argparse.ArgumentParser(add_help=False)
    add_storage_arguments(common)
    common.add_argument(
        "url", metavar="WORKSPACE", help="a folder, memory://name or s3://bucket/prefix"
    )
    common.add_argument("--json", action="store_true", help="print JSON instead of a table")
    threads = commands.add_parser(
        "threads",
        parents=[common],
        help="list the threads of a workspace with their size and last activity",
        description="Every thread that has offloaded results, inputs or transcripts in the "
        "workspace, sub-agent threads under the thread that started them, with how many "
        "files and bytes each holds and when it last wrote one.",
    )
    threads.set_defaults(handler=_threads)
    gc = commands.add_parser(
        "gc",
        parents=[common],
        help="remove whole threads past retention (a dry run unless --apply)",
        description="Remove the threads idle longer than --older-than, and/or the oldest "
        "ones until the rest hold at most --max-bytes: their results, inputs, transcripts "
        "and sub-agent threads, oldest first. Nothing a thread that stays points to is "
        "removed (a pointer, a summary, a sub-task record, long-term memory naming it). "
        "Prints the plan; deletes only with --apply.",
    )
    gc.add_argument(
        "--older-than",
        type=_duration_arg,
        metavar="DURATION",
        help="remove threads idle for longer than this: 30m, 12h, 7d, 2w, 1d12h",
    )
    gc.add_argument(
        "--max-bytes",
        type=_size_arg,
        metavar="SIZE",
        help="then remove the oldest threads until the rest hold at most this much "
        "(500000, 200MB, 2GiB)",
    )
    gc.add_argument(
        "--min-idle",
        type=_idle_arg,
        default=None,
        metavar="DURATION",
        help="--max-bytes never removes a thread active more recently than this "
        "(default 1h; 0 for no minimum)",
    )
    gc.add_argument(
        "--keep",
        action="append",
        default=[],
        metavar="THREAD",
        help="never remove this thread (repeatable)",
    )
    gc.add_argument("--apply", action="store_true", help="delete (default: only show the plan)")
    gc.set_defaults(handler=_gc)


def _threads(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from ctxfs.lifecycle import list_threads

    workspace = open_workspace(args.url, args, must_exist=True, read_only=True)
    roots = list_threads(workspace)
    now = datetime.now(UTC)
    if args.json:
        out.write(json.dumps([_thread_json(t) for t in roots], ensure_ascii=False, indent=1))
        out.write("\n")
        return 0
    if not roots:
        out.write(f"No threads in {workspace.url}\n")
        return 0
    rows = [("THREAD", "FILES", "SIZE", "LAST ACTIVITY")]
    for root in roots:
        for depth, thread in _walk(root):
            label = "  " * depth + ("└ " if depth else "") + thread.name
            if thread.subagent is not None:
                label += f" ({thread.subagent}, {thread.status or 'unknown'})"
            rows.append(
                (label, str(len(thread.files)), format_bytes(thread.bytes), _ago(thread, now))
            )
    _table(rows, out)
    total = sum(r.total_bytes for r in roots)
    count = sum(1 for r in roots for _ in r.walk())
    out.write(f"{count} thread(s), {format_bytes(total)}\n")
    return 0


def _walk(thread: ThreadInfo, depth: int = 0) -> Iterator[tuple[int, ThreadInfo]]:
    yield depth, thread
    for child in thread.children:
        yield from _walk(child, depth + 1)


def _ago(thread: ThreadInfo, now: datetime) -> str:
    from ctxfs.lifecycle import format_duration

    when = thread.last_activity
    if when is None:
        return "unknown" if thread.files else "-"
    return f"{when:%Y-%m-%d %H:%M} UTC ({format_duration(now - when)} ago)"


def _thread_json(thread: ThreadInfo) -> dict[str, Any]:
    when = thread.last_activity
    return {
        "thread": thread.name,
        "thread_id": thread.thread_id,
        "folder": thread.key,
        "parent": thread.parent_id,
        "subagent": thread.subagent,
        "status": thread.status,
        "files": len(thread.files),
        "bytes": thread.bytes,
        "total_bytes": thread.total_bytes,
        "last_activity": None if when is None else when.isoformat(),
        "children": [_thread_json(child) for child in thread.children],
    }


def _table(rows: Sequence[tuple[str, ...]], out: IO[str], *, left: int = 1) -> None:
    """Prints ``rows`` aligned: the first ``left`` columns and the last one to the left,
    the numbers between to the right."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = [
            cell.ljust(width) if i < left or i == len(row) - 1 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        out.write("  ".join(cells).rstrip() + "\n")


def _gc(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from pydantic import ValidationError

    from ctxfs.lifecycle import GarbageCollector, Retention

    if args.older_than is None and args.max_bytes is None:
        raise CliError(
            "say what is past retention: --older-than DURATION, --max-bytes SIZE, or both"
        )
    settings: dict[str, Any] = {
        "older_than": args.older_than,
        "max_bytes": args.max_bytes,
        "keep": frozenset(args.keep),
    }
    if args.min_idle is not None:
        settings["min_idle"] = args.min_idle
    try:
        retention = Retention(**settings)
    except ValidationError as exc:
        raise CliError("; ".join(e["msg"] for e in exc.errors())) from None
    workspace = open_workspace(args.url, args, must_exist=True, read_only=not args.apply)
    report = GarbageCollector(workspace, retention).run(apply=args.apply)
    if args.json:
        out.write(json.dumps(report.to_json(), ensure_ascii=False, indent=1) + "\n")
        return 0 if report.ok else 1
    plan = report.plan
    if not args.apply:
        out.write("Dry run: nothing is deleted (add --apply to delete).\n")
    rows = [("", "THREAD", "FILES", "SIZE", "WHY")]
    for collection in plan.collect:
        files = str(len(collection.files))
        size = format_bytes(collection.bytes)
        rows.append(("remove", _family(collection.thread), files, size, collection.reason))
    for kept in plan.kept:
        thread = kept.thread
        files, size = str(thread.total_files), format_bytes(thread.total_bytes)
        rows.append(("keep", _family(thread), files, size, kept.reason))
    if len(rows) > 1:
        _table(rows, out, left=2)
    verb = "freed" if args.apply else "would be freed"
    freed = report.freed_bytes if args.apply else plan.bytes_freed
    out.write(
        f"{len(plan.collect)} of {len(plan.collect) + len(plan.kept)} thread(s) past retention; "
        f"{format_bytes(freed)} {verb}, {format_bytes(plan.bytes_before - freed)} stay.\n"
    )
    for name, reason in report.skipped:
        out.write(f"left {name!r}: {reason}\n")
    for name, error in report.failed:
        err.write(f"ctxfs gc: {name!r} not finished (the next run finishes it): {error}\n")
    return 0 if report.ok else 1


def _family(thread: ThreadInfo) -> str:
    below = sum(1 for _ in thread.walk()) - 1
    return (
        thread.name
        + (f" (+{below} sub-agent)" if below == 1 else "")
        + (f" (+{below} sub-agents)" if below > 1 else "")
    )
