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

**Cost.** The planner runs before every model call once the trigger is reached, and most of
those passes end in "not yet". It first bounds the batch without building a pointer: a
pointer costs at least :data:`~ctxfs.tokens.MESSAGE_OVERHEAD_TOKENS`, so the eligible
results free at most their tokens minus that. Only when that bound could reach the goal are
the pointers written out and counted exactly. Message sizes come from the token counter's
per-message cache, and only for the messages the decision looks at.
"""

from __future__ import annotations

import posixpath
from collections import deque
from collections.abc import Callable, Mapping, Sequence
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
        results: The results to clear, oldest first (all eligible ones); empty when the pass
            waits.
        frees: Tokens the batch frees (estimated); 0 when the pass waits.
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
    messages: Sequence[BaseMessage], size: Callable[[int], int], keep: KeepWindow
) -> set[int]:
    """Returns the indices of the tool results clearing must leave alone.

    Only the end of the history is looked at: the kept window and what follows the last AI
    message.

    Args:
        messages: The history.
        size: Returns the tokens of the message at an index (called only for the messages
            a ``tokens`` window covers, and the one that overflows it).
        keep: ``messages`` is a number of tool results; ``tokens`` a share of the history
            counted from its end.

    Returns:
        The results in the window, and every result after the last AI message.
    """
    end = len(messages)
    last_ai = next((i for i in range(end - 1, -1, -1) if isinstance(messages[i], AIMessage)), -1)
    kept = {i for i in range(last_ai + 1, end) if isinstance(messages[i], ToolMessage)}
    if keep.messages is not None:
        wanted = keep.messages
        for i in range(end - 1, -1, -1):
            if wanted <= 0:
                break
            if isinstance(messages[i], ToolMessage):
                kept.add(i)
                wanted -= 1
        return kept
    budget = keep.tokens or 0
    used = 0
    for i in range(end - 1, -1, -1):
        used += size(i)
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
    counts: Sequence[int] | None = None,
    *,
    policy: ContextPolicy,
    counter: TokenCounter,
    thread_id: str,
    tokens: int | None = None,
) -> ClearingPlan:
    """Decides which old tool results to clear, and whether to clear them now.

    Call it only once the history reaches :attr:`ContextPolicy.clearing_trigger_tokens`.

    Args:
        messages: The history (not modified).
        counts: Tokens of every message, if already counted; otherwise ``counter`` is asked
            for the messages the decision looks at (the old, not yet cleared results and the
            kept window), which its per-message cache answers without tokenizing again.
        policy: The settings.
        counter: Counts messages (see ``counts``) and the pointers, for the estimate.
        thread_id: Names the folder saved results go to.
        tokens: Tokens of the whole history, if already counted.

    Returns:
        Every eligible result, what clearing them frees, and whether to go ahead; a plan
        that waits holds no results.
    """
    if counts is not None:
        size: Callable[[int], int] = counts.__getitem__
    else:

        def size(i: int) -> int:
            return counter.count_message(messages[i])

    if tokens is None:
        tokens = sum(counts) if counts is not None else counter.count_messages(messages)
    eligible = _eligible(messages, size, policy)
    # A pointer costs at least the message overhead, so this bounds what the batch frees
    # without writing a pointer out. Between two batches most passes stop here.
    most = sum(max(0, size(i) - MESSAGE_OVERHEAD_TOKENS) for i, _ in eligible)
    if not _goes(policy, tokens, len(messages), most):
        return ClearingPlan((), 0, False)
    chosen = _estimate(messages, eligible, size, policy, counter, thread_id)
    frees = sum(r.tokens - r.estimate for r in chosen)
    if not _goes(policy, tokens, len(messages), frees):
        return ClearingPlan((), 0, False)
    return ClearingPlan(tuple(chosen), frees, True)


def _eligible(
    messages: Sequence[BaseMessage], size: Callable[[int], int], policy: ContextPolicy
) -> list[tuple[int, str]]:
    """The old results clearing may take, with their text: cheap checks first, size last."""
    settings = policy.clearing
    kept = kept_results(messages, size, policy.clearing_keep)
    eligible: list[tuple[int, str]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, ToolMessage) or i in kept:
            continue
        if message.name in settings.exempt_tools:
            continue
        text = offloadable_text(message.content)
        if text is None or is_cleared(text) or size(i) < settings.min_tokens:
            continue
        eligible.append((i, text))
    return eligible


def _estimate(
    messages: Sequence[BaseMessage],
    eligible: Sequence[tuple[int, str]],
    size: Callable[[int], int],
    policy: ContextPolicy,
    counter: TokenCounter,
    thread_id: str,
) -> list[ResultToClear]:
    """Writes out and counts the pointer of each eligible result; keeps those it shrinks."""
    calls = answered_calls(messages)
    chosen: list[ResultToClear] = []
    for i, text in eligible:
        message = messages[i]
        assert isinstance(message, ToolMessage)
        tokens = size(i)
        call = calls.get(i)
        kind, path = _kind(text, call, message.name, policy)
        name = message.name or (call["name"] if call is not None else None)
        args = call["args"] if call is not None else None
        if kind == "reread":
            assert path is not None
            # the pointer tells the model to repeat the call: show it whole where it can be
            brief = brief_call(name, args, width=_REREAD_WIDTH, value_width=_REREAD_WIDTH)
            pointer = reread_pointer(path, text, tokens=tokens, call=brief)
        else:
            brief = brief_call(name, args)
            path = path or result_path(thread_id, message.tool_call_id, text)
            pointer = cleared_pointer(path, text, tokens=tokens, call=brief)
        estimate = MESSAGE_OVERHEAD_TOKENS + counter.count_text(pointer)
        if estimate >= tokens:
            continue  # the pointer would not be smaller
        chosen.append(ResultToClear(i, kind, text, path, brief, tokens, estimate))
    return chosen


def _goes(policy: ContextPolicy, tokens: int, messages: int, frees: int) -> bool:
    """Whether a batch freeing ``frees`` tokens is worth the cache break now.

    Monotone in ``frees``: true for some batch, it is true for every larger one.
    """
    return frees > 0 and (
        frees >= policy.clear_at_least_tokens
        or (
            trigger_fires(policy, tokens, messages)
            and not trigger_fires(policy, tokens - frees, messages)
        )
    )
