"""Clearing old tool results to pointers: the step between input offload and summarizing.

Most of a long agent context is old tool output the model will not look at again. In a
compaction (when the request reaches :attr:`ContextPolicy.high_water_tokens`), tool results
outside the recent window are replaced, oldest first, by a pointer of one line (wrapped
here)::

    [ctxfs: tool result cleared] 812 lines, 9,870 tokens, saved to
    /tool_results/<thread>/<call>.txt; read_file or grep it. First line: === test session…

Nothing is lost: the full text is written first, with the result-offload machinery and names
(:func:`ctxfs._layout.result_path`, create-only, read back and compared) and the message is
replaced only after that succeeded. Three kinds of result:

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

Which results: tool messages outside the kept window (:class:`~ctxfs.KeepToolResults`:
the last N results, or those in the last N tokens; results after the last AI message, which
the model has not seen yet, are always kept), from tools not in ``exempt_tools``, holding at
least ``min_tokens`` tokens, whose content is text once its media blocks are references: an
image, audio, video or file block with a base64 payload is first saved to a binary file and
replaced by a reference (:mod:`ctxfs._compaction._media`), then the result is cleared like
any other. A block without a payload (an image by URL) or of a kind ctxfs does not know
keeps its result inline.

**Prompt caching.** Providers cache a prompt by its exact prefix: a request that starts with
the same bytes as an earlier one is read from the cache (at a tenth of the price, at about a
tenth of the latency), and the first byte that differs ends the cached part. Clearing changes
old messages, so it invalidates the cache from the first cleared result onward. ctxfs keeps
that rare:

- *Sticky.* A cleared result is never restored, and its pointer is never rewritten (the
  pointer is tagged and skipped by every later pass, including summarization's). Between two
  clearings the history only grows at the end, so every request is a cache hit up to the new
  messages.
- *Batched.* A compaction plans the old results together with the old tool inputs, oldest
  first, down to the low-water mark, and applies them at once; from ``clearing.trigger``
  (below the high-water mark), a pass clears every eligible result at once, and only when
  that frees at least ``clear_at_least`` tokens and ``frees_per_rewrite`` tokens per token
  of the request after its first change (or keeps a summary away). So the prefix changes
  once per batch, not on every turn as with per-request context editing (which re-derives
  the cleared set each turn and defeats the cache).

The costs are a cache write of the suffix after the first cleared result once per batch,
against reading fewer tokens on every later request. Between compactions results are
cleared soon after they leave the kept window, while the suffix after them is short: the
write is small and the saving runs for the rest of the thread.

This module decides (pure functions, no I/O); :mod:`ctxfs._compaction._apply` saves,
verifies and replaces. Which results are pointers already is read from their structured
metadata (:func:`ctxfs._pointers._pointer.result_pointer`), never from their text.

**Cost.** With an explicit trigger, the planner runs before every model call once the trigger
is reached, and most of those passes end in "not yet". It first bounds the batch without
building a pointer: a pointer costs at least
:data:`~ctxfs._tokens.MESSAGE_OVERHEAD_TOKENS`, so the eligible results free at most their
tokens minus that. Only when that bound could reach the goal are
the pointers written out and counted exactly. Message sizes come from the token counter's
per-message cache, and only for the messages the decision looks at.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import ge
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxfs._archive._transcripts import INDEX_NAME
from ctxfs._compaction._media import media_blocks, planned_text
from ctxfs._errors import UnsafePathError
from ctxfs._layout import MEMORIES_DIR, SDK_AREAS, SESSIONS_DIR, TRANSCRIPTS_DIR, result_path
from ctxfs._messages import LayoutEntry, pair_results, saved_text, target_path_of
from ctxfs._pointers._pointer import (
    Pointer,
    PointerKind,
    brief_call,
    count_lines,
    render_cleared,
    render_reread,
)
from ctxfs._pointers._pointer import result_pointer as held_pointer
from ctxfs._policy._budget import Budget, KeepWindow
from ctxfs._policy._settings import ContextPolicy
from ctxfs._tokens import MESSAGE_OVERHEAD_TOKENS, TokenCounter
from ctxfs.sandbox import is_within, normalize_path

__all__ = [
    "ClearingKind",
    "ClearingPlan",
    "ResultToClear",
    "batch_goes",
    "kept_results",
    "plan_clearing",
    "pointer_for",
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
        offloaded: For ``"offloaded"``: the offload pointer the result holds now.
        repeat: For ``"reread"``: the call to repeat (``name`` and ``args``).
    """

    index: int
    kind: ClearingKind
    text: str
    path: str
    call: str
    tokens: int
    estimate: int
    offloaded: Pointer | None = None
    repeat: Mapping[str, Any] | None = None


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
            counted from its end; with both, the last N results within the last T tokens.

    Returns:
        The results in the window, and every result after the last AI message.
    """
    end = len(messages)
    last_ai = next((i for i in range(end - 1, -1, -1) if isinstance(messages[i], AIMessage)), -1)
    kept = {i for i in range(last_ai + 1, end) if isinstance(messages[i], ToolMessage)}
    if keep.messages is not None:
        wanted, used = keep.messages, 0
        for i in range(end - 1, -1, -1):
            if wanted <= 0:
                break
            if keep.tokens is not None:
                used += size(i)
                if used > keep.tokens:
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
    # The transcript index, long-term memory and the workflows' state files are rewritten: a
    # view of them is not stable.
    if is_within(path, TRANSCRIPTS_DIR) and posixpath.basename(path) == INDEX_NAME:
        return None
    if is_within(path, SESSIONS_DIR) or is_within(path, MEMORIES_DIR):
        return None
    return path


def plan_clearing(
    messages: Sequence[BaseMessage],
    counts: Sequence[int] | None = None,
    *,
    budget: Budget[ContextPolicy],
    counter: TokenCounter,
    thread_id: str,
    tokens: int | None = None,
    also_frees: int = 0,
    also_from: int | None = None,
    go: bool = False,
) -> ClearingPlan:
    """Decides which old tool results to clear, and whether to clear them now.

    Call it only once the history reaches the clearing trigger (``budget.clearing_trigger``).

    Args:
        messages: The history (not modified).
        counts: Tokens of every message, if already counted; otherwise ``counter`` is asked
            for the messages the decision looks at (the old, not yet cleared results and the
            kept window), which its per-message cache answers without tokenizing again.
        budget: The policy's numbers for the window.
        counter: Counts messages (see ``counts``) and the pointers, for the estimate.
        thread_id: Names the folder saved results go to.
        tokens: Tokens of the whole history, if already counted.
        also_frees: Tokens the same batch frees otherwise (old tool inputs moved with it):
            the batch goes when both together are worth the cache break.
        also_from: The first message the same batch changes otherwise (the oldest tool
            input moved with it), if any: the cache break is at the earlier of it and the
            first result cleared.
        go: The batch goes whatever it frees (another step of the same compaction already
            changes the prefix).

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
    eligible = _eligible(messages, counts, size, budget, thread_id)
    # A pointer costs at least the message overhead, so this bounds what the batch frees
    # without writing a pointer out. Between two batches most passes stop here.
    most = sum(max(0, size(i) - MESSAGE_OVERHEAD_TOKENS) for i, _, _ in eligible)
    if not go and not batch_goes(budget, tokens, len(messages), most + also_frees):
        return ClearingPlan((), 0, False)
    chosen = _estimate(messages, eligible, size, budget.policy, counter, thread_id)
    frees = sum(r.tokens - r.estimate for r in chosen)
    if not go:
        starts = [i for i in (chosen[0].index if chosen else None, also_from) if i is not None]
        # what the provider writes to its cache again: the request from the first change on
        first = min(starts, default=len(messages))
        after = counts[first:] if counts is not None else map(size, range(first, len(messages)))
        rewrite = sum(after) - frees - also_frees
        if not batch_goes(budget, tokens, len(messages), frees + also_frees, rewrite):
            return ClearingPlan((), 0, False)
    return ClearingPlan(tuple(chosen), frees, True)


