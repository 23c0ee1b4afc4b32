"""Clearing old tool results to pointers: the step between input offload and summarizing.

Most of a long agent context is old tool output the model will not look at again. Once the
history reaches :attr:`ContextPolicy.clearing_trigger_tokens`, every tool result outside the
recent window is replaced by a pointer of four lines::

    [ctxfs: tool result cleared] The full result was saved to /tool_results/<thread>/<call>.txt
    (812 lines, 40,114 characters, 9,870 tokens).
    Call: bash(command="pytest -x tests/")
    Head: ============================= test session starts ==============================
    Read it with read_file (offset, limit) or search it with grep.

(the first two lines are one line). Nothing is lost: the full text is written first, with the
result-offload machinery and names (:func:`ctxfs.offload.result_path`, create-only, read back
and compared) and the message is replaced only after that succeeded. Three kinds of result:

- **saved** -- an ordinary result: its text is saved now, then cleared.
- **offloaded** -- already an offload pointer (step 1): cleared to the short pointer naming
  the same file, after checking the file is there with the size the pointer gave. No new file.
- **reread** -- a recovery tool (``read_file``, ``grep``, ... see
  :attr:`ToolResultClearing.recovery_tools`) showing a file or folder of the SDK's areas
  (``/tool_results``, ``/tool_inputs``, a transcript segment): a view of content ctxfs has
  already saved, which is never rewritten. It is cleared to a pointer naming that path and
  the call, and nothing is saved: reading an offloaded file back never produces another copy.
  Repeating the call shows the same text again (for a folder, files saved since may add
  matches; every line it showed is still in those files).

Which results: tool messages outside the kept window (:class:`~ctxfs.policy.KeepToolResults`:
the last N results, or those in the last N tokens; results after the last AI message, which
the model has not seen yet, are always kept), from tools not in ``exempt_tools``, holding at
least ``min_tokens`` tokens, whose content is text (image or other non-text blocks stay).

**Prompt caching.** Providers cache a prompt by its exact prefix: a request that starts with
the same bytes as an earlier one is read from the cache (at a tenth of the price, at about a
tenth of the latency), and the first byte that differs ends the cached part. Clearing changes
old messages, so it invalidates the cache from the first cleared result onward. ctxfs keeps
that rare:

- *Sticky.* A cleared result is never restored, and its pointer is never rewritten (the
  pointer is tagged and skipped by every later pass, including summarization's). Between two
  clearings the history only grows at the end, so every request is a cache hit up to the new
  messages.
- *Batched.* A pass clears every eligible result at once, and only when that frees at least
  ``clear_at_least`` tokens (default 10 % of the window) -- or when it is what keeps a summary
  away, since a summary rewrites far more. A smaller batch waits while the window slides and
  more results become old. So the prefix changes once per ``clear_at_least`` tokens of old
  output, not on every turn as with per-request context editing (which re-derives the
  cleared set each turn and defeats the cache).

The costs are a cache write of the suffix after the first cleared result once per batch,
against reading ``clear_at_least`` fewer tokens on every later request.

This module decides (pure functions, no I/O); :meth:`ContextEngine.clear_tool_results` saves,
verifies and replaces.
"""

from __future__ import annotations

import posixpath
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxfs.archive import INDEX_NAME
from ctxfs.blocks import KeepWindow
from ctxfs.compaction import trigger_fires
from ctxfs.errors import UnsafePathError
from ctxfs.layout import SDK_AREAS, TRANSCRIPTS_DIR
from ctxfs.offload import (
    RESULT_TAG,
    brief_call,
    cleared_pointer,
    is_cleared,
    offloadable_text,
    pointer_path,
    reread_pointer,
    result_path,
    result_pointer_stats,
    target_path_of,
)
from ctxfs.policy import ContextPolicy
from ctxfs.sandbox import is_within, normalize_path
from ctxfs.tokens import MESSAGE_OVERHEAD_TOKENS, TokenCounter

__all__ = [
    "ClearingKind",
    "ClearingPlan",
    "ResultToClear",
    "answered_calls",
    "kept_results",
    "plan_clearing",
]

_REREAD_WIDTH = 400

ClearingKind = Literal["saved", "offloaded", "reread"]
"""How a result is cleared (see the module docstring)."""


@dataclass(frozen=True, slots=True)
class ResultToClear:
    """One tool result a clearing pass replaces.

    Attributes:
        index: Its position in the history.
        kind: ``"saved"``, ``"offloaded"`` or ``"reread"``.
        text: The message's text now (the full result, an offload pointer, or the view).
        path: The first-choice file for a saved result, the offloaded file, or the saved
            file or folder a re-read showed.
        call: The call that produced it, in brief.
        tokens: The message's tokens now.
        estimate: Tokens of the message once cleared (exact unless a path is taken).
    """

    index: int
    kind: ClearingKind
    text: str
    path: str
    call: str
    tokens: int
    estimate: int


@dataclass(frozen=True, slots=True)
class ClearingPlan:
    """What a clearing pass would do, decided before anything is written.

    Attributes:
        results: The results to clear, oldest first (all eligible ones).
        frees: Tokens the batch frees (estimated).
        go: Whether to clear now: the batch frees at least ``clear_at_least`` tokens, or it
            is what keeps a summary away.
    """

    results: tuple[ResultToClear, ...]
    frees: int
    go: bool


