"""Helpers of the integration tests: a large tool, a small one, checkpoint search."""

from __future__ import annotations

from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.base import BaseCheckpointSaver

MARKER = "UNIQUE-TAIL-MARKER-7f3a"
"""Planted on the last line of the large report: past any preview, so only the file has it."""

MIDDLE = "line 1500 status=ok"
"""A line in the middle of the report that no preview and no read-back page shows."""


def report_text(lines: int = 3000) -> str:
    """A large tool result (about 35k tokens) whose last line holds :data:`MARKER`."""
    body = [f"line {i} status=ok latency_ms={i * 7 % 1000}" for i in range(lines - 1)]
    return "\n".join([*body, f"line {lines - 1} status=FAILED {MARKER}"])


@tool
def big_report() -> str:
    """Returns the full service report (large)."""
    return report_text()


@tool
def small_status() -> str:
    """Returns a one-line status."""
    return "status: ok"


def checkpoint_blobs(saver: BaseCheckpointSaver[str], thread_id: str) -> str:
    """The text of every checkpoint and pending write stored for a thread."""
    parts: list[str] = []
    for item in saver.list({"configurable": {"thread_id": thread_id}}):
        parts.append(repr(item.checkpoint["channel_values"]))
        parts.extend(repr(write) for write in item.pending_writes or [])
    return "\n".join(parts)


TOOLS: list[BaseTool] = [big_report, small_status]
