"""Where a conversation may be cut: atomic blocks of messages, and the choice of a cut point.

A history is split into consecutive blocks; summarization only ever cuts *between* blocks::

    [system ...] [summary] [block] [block] ... [block]
     prefix       prefix    ------- may be dropped, oldest first --------

Rules, in order:

- **Prefix.** The leading system message(s) form one ``"system"`` block that always stays
  first and untouched. A ctxfs summary right after it (see
  :func:`ctxfs._summary._message.is_summary`) is a ``"summary"`` block: it is folded into the
  next summary rather than archived again. The messages that summary put back after itself
  (pinned user messages, the plan, the notes: :mod:`ctxfs._summary._pins`) are ``"pinned"``
  blocks of the prefix: the next summary builds them anew.
- **Tool exchanges.** An AI message with tool calls and *all* of its tool results form one
  ``"tool_exchange"`` block. A result answers the earliest still-open call with its id, so
  duplicate ids pair in order. When results interleave across AI messages (AI1 calls a, b;
  AI2 calls c; results a, c, b) the exchanges overlap and merge into one block, which closes
  only when every answered call is covered. Anything between a call and its last result
  (even a human message) belongs to the block.
- **Calls without results** (a final ``submit``, a run cut off, the turn now running) do not
  hold a block open: the block ends at the last result it does have (or at the AI message
  itself). The unanswered ids are listed in :attr:`Block.unanswered`; such a call was
  already dangling in the input, and no cut makes it more so.
- **Results without a call** (an orphan, already invalid in the input) join the block before
  them, so a cut never makes a kept list *start* with a tool result. An orphan right after
  the prefix is a block of its own. Their indices are listed in :attr:`Block.orphans`.
- Every other message is a ``"message"`` block of one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage

from ctxfs._messages import pair_results
from ctxfs._policy._budget import KeepWindow
from ctxfs._summary._message import is_summary
from ctxfs._summary._pins import in_view_kind

__all__ = ["Block", "BlockKind", "choose_cut", "prefix_end", "split_blocks"]

BlockKind = Literal["system", "summary", "pinned", "tool_exchange", "message"]


@dataclass(frozen=True, slots=True)
class Block:
    """A run of messages that a cut never separates.

    Attributes:
        start: Index of the first message.
        stop: Index after the last message.
        kind: ``"system"``, ``"summary"``, ``"tool_exchange"`` or ``"message"``.
        unanswered: Tool-call ids opened in the block that no result answers.
        orphans: Indices of tool results in the block that answer no call.
    """

    start: int
    stop: int
    kind: BlockKind
    unanswered: tuple[str, ...] = ()
    orphans: tuple[int, ...] = ()

    def __len__(self) -> int:
        return self.stop - self.start


def split_blocks(messages: Sequence[BaseMessage]) -> list[Block]:
    """Splits a history into consecutive atomic blocks (see the module docstring).

    Args:
        messages: A conversation, oldest first. Not modified.

    Returns:
        Blocks that together cover every index exactly once, in order.
    """
    n = len(messages)
    blocks: list[Block] = []
    system_end = 0
    while system_end < n and isinstance(messages[system_end], SystemMessage):
        system_end += 1
    if system_end:
        blocks.append(Block(0, system_end, "system"))

    reach = list(range(system_end + 1, n + 1))  # reach[i - system_end]: end of i's span
    pairing = pair_results(messages, system_end)
    for result, (owner, _) in pairing.calls.items():
        reach[owner - system_end] = max(reach[owner - system_end], result + 1)
    orphans = set(pairing.orphans)
    opened: dict[int, list[str]] = {}
    for i in range(system_end, n):
        message = messages[i]
        if isinstance(message, AIMessage) and message.tool_calls:
            opened[i] = [call.get("id") or "" for call in message.tool_calls]
    unanswered_at: dict[int, list[str]] = {}
    for owner, call_id in pairing.unanswered:
        unanswered_at.setdefault(owner, []).append(call_id)

    i = system_end
    while i < n:
        stop = reach[i - system_end]
        j = i
        while j < stop:  # overlapping exchanges merge
            stop = max(stop, reach[j - system_end])
            j += 1
        members = range(i, stop)
        block_orphans = tuple(k for k in members if k in orphans)
        unanswered = tuple(
            call_id
            for k in members
            for call_id in opened.get(k, ())
            if call_id in unanswered_at.get(k, ())
        )
        if any(k in opened for k in members):
            kind: BlockKind = "tool_exchange"
        elif i == system_end and stop == i + 1 and is_summary(messages[i]):
            kind = "summary"
        elif (
            stop == i + 1
            and blocks
            and blocks[-1].kind in ("summary", "pinned")
            and in_view_kind(messages[i]) is not None
        ):
            kind = "pinned"
        else:
            kind = "message"
        block = Block(i, stop, kind, _dedupe(unanswered), block_orphans)
        previous = blocks[-1] if blocks else None
        if (
            kind == "message"
            and block_orphans == (i,)
            and stop == i + 1
            and previous is not None
            and previous.kind not in ("system", "summary", "pinned")
        ):
            block = Block(
                previous.start,
                stop,
                previous.kind,
                previous.unanswered,
                (*previous.orphans, i),
            )
            blocks[-1] = block
        else:
            blocks.append(block)
        i = stop
    return blocks


def _dedupe(ids: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(ids))


def prefix_end(blocks: Sequence[Block]) -> int:
    """Returns the index after the protected prefix: the system block, a leading summary and
    what that summary put back after itself (pinned messages, the plan, the notes)."""
    end = 0
    for block in blocks:
        if block.kind == "system" or (block.kind in ("summary", "pinned") and block.start == end):
            end = block.stop
        else:
            break
    return end


def choose_cut(
    blocks: Sequence[Block],
    tokens: Sequence[int],
    keep: KeepWindow,
    *,
    at_most: int | None = None,
) -> int:
    """Returns the index of the first kept message: a block boundary at or after the prefix.

    Messages from :func:`prefix_end` up to the cut are dropped (archived and summarized);
    messages from the cut on are the protected recent window.

    Args:
        blocks: From :func:`split_blocks`.
        tokens: The token count of every message (same indexing as the history).
        keep: The recent window to protect.
        at_most: If set, the window is narrowed (to whole blocks) until it holds at most this
            many messages, but it always keeps the most recent block unless ``keep`` keeps
            nothing. Compaction sets it from a ``messages`` trigger, so that a summary leaves
            room for many new messages before the next one.

    Returns:
        The cut index; equal to :func:`prefix_end` when nothing can be dropped.
    """
    cut = _keep_cut(blocks, tokens, keep)
    n = blocks[-1].stop if blocks else 0
    if at_most is None or n - cut <= at_most:
        return cut
    latest = blocks[-1].start  # kept even if it alone holds more than at_most
    return max(cut, next((b.start for b in blocks if b.start >= n - at_most), latest))


def _keep_cut(blocks: Sequence[Block], tokens: Sequence[int], keep: KeepWindow) -> int:
    first = prefix_end(blocks)
    n = blocks[-1].stop if blocks else 0
    movable = [b for b in blocks if b.start >= first]
    if not movable:
        return first
    if keep.messages is not None:
        if keep.messages == 0:
            return n
        boundary = n - keep.messages
        cut = first
        for block in movable:
            if block.start <= boundary:
                cut = block.start
        return max(cut, first)
    budget = keep.tokens if keep.tokens is not None else 0
    cut = movable[-1].start  # the most recent block is always kept
    used = sum(tokens[cut:n])
    for block in reversed(movable[:-1]):
        size = sum(tokens[block.start : block.stop])
        if used + size > budget:
            break
        used += size
        cut = block.start
    return cut
