"""Where ctxfs keeps what it takes out of the context, inside a workspace.

The areas are ordinary visible folders at the top of the workspace, not dot-folders, so
``ls /`` shows them and ``grep`` from ``/`` searches them. They are read-only to the agent's
tools: only the SDK writes there, create-only, except two kinds of files it rewrites
atomically: each thread's transcript index, and the long-term memory documents under
``/memories/`` (rewritten by compare-and-swap, see :mod:`ctxfs.memory`).
"""

from __future__ import annotations

__all__ = ["INPUTS_DIR", "MEMORIES_DIR", "RESULTS_DIR", "SDK_AREAS", "TRANSCRIPTS_DIR"]

RESULTS_DIR = "/tool_results"
"""Full text of large tool results, one file per tool call, per thread."""

INPUTS_DIR = "/tool_inputs"
"""Byte-exact copies of large tool-call arguments (write/edit contents), per thread."""

TRANSCRIPTS_DIR = "/transcripts"
"""Archived conversation segments (JSONL + Markdown) and their index, per thread."""

MEMORIES_DIR = "/memories"
"""Long-term memory: one JSON document and its Markdown rendering per namespace."""

SDK_AREAS: tuple[str, ...] = (RESULTS_DIR, INPUTS_DIR, TRANSCRIPTS_DIR, MEMORIES_DIR)
"""All areas the SDK writes; the agent's tools treat them as read-only."""
