"""The turns waiting to be learned from, per thread, with a debounce.

After each agent run the conversational part of the turn (the user's messages and the
assistant's final answers, no tool calls, no tool results, no ctxfs summaries) is queued
under its thread. A thread becomes due once it has been quiet for ``debounce_seconds``: each
new turn pushes its due time back, so a burst of turns goes to the extraction model in one
call. Time comes from an injected clock, so tests move it by hand.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from ctxfs._messages import message_text
from ctxfs._summary._message import is_summary
from ctxfs._summary._pins import is_pinned

__all__ = ["SeenMessages", "TurnBatch", "TurnQueue", "conversational"]

_MAX_SEEN = 10_000


def conversational(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages worth learning from: user messages and final answers with text."""
    kept: list[BaseMessage] = []
    for message in messages:
        if is_summary(message) or is_pinned(message) or not message_text(message).strip():
            continue
        if isinstance(message, HumanMessage) or (
            isinstance(message, AIMessage) and not message.tool_calls
        ):
            kept.append(message)
    return kept


def _key(message: BaseMessage) -> str:
    if message.id:
        return message.id
    text = f"{message.type}\x00{message_text(message)}"
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class TurnBatch:
    """The queued messages of one thread, handed out together.

    Attributes:
        thread_id: The conversation.
        messages: Its queued user messages and final answers, in order.
    """

    thread_id: str
    messages: tuple[BaseMessage, ...]


class SeenMessages:
    """Which messages of each thread were taken already, so an offer yields only new ones.

    The whole state of a thread is offered after every run, oldest first, so what is new in
    an offer is what follows the last message already taken: messages before it were in an
    earlier offer, even those whose keys were forgotten since (at most ``limit`` keys are
    kept per thread, the newest). So a thread of any length offered again yields nothing,
    and never its oldest messages again. Not thread-safe (its owners hold their lock).

    Args:
        limit: The keys kept per thread.
    """

    def __init__(self, limit: int = _MAX_SEEN) -> None:
        self._limit = limit
        self._seen: dict[str, dict[str, None]] = {}

    def take(self, thread_id: str, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """The messages of ``messages`` not taken before for ``thread_id``, now taken."""
        seen = self._seen.setdefault(thread_id, {})
        keys = [_key(m) for m in messages]
        start = next((i + 1 for i in range(len(keys) - 1, -1, -1) if keys[i] in seen), 0)
        new: list[BaseMessage] = []
        for key, message in zip(keys[start:], messages[start:], strict=True):
            if key not in seen:
                seen[key] = None
                new.append(message)
        while len(seen) > self._limit:
            del seen[next(iter(seen))]
        return new

    def forget(self, thread_id: str, messages: Sequence[BaseMessage]) -> None:
        """Un-takes ``messages``, the last ones taken (they could not be used): the next
        offer yields them again."""
        seen = self._seen.get(thread_id, {})
        for message in messages:
            seen.pop(_key(message), None)


@dataclass(slots=True)
class _Pending:
    messages: list[BaseMessage] = field(default_factory=list)
    due: float = 0.0


class TurnQueue:
    """Queued turns per thread, released once each thread has been quiet for the debounce.

    Thread-safe. A message is queued once per thread, however often it is offered again (the
    whole state is offered after every run): messages are told apart by id, or by their text
    when they have none, and only what follows the last message queued before is new (see
    :class:`SeenMessages`), however long the thread.

    Args:
        debounce_seconds: How long a thread must be quiet before its turns are due.
        clock: Seconds, monotonic (``time.monotonic`` by default; a fake clock in tests).
    """

    def __init__(
        self, *, debounce_seconds: float = 30.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if debounce_seconds < 0:
            raise ValueError("debounce_seconds must be >= 0")
        self._debounce = debounce_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}
        self._seen = SeenMessages()

    def add(self, thread_id: str, messages: Sequence[BaseMessage]) -> int:
        """Queues the conversational messages of ``thread_id`` not queued before.

        Returns:
            How many messages were queued (0 leaves the thread's due time as it was).
        """
        fresh = conversational(messages)
        with self._lock:
            new = self._seen.take(thread_id, fresh)
            if not new:
                return 0
            pending = self._pending.setdefault(thread_id, _Pending())
            pending.messages.extend(new)
            pending.due = self._clock() + self._debounce
            return len(new)

    def due(self) -> list[TurnBatch]:
        """Takes the batches of the threads that have been quiet long enough."""
        now = self._clock()
        with self._lock:
            ready = [t for t, p in self._pending.items() if p.due <= now]
            return [self._take(t) for t in sorted(ready)]

    def drain(self) -> list[TurnBatch]:
        """Takes every batch, due or not (to learn now, e.g. before shutting down)."""
        with self._lock:
            return [self._take(t) for t in sorted(self._pending)]

    def _take(self, thread_id: str) -> TurnBatch:
        pending = self._pending.pop(thread_id)
        return TurnBatch(thread_id, tuple(pending.messages))

    def requeue(self, batch: TurnBatch) -> None:
        """Puts a batch that could not be learned from back, before what came since, due
        after the debounce."""
        with self._lock:
            pending = self._pending.setdefault(batch.thread_id, _Pending())
            pending.messages[:0] = batch.messages
            pending.due = self._clock() + self._debounce

    def pending(self) -> dict[str, int]:
        """How many messages wait, per thread."""
        with self._lock:
            return {t: len(p.messages) for t, p in sorted(self._pending.items())}

    def next_due(self) -> float | None:
        """The clock time at which the next thread becomes due, ``None`` if none waits."""
        with self._lock:
            return min((p.due for p in self._pending.values()), default=None)