def _eligible(
    messages: Sequence[BaseMessage],
    counts: Sequence[int] | None,
    size: Callable[[int], int],
    budget: Budget[ContextPolicy],
    thread_id: str,
) -> list[tuple[int, str, Pointer | None]]:
    """The old results clearing may take, with their text and the pointer they hold (for a
    result with media blocks, its text once they are references)."""
    settings = budget.policy.clearing
    kept = kept_results(messages, size, budget.clearing_keep)
    eligible: list[tuple[int, str, Pointer | None]] = []
    # Large enough first: this runs on most calls, and with the counts at hand the small
    # messages (most of a history) are passed over in C.
    large: Iterable[int] = range(len(messages))
    if counts is not None:
        large = compress(large, map(ge, counts, repeat(settings.min_tokens)))
    for i in large:
        message = messages[i]
        if not isinstance(message, ToolMessage) or i in kept:
            continue
        if size(i) < settings.min_tokens or message.name in settings.exempt_tools:
            continue
        text = saved_text(message.content)
        if media_blocks(message.content):  # the text once they are references
            planned = planned_text(message.content, thread_id, message.tool_call_id)
            text = saved_text(planned) if planned is not None else None
        if text is None:
            continue
        held = held_pointer(message)
        if held is not None and held.kind != "result":
            continue  # cleared results are never cleared again
        eligible.append((i, text, held))
    return eligible


