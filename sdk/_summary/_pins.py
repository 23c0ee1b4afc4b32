"""What a summary puts back in view: the user's words verbatim, the plan, the agent's notes.

A summary replaces older messages with its text; what the agent needs to stay on task must
not depend on how that text paraphrases them. So right after the summary come:

1. **Pinned user messages**: copies of archived user messages, verbatim (content and all),
   each its own message; the originals stay in the transcript, byte-exact. The first user
   message (the task statement) is kept whenever the request can hold it; the others newest
   first within the pinning budget.
2. **One in-view message**: a line for each user message that did not fit (where its
   archived copy is, its first words, never a paraphrase; the oldest counted in one line),
   the plan rendered from the live todo state handed to the compaction (never from the
   summary) in a ``<plan>`` section, and the agent's notes file, capped, in ``<notes>``.

Each carries ``additional_kwargs["ctxfs"]`` saying what it is (``kind``: ``"pinned"`` or
``"in_view"``) with a digest of its text, so only what ctxfs wrote, as it wrote it, is
recognised: the next summary drops them from the prefix (a pin's original is already
archived) and builds them anew. Anything else is content. A pin's text is the user's own
words, sent as the user's message as before; only the in-view message quotes other text,
through :mod:`ctxfs._sections`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeGuard

from langchain_core.messages import BaseMessage, HumanMessage

from ctxfs._layout import safe_name
from ctxfs._messages import message_text
from ctxfs._pointers._pointer import digest
from ctxfs._sections import attribute, one_line, section
from ctxfs._tokens import TokenCounter

__all__ = [
    "IN_VIEW_KINDS",
    "Candidate",
    "Earlier",
    "in_view_kind",
    "in_view_message",
    "is_pinned",
    "notes_text",
    "recalled",
    "render_plan",
    "select_pins",
    "user_candidates",
]

IN_VIEW_KINDS = frozenset({"pinned", "in_view"})
"""The kinds of message a summary puts back after itself."""

_HEAD_CHARS = 80


@dataclass(frozen=True, slots=True)
class Candidate:
    """A user message that may be pinned: where its original is, and what of it is at hand.

    Attributes:
        index: Position of the original in the thread.
        segment: The transcript segment holding the original (``.jsonl``).
        first: Whether it is the thread's first user message (the task statement).
        message: The original message (content untouched), or ``None`` when an earlier
            summary already left only a pointer to it.
        head: Its first words, as a pointer shows them.
        position: Its number in the segment, as ``history_read`` counts (from 0), or
            ``None`` where that is not known (a pointer recorded without it).
    """

    index: int
    segment: str
    first: bool = False
    message: BaseMessage | None = None
    head: str = ""
    position: int | None = None


@dataclass(frozen=True, slots=True)
class Earlier:
    """User messages counted in one line, not pointed to one by one."""

    count: int = 0
    first_index: int = 0
    last_index: int = 0
    segments: tuple[str, ...] = ()


def in_view_kind(message: BaseMessage) -> str | None:
    """The kind of a message a summary put back (see the module docstring), or ``None``."""
    data = _verified(message)
    return None if data is None else str(data["kind"])


def is_pinned(message: BaseMessage) -> bool:
    """Whether a summary put ``message`` back (a pin, a pointer, the plan, the notes).

    Such a message is a copy or a rendering of state kept elsewhere (the archive, the live
    todo list, the notes file): readers that rebuild a thread leave it out, like summaries.
    """
    return _verified(message) is not None


def _verified(message: BaseMessage) -> Mapping[str, Any] | None:
    if not isinstance(message, HumanMessage):
        return None
    data = message.additional_kwargs.get("ctxfs")
    if not isinstance(data, Mapping) or data.get("kind") not in IN_VIEW_KINDS:
        return None
    if data.get("digest") != digest(_content_text(message)):
        return None  # metadata copied onto other text, or the text replaced: content
    return data


def user_candidates(
    messages: Sequence[BaseMessage],
    *,
    first_index: int,
    segment: str,
    segment_start: int | None = None,
    machine_made: str | None,
    earlier: Sequence[BaseMessage] = (),
) -> tuple[list[Candidate], Earlier]:
    """The user messages this summary may put back, and those only counted so far.

    Args:
        messages: What this summary archives, oldest first.
        first_index: The thread index of ``messages[0]``.
        segment: The segment ``messages`` are archived in.
        segment_start: The thread index of that segment's first message (``first_index``
            when omitted): a message's number there is its index less this. A message
            before it was already held by an earlier segment, which its pointer names.
        machine_made: :attr:`~ctxfs._policy._pinning.Pinning.machine_made`.
        earlier: The messages the previous summary put back after itself.
    """
    found: list[Candidate] = []
    counted = Earlier()
    for message in earlier:
        data = _verified(message)
        if data is None:
            continue
        # What an earlier summary recorded is read as strictly as its state (entries of
        # another shape are left out): the digest vouches for the text, not for the rest.
        if data["kind"] == "pinned":
            kwargs, pin_id = data.get("kwargs"), data.get("id")
            original = message.model_copy(
                update={
                    "additional_kwargs": dict(kwargs) if isinstance(kwargs, Mapping) else {},
                    "id": pin_id if isinstance(pin_id, str) else None,
                }
            )
            found += [c for c in [_earlier(data, message=original)] if c is not None]
        elif data["kind"] == "in_view":
            pointers = data.get("pointers")
            for entry in pointers if isinstance(pointers, list) else ():
                candidate = _earlier(entry, message=None)
                found += [candidate] if candidate is not None else []
            counted = _counted(data.get("counted")) or counted
    seen_first = counted.count > 0 or any(c.first for c in found)
    pattern = re.compile(machine_made) if machine_made else None
    start = first_index if segment_start is None else segment_start
    for offset, message in enumerate(messages):
        if not isinstance(message, HumanMessage) or message.additional_kwargs.get("ctxfs"):
            continue  # a summary or another message ctxfs wrote: not the user's words
        text = _content_text(message)
        head = _head(text) or _blocks_head(message)
        if not head or (pattern is not None and pattern.match(text)):
            continue  # empty, or machine-made; an image without words is the user's too
        index = first_index + offset
        found.append(
            Candidate(
                index=index,
                segment=segment,
                first=not seen_first and not found,
                message=message,
                head=head,
                position=index - start if index >= start else None,
            )
        )
    return sorted(found, key=lambda c: c.index), counted


def recalled(candidate: Candidate, archived: Sequence[BaseMessage]) -> Candidate:
    """``candidate`` with its original read back from its segment, when an earlier summary
    left only a pointer to it (it had no room then): the message ``archived`` (the segment's
    messages) holds at its position, if it is a user message with the head the pointer
    recorded; otherwise ``candidate`` as it is."""
    at = candidate.position
    if candidate.message is not None or at is None or at >= len(archived):
        return candidate
    original = archived[at]
    if not isinstance(original, HumanMessage) or original.additional_kwargs.get("ctxfs"):
        return candidate
    head = _head(_content_text(original)) or _blocks_head(original)
    return replace(candidate, message=original) if head == candidate.head else candidate


def select_pins(
    candidates: Sequence[Candidate],
    *,
    earlier: Earlier = Earlier(),
    thread_id: str,
    counter: TokenCounter,
    budget: int,
    first_room: int,
    turns_room: int,
    kept: int = 0,
    frame: int = 0,
    pointers: int,
    max_pins: int | None = None,
) -> tuple[list[HumanMessage], list[Candidate], Earlier]:
    """The user messages put back verbatim, those pointed to, and those only counted.

    Args:
        candidates: From :func:`user_candidates`.
        earlier: User messages an earlier summary only counted.
        thread_id: Names the pins' ids.
        counter: Counts the pins as they will be sent.
        budget: Tokens the user messages other than the first may take (the pinning budget).
        first_room: Tokens the first user message may take: the room the request has left.
        turns_room: The turns' room: the tokens below where the next summary fires, beside
            what every request holds until then (system prompt, tool schemas, the summary).
            The first message's pin, the recent window the summary keeps, the other pins
            and the new turns share it; the other pins take at most three quarters of it,
            less the first's pin and ``kept`` (see :func:`others_room`).
        kept: Tokens of the recent window the summary keeps.
        frame: What the in-view message costs besides its pointer lines (its header and
            the line counting older messages): taken from the other pins' room unless
            every user message is put back verbatim, when there is no such message.
        pointers: How many messages that do not fit get a pointer each.
        max_pins: Most messages pinned (under a ``messages`` trigger); ``None``: no cap.

    Returns:
        The pins (oldest first), the candidates pointed to (oldest first), and the count of
        the older ones.
    """
    pinned: dict[int, HumanMessage] = {}
    used = 0
    room = max_pins if max_pins is not None else len(candidates)
    for candidate in candidates:
        if candidate.first and candidate.message is not None and room > 0:
            # The task statement comes first, with an allowance of its own: all the room the
            # request has left.
            pin = _pin(candidate, thread_id)
            cost = counter.count_message(pin)
            if cost <= max(first_room, 0) or cost <= _pointer_cost(candidate, counter):
                pinned[candidate.index] = pin
                used = cost
    # The others, newest first, share one budget: verbatim while it holds, then a pointer
    # line (or the message itself when it is shorter), and from the first that fits neither,
    # the older ones are only counted.
    others = sorted(
        (c for c in candidates if not c.first and c.index not in pinned),
        key=lambda c: c.index,
        reverse=True,
    )
    whole = {c.index: _pin(c, thread_id) for c in others if c.message is not None}
    sizes = {index: counter.count_message(pin) for index, pin in whole.items()}
    share = others_room(turns_room, first=used, kept=kept)
    first = [c for c in candidates if c.first and c.index not in pinned]  # always pointed to
    every_one = (
        not earlier.count
        and not first
        and len(whole) == len(others)
        and len(pinned) + len(others) <= room
        and sum(sizes.values()) <= min(budget, share)
    )
    if not every_one:  # there is an in-view message: its header, and the first's line
        share -= frame + sum(_pointer_cost(c, counter) for c in first)
    left = max(0, min(budget, share))
    tail: list[Candidate] = []
    hidden: list[Candidate] = []
    for candidate in others:
        if hidden:
            hidden.append(candidate)
            continue
        verbatim = whole.get(candidate.index)
        size = sizes.get(candidate.index)
        line = _pointer_cost(candidate, counter)
        if verbatim is not None and size is not None and len(pinned) < room and size <= left:
            pinned[candidate.index] = verbatim
            left -= size
        elif len(tail) < pointers and line <= left:
            if verbatim is not None and size is not None and size <= line and len(pinned) < room:
                pinned[candidate.index] = verbatim  # shorter than its pointer
                left -= size
            else:
                tail.append(candidate)
                left -= line
        else:
            hidden.append(candidate)
    hidden.reverse()
    counted = earlier
    if hidden:
        counted = Earlier(
            earlier.count + len(hidden),
            earlier.first_index if earlier.count else hidden[0].index,
            hidden[-1].index,
            tuple(dict.fromkeys([*earlier.segments, *(c.segment for c in hidden)]))[-3:],
        )
    pins = [pinned[index] for index in sorted(pinned)]
    return pins, sorted([*first, *tail], key=lambda c: c.index), counted


def others_room(turns_room: int, *, first: int, kept: int) -> int:
    """The most the user messages other than the first may take when a summary pins them:
    three quarters of the turns' room (see :func:`select_pins`) less the first message's pin
    and the recent window kept, so that new turns always keep a quarter of it and the next
    summary does not follow on the next turn.

    The quarter is of the turns' room, not of the whole request: what no summary shrinks (a
    long system prompt or task statement) takes its size from the other user messages and
    from the new turns in those proportions, not from the user's words alone.
    """
    return (max(0, turns_room - first) * 3 // 4) - kept


def render_plan(todos: Sequence[Mapping[str, Any]] | str) -> str:
    """The plan as the model reads it: one line per todo, its status in brackets.

    >>> print(render_plan([{"content": "read the logs", "status": "completed"},
    ...                    {"content": "fix the bug", "status": "in_progress"}]))
    - [completed] read the logs
    - [in_progress] fix the bug
    """
    if isinstance(todos, str):
        return todos
    lines = []
    for todo in todos:
        content = todo.get("content", todo.get("task", ""))
        status = todo.get("status", "pending")
        lines.append(f"- [{one_line(str(status))}] {one_line(str(content))}")
    return "\n".join(lines)


def notes_text(text: str, *, path: str, counter: TokenCounter, max_tokens: int) -> str | None:
    """The head of the agent's notes file within ``max_tokens``, or ``None`` for none."""
    if not text.strip() or max_tokens <= 0:
        return None
    body = text
    if counter.count_text(body) > max_tokens:
        # cut on a line boundary, halving until it fits: a bounded number of counts
        lines = body.splitlines()
        while lines and counter.count_text("\n".join(lines)) > max_tokens:
            lines = lines[: len(lines) // 2]
        body = "\n".join(lines) + f"\n[... the rest of {path} is in the file]"
    return body


def in_view_message(
    *,
    pointed: Sequence[Candidate],
    counted: Earlier,
    plan: Sequence[Mapping[str, Any]] | str | None,
    notes: tuple[str, str] | None,
    thread_id: str,
) -> HumanMessage | None:
    """One message with the pointers to user messages not pinned, the plan and the notes.

    ``notes`` is ``(path, text)``, the text already cut to its budget. ``None`` when there
    is nothing to say.
    """
    parts: list[str] = []
    lines = [_pointer_line(c) for c in pointed]
    if counted.count:
        lines.insert(
            0,
            f"- {counted.count} earlier user messages (between messages {counted.first_index} "
            f"and {counted.last_index}) are archived; the latest of them in "
            f"{', '.join(one_line(s) for s in counted.segments)}",
        )
    if lines:
        folder = next(iter([*(c.segment for c in pointed), *counted.segments]), "")
        parts.append(
            f"[ctxfs: user messages archived in {one_line(folder.rsplit('/', 1)[0])}/, not "
            "repeated here; read one with history_read, giving its segment and its number "
            "there (#)]\n" + "\n".join(lines)
        )
    body = render_plan(plan) if plan is not None else ""
    if body.strip():
        parts.append(
            "[ctxfs: the plan, from the live todo state at this compaction]\n"
            + section("plan", body)
        )
    if notes is not None:
        path, text = notes
        parts.append(
            f"[ctxfs: the agent's notes, from {one_line(path)}]\n"
            + section("notes", text, {"path": path})
        )
    if not parts:
        return None
    extra = {
        "pointers": [
            {
                "index": c.index,
                "segment": c.segment,
                "first": c.first,
                "head": c.head,
                "position": c.position,
            }
            for c in pointed
        ],
        "counted": {
            "count": counted.count,
            "first_index": counted.first_index,
            "last_index": counted.last_index,
            "segments": list(counted.segments),
        },
    }
    return _stamped(
        "\n\n".join(parts),
        kind="in_view",
        message_id=f"ctxfs-in-view-{safe_name(thread_id)}",
        extra=extra,
    )


def _pointer_cost(candidate: Candidate, counter: TokenCounter) -> int:
    """What pointing to ``candidate`` instead of pinning it costs (its line, in tokens)."""
    return counter.count_text(_pointer_line(candidate))


def _pointer_line(candidate: Candidate) -> str:
    what = "the task statement" if candidate.first else "message"
    name = one_line(candidate.segment.rsplit("/", 1)[-1])
    where = name if candidate.position is None else f"{name} #{candidate.position}"
    return f"- {what} {candidate.index} ({where}): {attribute(candidate.head)}"


def _earlier(data: object, *, message: BaseMessage | None) -> Candidate | None:
    """The candidate an earlier summary recorded, or ``None`` for an entry of another shape."""
    if not isinstance(data, Mapping):
        return None
    index, segment, head = data.get("index"), data.get("segment"), data.get("head")
    if not _whole(index) or not isinstance(segment, str):
        return None
    position = data.get("position")
    return Candidate(
        index=index,
        segment=segment,
        first=data.get("first") is True,
        message=message,
        head=head if isinstance(head, str) else "",
        position=position if _whole(position) else None,
    )


def _counted(data: object) -> Earlier | None:
    """The user messages an earlier summary counted, or ``None`` (none, or another shape)."""
    if not isinstance(data, Mapping):
        return None
    count, first, last = data.get("count"), data.get("first_index"), data.get("last_index")
    if not (_whole(count) and count > 0 and _whole(first) and _whole(last)):
        return None
    segments = data.get("segments")
    names = [s for s in segments if isinstance(s, str)] if isinstance(segments, list) else []
    return Earlier(count, first, last, tuple(names))


def _whole(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _blocks_head(message: BaseMessage) -> str:
    """What a message without text holds, for its pointer: ``[image]``, ``[image, file]``;
    ``""`` when it holds nothing."""
    content = message.content
    if isinstance(content, str):
        return ""
    kinds = dict.fromkeys(
        str(block.get("type") or "block") if isinstance(block, dict) else "block"
        for block in content
    )
    return f"[{one_line(', '.join(kinds))}]" if kinds else ""


def _head(text: str) -> str:
    head = one_line(text.strip())
    return head if len(head) <= _HEAD_CHARS else head[:_HEAD_CHARS] + "…"


def _pin(candidate: Candidate, thread_id: str) -> HumanMessage:
    original = candidate.message
    assert original is not None
    data = {
        "kind": "pinned",
        "index": candidate.index,
        "segment": candidate.segment,
        "first": candidate.first,
        "head": candidate.head,
        "position": candidate.position,
        "id": original.id,
        "kwargs": dict(original.additional_kwargs) or None,
        "digest": digest(_content_text(original)),
    }
    pin_id = f"ctxfs-pin-{safe_name(thread_id)}-{candidate.index}"
    return HumanMessage(content=original.content, id=pin_id, additional_kwargs={"ctxfs": data})


def _stamped(
    text: str, *, kind: str, message_id: str, extra: Mapping[str, Any] | None = None
) -> HumanMessage:
    data = {**(extra or {}), "kind": kind, "digest": digest(text)}
    return HumanMessage(content=text, id=message_id, additional_kwargs={"ctxfs": data})


def _content_text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else message_text(message)
