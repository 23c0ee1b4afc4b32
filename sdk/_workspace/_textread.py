"""Read a page of lines from a binary stream with bounded memory.

A 50 MB file made of one line must not be held in memory to show its first 2,000 characters:
the stream is decoded incrementally in chunks, each line is kept only up to the clip length
(its full length is counted), and reading stops once the page is full. The rest of the file is
only scanned to count its lines (``bytes.count``): it is neither decoded nor kept.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from ctxfs._errors import FileTooLargeError, NotTextError
from ctxfs._workspace._results import ReadResult
from ctxfs.backends import Store

__all__ = [
    "CHUNK_BYTES",
    "check_page_request",
    "decode_text",
    "read_capped",
    "read_page",
    "text_lines",
]

CHUNK_BYTES = 1 << 16


def check_page_request(offset: int, limit: int | None, column: int, max_chars: int | None) -> None:
    """Refuse a page request that names no page (see :meth:`ctxfs.Workspace.read_lines`).

    Raises:
        ValueError: A negative offset or column, or a limit or character cap below 1.
    """
    if offset < 0:
        raise ValueError("offset must be >= 0 (it is the 0-based first line)")
    if limit is not None and limit < 1:
        raise ValueError("limit must be >= 1")
    if column < 0:
        raise ValueError("column must be >= 0 (it is the 0-based first character)")
    if max_chars is not None and max_chars < 1:
        raise ValueError("max_chars must be >= 1")


def read_capped(store: Store, virtual: str, size: int | None, cap: int) -> bytes:
    """A whole file of at most ``cap`` bytes; nothing past ``cap + 1`` bytes is read.

    Raises:
        FileTooLargeError: Its size (or, if it grew, its stream) is over ``cap``.
    """
    if size is not None and size > cap:
        what = f"is {size:,} bytes"
    else:
        with store.open_read(virtual) as stream:
            data = stream.read(cap + 1)
        if len(data) <= cap:
            return data
        what = f"holds more than {cap:,} bytes"
    raise FileTooLargeError(
        f"{virtual} {what}, over the {cap:,}-byte cap of one read (Limits.max_read_bytes); "
        "read a text file in pages with read_lines, or raise the cap",
        path=virtual,
    )


def decode_text(virtual: str, data: bytes) -> str:
    """The text of a whole file's bytes, or :class:`~ctxfs._errors.NotTextError`."""
    if b"\x00" in data:
        raise NotTextError(
            f"{virtual} is a binary file (it contains NUL bytes); it cannot be read as text",
            path=virtual,
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotTextError(
            f"{virtual} is not valid UTF-8 text ({exc.reason})", path=virtual
        ) from None


@dataclass(slots=True)
class _Tally:
    newlines: int = 0
    size: int = 0
    last_byte: bytes = b""


def _chunks(stream: BinaryIO, path: str, tally: _Tally) -> Iterator[bytes]:
    while chunk := stream.read(CHUNK_BYTES):
        if b"\x00" in chunk:
            raise NotTextError(
                f"{path} is a binary file (it contains NUL bytes); it cannot be shown as text",
                path=path,
            )
        tally.newlines += chunk.count(b"\n")
        tally.size += len(chunk)
        tally.last_byte = chunk[-1:]
        yield chunk


def _not_utf8(path: str, exc: UnicodeDecodeError) -> NotTextError:
    return NotTextError(
        f"{path} is not valid UTF-8 text ({exc.reason}); it cannot be shown as text", path=path
    )


def _lines(
    chunks: Iterator[bytes],
    path: str,
    keep: int,
    column_line: int,
    column: int,
    column_keep: int | None = None,
) -> Iterator[tuple[str, int, bool]]:
    """Yield ``(kept text, full length, whether a trailing \r was dropped)`` per line.

    Of each line only the characters ``[start, start + keep)`` are kept, where ``start`` is
    ``column`` for line number ``column_line`` (0-based) and 0 for every other line; of that
    line ``column_keep`` characters when given.
    """
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    parts: list[str] = []
    length = 0
    last = ""
    index = 0

    def take(piece: str) -> None:
        nonlocal length, last
        low, most = (column, column_keep or keep) if index == column_line else (0, keep)
        start = max(low, length) - length
        stop = min(low + most, length + len(piece)) - length
        if start < stop:
            parts.append(piece[start:stop])
        length += len(piece)
        if piece:
            last = piece[-1]

    def emit() -> tuple[str, int, bool]:
        nonlocal parts, length, last, index
        text, full, carriage = "".join(parts), length, last == "\r"
        if carriage:
            full -= 1
            low = column if index == column_line else 0
            text = text[: max(0, full - low)]
        parts, length, last = [], 0, ""
        index += 1
        return text, full, carriage

    for chunk in chunks:
        try:
            text = decoder.decode(chunk)
        except UnicodeDecodeError as exc:
            raise _not_utf8(path, exc) from None
        pieces = text.split("\n")
        for piece in pieces[:-1]:
            take(piece)
            yield emit()
        take(pieces[-1])
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, exc) from None
    if length:
        yield emit()


