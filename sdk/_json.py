"""JSON that ctxfs reads back (state files, memories, indexes, replies), with bounded nesting.

Python's :func:`json.loads` recurses once per nesting level, so a file nested a few thousand
levels deep raises :class:`RecursionError` from deep inside the parser. ctxfs reads JSON it
did not necessarily write (an agent, a hand edit, a model's reply), so every such read goes
through :func:`loads_bounded`: the depth is measured first, in one linear pass that never
recurses, and a document deeper than :data:`MAX_JSON_DEPTH` is refused with a
:class:`json.JSONDecodeError` that says how deep it is, which the caller turns into its own
format error naming the file.

An object that names one key twice is refused the same way (:class:`JsonDuplicateKeyError`,
naming the key): :func:`json.loads` keeps the last value without a word, so a hand edit that
added a key instead of changing it would be read as neither author meant.

Every file ctxfs writes with a format version is read through :func:`check_format_version`:
a file of a newer version than this ctxfs knows is refused with
:class:`NewerFormatError`, naming both versions, never read in part (what is not understood
would be dropped when ctxfs writes the file again).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import suppress
from typing import Any

__all__ = [
    "MAX_JSON_DEPTH",
    "JsonDepthError",
    "JsonDuplicateKeyError",
    "NewerFormatError",
    "brackets",
    "check_format_version",
    "dumps_any",
    "dumps_compact",
    "json_depth",
    "loads_bounded",
]

MAX_JSON_DEPTH = 64
"""The deepest nesting of arrays and objects ctxfs reads back (its own files nest under 10)."""


class JsonDepthError(json.JSONDecodeError):
    """A JSON document nests deeper than the bound.

    A :class:`json.JSONDecodeError` (so every handler of "not JSON" handles it) whose
    position is the bracket past the bound and whose text is the message alone.
    """

    def __str__(self) -> str:
        return self.msg


class JsonDuplicateKeyError(json.JSONDecodeError):
    """A JSON object names one key twice (see the module docstring).

    A :class:`json.JSONDecodeError` whose text is the message alone and whose ``key`` is the
    key named twice.
    """

    def __init__(self, key: str, doc: str) -> None:
        super().__init__(f"the key {key!r} appears twice in one object", doc, 0)
        self.key = key

    def __str__(self) -> str:
        return self.msg


class _Duplicate(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The object of ``pairs``; :class:`_Duplicate` if a key comes twice."""
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Duplicate(key)
            seen.add(key)
    return found


class NewerFormatError(ValueError):
    """A file written by a newer ctxfs: its format version is above the one this ctxfs reads.

    Not a :class:`json.JSONDecodeError`: a reader that rebuilds or ignores a torn file must
    not rebuild or ignore this one (it would write the older format over the newer).

    Attributes:
        found: The file's format version.
        known: The newest this ctxfs reads.
    """

    def __init__(self, what: str, found: int, known: int) -> None:
        super().__init__(
            f"{what} is format version {found}, written by a newer ctxfs (this one reads up "
            f"to version {known}): upgrade ctxfs to use it"
        )
        self.found = found
        self.known = known


def check_format_version(found: object, known: int, what: str) -> None:
    """Refuses a file whose format version ``found`` (read from it) is an integer above
    ``known``; any other value is left to the file's own checks.

    >>> check_format_version(1, 1, "the index")
    >>> try:
    ...     check_format_version(7, 5, "it")
    ... except NewerFormatError as exc:
    ...     print(str(exc).split(":")[0])
    it is format version 7, written by a newer ctxfs (this one reads up to version 5)

    Raises:
        NewerFormatError: The version is above ``known``.
    """
    if type(found) is int and found > known:
        raise NewerFormatError(what, found, known)


def brackets(text: str, start: int = 0) -> Iterator[tuple[int, int]]:
    """Each bracket of ``text`` from ``start`` on, outside strings: its index and the depth
    after it (one more than before for ``[`` and ``{``, one less for ``]`` and ``}``)."""
    depth = 0
    in_string = escaped = False
    for at in range(start, len(text)):
        char = text[at]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            yield at, depth
        elif char in "]}":
            depth -= 1
            yield at, depth


def _openings(text: str) -> Iterator[tuple[int, int]]:
    """Each ``[`` or ``{`` of ``text`` outside strings: its index and the depth it opens."""
    return ((at, depth) for at, depth in brackets(text) if text[at] in "[{")


