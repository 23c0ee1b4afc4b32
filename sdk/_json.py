"""JSON that ctxfs reads back (state files, memories, indexes, replies), with bounded nesting.

Python's :func:`json.loads` recurses once per nesting level, so a file nested a few thousand
levels deep raises :class:`RecursionError` from deep inside the parser. ctxfs reads JSON it
did not necessarily write (an agent, a hand edit, a model's reply), so every such read goes
through :func:`loads_bounded`: the depth is measured first, in one linear pass that never
recurses, and a document deeper than :data:`MAX_JSON_DEPTH` is refused with a
:class:`json.JSONDecodeError` that says how deep it is, which the caller turns into its own
format error naming the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import suppress
from typing import Any

__all__ = [
    "MAX_JSON_DEPTH",
    "JsonDepthError",
    "brackets",
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
    text: str | bytes, *, max_depth: int = MAX_JSON_DEPTH, strict: bool = True
) -> Any:
    """:func:`json.loads`, refusing documents nested deeper than ``max_depth``.

    >>> try:
    ...     loads_bounded("[" * 100 + "]" * 100)
    ... except JsonDepthError as exc:
    ...     print(exc)
    JSON nested 100 levels deep (at most 64 are read)

    A number too long for Python to convert (over 4,300 digits) is refused as not JSON
    too, so a caller that handles :class:`json.JSONDecodeError` handles every bad document.
    ``strict=False`` allows control characters inside strings, as :func:`json.loads` does.

    Raises:
        JsonDepthError: The document nests deeper than ``max_depth`` (a
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
        return json.loads(text, strict=strict)
    except json.JSONDecodeError:
        raise
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