def text_lines(text: str) -> list[str]:
    """The lines of ``text`` as ``read_file`` and ``grep`` number them: each ends at ``\n``
    (a ``\r`` before it dropped), the last one with or without it; other line breaks (a
    lone ``\r``, ``U+2028``, form feeds) stay inside their line.

    >>> text_lines("a\\r\\nb\\u2028c\\n")
    ['a', 'b\\u2028c']
    """
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def read_page(
    stream: BinaryIO,
    path: str,
    *,
    offset: int,
    limit: int,
    max_line_chars: int,
    max_chars: int,
    column: int = 0,
) -> ReadResult:
    """Read lines ``offset .. offset+limit`` of a UTF-8 text stream.

    Lines end at ``\\n``; a ``\\r`` before it is dropped. Only the lines up to the end of the
    page are decoded, so invalid UTF-8 further on is not noticed by this read.

    Args:
        stream: Binary stream positioned at the start of the file.
        path: Virtual path, for messages.
        offset: 0-based first line.
        limit: Most lines to return.
        max_line_chars: Longer lines are clipped to this many characters.
        max_chars: The page stops before its characters would exceed this; the first line
            of a page is always returned (clipped to ``max_line_chars``).
        column: Start the first line at this character (0-based), so a line longer than
            ``max_line_chars`` can be read piece by piece. Read from a column, the first line
            is clipped at ``max_chars`` instead (the page holds nothing else anyway when the
            line is that long): a long line is read through in pieces as large as a page.

    Raises:
        NotTextError: The file holds NUL bytes (binary) or invalid UTF-8.
    """
    tally = _Tally()
    chunks = _chunks(stream, path, tally)
    lines: list[str] = []
    clipped: list[tuple[int, int]] = []
    carriage: list[int] = []
    page_chars = 0
    stopped_by_chars = False
    first = max(max_line_chars, max_chars) if column else max_line_chars
    numbered = enumerate(_lines(chunks, path, max_line_chars + 1, offset, column, first + 1))
    for index, (text, full, dropped) in numbered:
        if index < offset:
            continue
        text = text[: first if index == offset else max_line_chars]
        if lines and page_chars + len(text) > max_chars:
            stopped_by_chars = True
            break
        start = column if index == offset else 0
        if start > 0 or full > start + len(text):
            clipped.append((len(lines), full))
        if dropped:
            carriage.append(len(lines))
        lines.append(text)
        page_chars += len(text) + 1
        if len(lines) >= limit:
            break
    for _ in chunks:  # count the rest without decoding it
        pass
    total = tally.newlines + (1 if tally.size and tally.last_byte != b"\n" else 0)
    return ReadResult(
        path=path,
        offset=offset,
        column=column,
        lines=tuple(lines),
        clipped=tuple(clipped),
        total_lines=total,
        stopped_by_chars=stopped_by_chars,
        carriage_returns=tuple(carriage),
        final_newline=not tally.size or tally.last_byte == b"\n",
    )