def json_depth(text: str | bytes) -> int:
    """The deepest nesting of ``[`` and ``{`` in ``text``, outside strings; one pass.

    >>> json_depth('{"a": [1, {"b": "]]]["}]}')
    3
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", "surrogatepass")
    return max((depth for _, depth in _openings(text)), default=0)


def loads_bounded(
    text: str | bytes,
    *,
    max_depth: int = MAX_JSON_DEPTH,
    strict: bool = True,
    unique_keys: bool = True,
) -> Any:
    """:func:`json.loads`, refusing documents nested deeper than ``max_depth`` and objects
    that name a key twice.

    >>> try:
    ...     loads_bounded("[" * 100 + "]" * 100)
    ... except JsonDepthError as exc:
    ...     print(exc)
    JSON nested 100 levels deep (at most 64 are read)

    A number too long for Python to convert (over 4,300 digits) is refused as not JSON
    too, so a caller that handles :class:`json.JSONDecodeError` handles every bad document.
    ``strict=False`` allows control characters inside strings, as :func:`json.loads` does.
    ``unique_keys=False`` keeps the last of a key's values, as :func:`json.loads` does: for
    what a model sends (tool-call arguments), never for a file ctxfs reads back.

    >>> try:
    ...     loads_bounded('{"status": "running", "status": "done"}')
    ... except JsonDuplicateKeyError as exc:
    ...     print(exc)
    the key 'status' appears twice in one object

    Raises:
        JsonDepthError: The document nests deeper than ``max_depth`` (a
            :class:`json.JSONDecodeError`).
        JsonDuplicateKeyError: ``unique_keys`` and an object names a key twice (a
            :class:`json.JSONDecodeError`).
        json.JSONDecodeError: It is not JSON, or holds such a number (a ``ValueError``).
    """
    # The count of openers bounds the depth and costs a C pass: the character scan runs only
    # on a document that could nest too deep (most never could).
    if isinstance(text, bytes):
        bound = text.count(b"[") + text.count(b"{")
    else:
        bound = text.count("[") + text.count("{")
    depth = json_depth(text) if bound > max_depth else bound
    if depth > max_depth:
        doc = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        message = f"JSON nested {depth:,} levels deep (at most {max_depth} are read)"
        past = next(at for at, deeper in _openings(doc) if deeper > max_depth)
        raise JsonDepthError(message, doc, past)
    try:
        hook = _unique_keys if unique_keys else None
        return json.loads(text, strict=strict, object_pairs_hook=hook)
    except json.JSONDecodeError:
        raise
    except _Duplicate as exc:
        doc = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        raise JsonDuplicateKeyError(exc.key, doc) from None
    except ValueError as exc:  # int() past sys.get_int_max_str_digits()
        doc = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        raise json.JSONDecodeError(f"a number too long to read ({exc})", doc, 0) from None


def dumps_compact(value: object) -> str:
    """``value`` as compact JSON with sorted keys (see :func:`dumps_any`).

    >>> dumps_compact({"b": 1, "a": [True, None]})
    '{"a":[true,null],"b":1}'
    """
    return dumps_any(value, separators=(",", ":"))


def dumps_any(
    value: object, *, separators: tuple[str, str] | None = None, sort_keys: bool = True
) -> str:
    """``value`` as JSON (keys sorted unless ``sort_keys=False``), not ASCII-escaped, for values
    JSON cannot hold too.

    A message's tool-call arguments are usually what a model sent, but code can build a call
    with any Python values. What JSON cannot hold is written as its ``str`` (bytes, a date, a
    set); keys that cannot be sorted are kept in their order; a value nested deeper than
    :data:`MAX_JSON_DEPTH` or holding itself is cut there (``"…"``) instead of raising from
    deep inside the encoder. This is for counting and showing a value, never for storing it.

    >>> print(dumps_any({"when": b"x", 1: {2}}))
    {"when": "b'x'", "1": "{2}"}
    """
    try:
        return json.dumps(
            value, ensure_ascii=False, separators=separators, sort_keys=sort_keys, default=str
        )
    except (TypeError, ValueError, RecursionError):
        pass
    plain = _plain(value, 0, set(), sort_keys)
    return json.dumps(plain, ensure_ascii=False, separators=separators)


def _plain(value: object, depth: int, above: set[int], sort_keys: bool) -> object:
    """``value`` as what :func:`json.dumps` takes: the fallback of :func:`dumps_compact`."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if not isinstance(value, (dict, list, tuple)):
        return str(value)
    if depth >= MAX_JSON_DEPTH or id(value) in above:
        return "…"  # too deep, or a container holding itself
    above.add(id(value))
    try:
        if isinstance(value, dict):
            items = list(value.items())
            if sort_keys:
                with suppress(TypeError):  # keys of several types: kept in their order
                    items.sort(key=lambda item: item[0])
            return {str(k): _plain(v, depth + 1, above, sort_keys) for k, v in items}
        return [_plain(v, depth + 1, above, sort_keys) for v in value]
    finally:
        above.discard(id(value))