def answered_calls(messages: Sequence[BaseMessage]) -> dict[int, Mapping[str, Any]]:
    """Maps the index of each tool result to the call it answers (the earliest open one)."""
    pending: dict[str, deque[Mapping[str, Any]]] = {}
    calls: dict[int, Mapping[str, Any]] = {}
    for i, message in enumerate(messages):
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                pending.setdefault(call.get("id") or "", deque()).append(call)
        elif isinstance(message, ToolMessage):
            queue = pending.get(message.tool_call_id)
            if queue:
                calls[i] = queue.popleft()
    return calls


def kept_results(
    messages: Sequence[BaseMessage], counts: Sequence[int], keep: KeepWindow
) -> set[int]:
    """Returns the indices of the tool results clearing must leave alone.

    Args:
        messages: The history.
        counts: Tokens of every message.
        keep: ``messages`` is a number of tool results; ``tokens`` a share of the history
            counted from its end.

    Returns:
        The results in the window, and every result after the last AI message.
    """
    kept: set[int] = set()
    last_ai = max((i for i, m in enumerate(messages) if isinstance(m, AIMessage)), default=-1)
    results = [i for i, m in enumerate(messages) if isinstance(m, ToolMessage)]
    kept.update(i for i in results if i > last_ai)
    if keep.messages is not None:
        if keep.messages:
            kept.update(results[-keep.messages :])
        return kept
    budget = keep.tokens or 0
    used = 0
    for i in range(len(messages) - 1, -1, -1):
        used += counts[i]
        if used > budget:
            break
        if isinstance(messages[i], ToolMessage):
            kept.add(i)
    return kept


def _saved_view(call: Mapping[str, Any] | None) -> str | None:
    """The SDK file or folder a recovery call read, if it read one; else ``None``."""
    raw = target_path_of(call["args"]) if call is not None else None
    if raw is None:
        return None
    try:
        path = normalize_path(raw)
    except UnsafePathError:
        return None
    if any(ch.isspace() for ch in path) or not any(is_within(path, a) for a in SDK_AREAS):
        return None
    # The transcript index is the one SDK file that is rewritten: a view of it is not stable.
    if is_within(path, TRANSCRIPTS_DIR) and posixpath.basename(path) == INDEX_NAME:
        return None
    return path


def _kind(
    text: str, call: Mapping[str, Any] | None, name: str | None, policy: ContextPolicy
) -> tuple[ClearingKind, str | None]:
    if text.startswith(RESULT_TAG):
        path = pointer_path(text)
        if path is not None and result_pointer_stats(text) is not None:
            return "offloaded", path
    if name in policy.clearing.recovery_tools:
        view = _saved_view(call)
        if view is not None:
            return "reread", view
    return "saved", None


def plan_clearing(
    messages: Sequence[BaseMessage],
    counts: Sequence[int],
    *,
    policy: ContextPolicy,
    counter: TokenCounter,
    thread_id: str,
) -> ClearingPlan:
    """Decides which old tool results to clear, and whether to clear them now.

    Call it only once the history reaches :attr:`ContextPolicy.clearing_trigger_tokens`.

    Args:
        messages: The history (not modified).
        counts: Tokens of every message.
        policy: The settings.
        counter: Counts the pointers, for the estimate.
        thread_id: Names the folder saved results go to.

    Returns:
        Every eligible result, what clearing them frees, and whether to go ahead.
    """
    settings = policy.clearing
    kept = kept_results(messages, counts, policy.clearing_keep)
    calls = answered_calls(messages)
    chosen: list[ResultToClear] = []
    for i, message in enumerate(messages):
        if not isinstance(message, ToolMessage) or i in kept:
            continue
        if message.name in settings.exempt_tools or counts[i] < settings.min_tokens:
            continue
        text = offloadable_text(message.content)
        if text is None or is_cleared(text):
            continue
        call = calls.get(i)
        kind, path = _kind(text, call, message.name, policy)
        name = message.name or (call["name"] if call is not None else None)
        args = call["args"] if call is not None else None
        if kind == "reread":
            assert path is not None
            # the pointer tells the model to repeat the call: show it whole where it can be
            brief = brief_call(name, args, width=_REREAD_WIDTH, value_width=_REREAD_WIDTH)
            pointer = reread_pointer(path, text, tokens=counts[i], call=brief)
        else:
            brief = brief_call(name, args)
            path = path or result_path(thread_id, message.tool_call_id, text)
            pointer = cleared_pointer(path, text, tokens=counts[i], call=brief)
        estimate = MESSAGE_OVERHEAD_TOKENS + counter.count_text(pointer)
        if estimate >= counts[i]:
            continue  # the pointer would not be smaller
        chosen.append(ResultToClear(i, kind, text, path, brief, counts[i], estimate))
    frees = sum(r.tokens - r.estimate for r in chosen)
    tokens = sum(counts)
    go = frees > 0 and (
        frees >= policy.clear_at_least_tokens
        or (
            trigger_fires(policy, tokens, len(messages))
            and not trigger_fires(policy, tokens - frees, len(messages))
        )
    )
    return ClearingPlan(tuple(chosen), frees, go)
