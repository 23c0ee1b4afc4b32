"""Workspace lifecycle: the threads a workspace holds, and garbage collection of old ones.

Everything ctxfs moves out of a context stays in the workspace: offloaded results and inputs,
transcripts, sub-agent threads. This layer lists it by thread and removes whole threads past
retention, without ever deleting what a thread that stays still points to.

- :func:`list_threads`: the threads, sub-agent threads under their parents, with their size
  (:class:`ThreadInfo`) and last activity.
- :class:`GarbageCollector`: plans (:class:`GcPlan`: what goes, what stays and why) and, on
  request, applies a collection (:class:`GcReport`) by the :class:`Retention` settings
  (``older_than``, ``max_bytes``). Safe to stop at any point; the next run finishes it.
  :func:`collect_garbage` does it in one call.
- What keeps a thread is decided by rules (:data:`RetentionRule`): :func:`pointer_rule`
  (pointers in its transcripts), :func:`memory_rule` (long-term memory naming it),
  :func:`messages_rule` (the messages in an agent's state), or your own.
- :func:`list_files` (:class:`StampedFile`): the files below a folder with their
  modification times; :func:`parse_duration` reads ``7d``, ``12h``, ``30m``.

The command line has the same: ``ctxfs threads WORKSPACE`` and ``ctxfs gc WORKSPACE
--older-than 7d [--max-bytes N] [--apply]``.
"""

from __future__ import annotations

from ctxfs.lifecycle._collect import GarbageCollector, GcReport, collect_garbage
from ctxfs.lifecycle._files import FileLister, StampedFile, list_files
from ctxfs.lifecycle._plan import Collection, GcPlan, Kept
from ctxfs.lifecycle._retention import Retention, format_duration, parse_duration
from ctxfs.lifecycle._rules import (
    DEFAULT_RULES,
    Reference,
    RetentionRule,
    RuleContext,
    memory_rule,
    messages_rule,
    pointer_rule,
)
from ctxfs.lifecycle._threads import ThreadInfo, list_threads

__all__ = [
    "DEFAULT_RULES",
    "Collection",
    "FileLister",
    "GarbageCollector",
    "GcPlan",
    "GcReport",
    "Kept",
    "Reference",
    "Retention",
    "RetentionRule",
    "RuleContext",
    "StampedFile",
    "ThreadInfo",
    "collect_garbage",
    "format_duration",
    "list_files",
    "list_threads",
    "memory_rule",
    "messages_rule",
    "parse_duration",
    "pointer_rule",
]