def pointer_for(
    item: ResultToClear,
    path: str,
    full: str,
    tokens: int,
    *,
    tool_call_id: str = "",
    shape: tuple[LayoutEntry, ...] = (),
) -> tuple[Pointer, str]:
    """Returns the pointer clearing leaves for ``item`` and its text.

    Args:
        item: The result.
        path: The path it names (where the full text is saved, or what a re-read showed).
        full: The full text (for a re-read: the view itself).
        tokens: Tokens of ``full``.
        tool_call_id: The call the result answers.
        shape: How the original content was laid out (see :attr:`Pointer.shape`).
    """
    kind: PointerKind = "reread" if item.kind == "reread" else "cleared"
    pointer = Pointer(
        kind=kind,
        path=path,
        lines=count_lines(full),
        chars=len(full),
        tokens=tokens,
        tool_call_id=tool_call_id,
        call=item.repeat,
        shape=shape,
    )
    if kind == "reread":
        return pointer, render_reread(pointer, call=item.call)
    return pointer, render_cleared(pointer, full, call=item.call)


def _estimate(
    messages: Sequence[BaseMessage],
    eligible: Sequence[tuple[int, str, Pointer | None]],
    size: Callable[[int], int],
    policy: ContextPolicy,
    counter: TokenCounter,
    thread_id: str,
) -> list[ResultToClear]:
    """Writes out and counts the pointer of each eligible result; keeps those it shrinks."""
    calls = pair_results(messages).calls
    chosen: list[ResultToClear] = []
    for i, text, held in eligible:
        message = messages[i]
        assert isinstance(message, ToolMessage)
        tokens = size(i)
        call = calls[i][1] if i in calls else None
        name = message.name or (call["name"] if call is not None else None)
        args = call["args"] if call is not None else None
        view = (
            _saved_view(call) if held is None and name in policy.clearing.recovery_tools else None
        )
        if held is not None:
            brief = brief_call(name, args)
            item = ResultToClear(i, "offloaded", text, held.path, brief, tokens, 0, held)
        elif view is not None:
            # the pointer tells the model to repeat the call: show it whole where it can be
            brief = brief_call(name, args, width=_REREAD_WIDTH, value_width=_REREAD_WIDTH)
            repeat = {"name": name, "args": dict(args or {})}
            item = ResultToClear(i, "reread", text, view, brief, tokens, 0, repeat=repeat)
        else:
            brief = brief_call(name, args)
            path = result_path(thread_id, message.tool_call_id, text)
            item = ResultToClear(i, "saved", text, path, brief, tokens, 0)
        estimate = MESSAGE_OVERHEAD_TOKENS + counter.count_text(_estimated_text(item))
        if estimate >= tokens:
            continue  # the pointer would not be smaller
        chosen.append(_with_estimate(item, estimate))
    return chosen


def _estimated_text(item: ResultToClear) -> str:
    # Exact for saved results and re-reads; for an offloaded result the sizes and head line
    # of its file are not read until it is cleared, and the pointer's own stand in.
    return pointer_for(item, item.path, item.text, item.tokens)[1]


def _with_estimate(item: ResultToClear, estimate: int) -> ResultToClear:
    return ResultToClear(
        item.index,
        item.kind,
        item.text,
        item.path,
        item.call,
        item.tokens,
        estimate,
        item.offloaded,
        item.repeat,
    )


def batch_goes(
    budget: Budget[ContextPolicy], tokens: int, messages: int, frees: int, rewrite: int = 0
) -> bool:
    """Whether a batch freeing ``frees`` tokens is worth the cache break now.

    It is when it frees at least ``clear_at_least`` tokens and at least
    ``frees_per_rewrite`` tokens for each of the ``rewrite`` tokens the provider must then
    write to its cache again (the request from the batch's first change on, once applied),
    or when it is what keeps a summary away. Monotone in ``frees``: true for some batch, it
    is true for every larger one with the same ``rewrite``.
    """
    ratio = budget.policy.clearing.frees_per_rewrite
    return frees > 0 and (
        (frees >= budget.clear_at_least and frees >= ratio * rewrite)
        or (
            budget.summary_fires(tokens, messages)
            and not budget.summary_fires(tokens - frees, messages)
        )
    )
