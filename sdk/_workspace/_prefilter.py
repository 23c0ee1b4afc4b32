"""Byte tests that rule a file out of a grep before it is decoded.

Over many files grep's time goes to files that cannot match, so each is first tested on its
raw bytes for a literal every match must hold (the fixed string, or the one
:func:`~ctxfs._workspace._literals.required_literal` reads from a pattern). The tests are
exact in one direction only: ``False`` means no match can be in the file; ``True`` means
search it.

Finding a short literal with ``bytes.find`` is slow when its last byte is common (the search
checks that byte first, so in English text ``Conn`` is tried at every ``n``: about 1.2 GB/s).
A literal with a rare byte is found instead by scanning for that byte with ``memchr`` (about
10 GB/s) and comparing the literal around each hit; after a few hits that are not the literal
the byte was not rare in this file, and the rest is left to ``bytes.find``. Which bytes are
rare is a fixed guess for text and code: every byte outside the ranked list below (control
bytes, bytes of non-ASCII characters) is taken for the rarest, then the list from its end.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Final

import regex

from ctxfs._workspace._literals import required_literal

__all__ = ["literal_finder", "literal_test", "prefilter_for"]

# Bytes from most to least common in text and code, as a guess: the space and lower-case
# letters (English frequency order), line breaks and the commonest punctuation, digits,
# upper-case letters, the rest of the printable ASCII.
_COMMON: Final = (
    b" etaoinsrhldcumfpgwybvkxjqz\n\t.,_()=:'\"/-0123456789"
    b"ETAOINSRHLDCUMFPGWYBVKXJQZ;{}[]<>*#+!?$%&@\\|^~`\r"
)
_RANK: Final = {byte: n for n, byte in enumerate(_COMMON)}
"""Rarity of a byte: higher is rarer; a byte not listed is rarer than all of them."""
_WORD_RARITY: Final = _RANK[ord("z")]
"""A byte this common or more (the space, lower-case letters) is never worth a scan of its own."""
_RARE_MISSES: Final = 8
"""Hits of the rare byte that are not the literal before the test falls back to ``find``."""
_FOLDED_BYTES: Final = 64
"""The case-insensitive test looks for at most this much of the literal."""


def prefilter_for(pattern: str, fixed: bool, ignore_case: bool) -> Callable[[bytes], bool]:
    """The byte test for a grep, or one that answers ``True`` when nothing can be ruled out.

    Case-sensitive, it looks for the literal's UTF-8 bytes. Case-insensitive, it looks only
    for an ASCII literal in ASCII bytes, where full Unicode case folding is ASCII's (a file
    with other bytes is searched: ``ss`` matches ``ß`` there). A literal holding a line
    ending, U+FFFD or a byte order mark rules nothing out: decoding changes those.
    """
    return _prefilter(pattern, fixed, ignore_case)


def _maybe(data: bytes) -> bool:
    return True


@functools.lru_cache(maxsize=64)
def _prefilter(pattern: str, fixed: bool, ignore_case: bool) -> Callable[[bytes], bool]:
    needle = _needle(pattern, fixed, ignore_case)
    if needle is None:
        return _maybe
    return _ascii_any_case(needle) if ignore_case else literal_test(needle)


def _needle(pattern: str, fixed: bool, ignore_case: bool) -> bytes | None:
    """The bytes the tests look for: the literal every match holds (case-insensitive: its
    first ``_FOLDED_BYTES``, and only an ASCII one), or ``None`` where it rules nothing out."""
    literal = pattern if fixed else required_literal(pattern)
    if not literal or any(c in literal for c in "\n\r\ufffd\ufeff"):
        return None
    if ignore_case:
        return literal.encode("ascii")[:_FOLDED_BYTES] if literal.isascii() else None
    return literal.encode("utf-8")


@functools.lru_cache(maxsize=64)
def _folded(needle: bytes) -> regex.Pattern[bytes]:
    """``needle`` for the regex module's case-insensitive search: on bytes it folds ASCII
    letters only, which is exact for ASCII text."""
    return regex.compile(regex.escape(needle), regex.IGNORECASE)


def literal_test(needle: bytes) -> Callable[[bytes], bool]:
    """A test for whether ``needle`` (non-empty) occurs in a file's bytes.

    Equal to ``data.find(needle) >= 0`` for every input; faster where the needle holds a
    byte that is rare in the file.
    """
    at = _rarest(needle)
    if len(needle) == 1 or _rarity(needle[at]) <= _WORD_RARITY:
        # find, not `in`: `in` first tries its operand as a byte value, and pays for a
        # TypeError on every file
        return lambda data: data.find(needle) >= 0
    rare = needle[at : at + 1]

    def holds(data: bytes) -> bool:
        hit = data.find(rare, at)
        misses = 0
        while hit >= 0:
            start = hit - at
            if data.startswith(needle, start):
                return True
            misses += 1
            if misses == _RARE_MISSES:
                return data.find(needle, start + 1) >= 0
            hit = data.find(rare, hit + 1)
        return False

    return holds


def _ascii_any_case(needle: bytes) -> Callable[[bytes], bool]:
    """A test for ``needle`` (ASCII) in any case, exact for ASCII bytes; other bytes pass."""
    search = _folded(needle).search
    at = _rarest(needle, caseless=True)
    if at < 0 or _rarity(needle[at]) <= _WORD_RARITY:

        def any_case(data: bytes) -> bool:
            return not data.isascii() or search(data) is not None

        return any_case
    # The rarest byte that is not a letter has one case: scan for it, compare folded.
    rare = needle[at : at + 1]
    folded = needle.lower()
    size = len(needle)

    def any_case_rare(data: bytes) -> bool:
        if not data.isascii():
            return True
        hit = data.find(rare, at)
        misses = 0
        while hit >= 0:
            start = hit - at
            if data[start : start + size].lower() == folded:
                return True
            misses += 1
            if misses == _RARE_MISSES:
                return search(data, start + 1) is not None
            hit = data.find(rare, hit + 1)
        return False

    return any_case_rare


def _rarity(byte: int) -> int:
    return _RANK.get(byte, len(_COMMON))


def _rarest(needle: bytes, *, caseless: bool = False) -> int:
    """The offset of the needle's rarest byte (the first of equals); with ``caseless``, of
    its rarest byte that is not an ASCII letter, or -1 if all are letters."""
    offsets = [n for n in range(len(needle)) if not (caseless and needle[n : n + 1].isalpha())]
    return max(offsets, key=lambda n: _rarity(needle[n]), default=-1)


def literal_finder(
    pattern: str, fixed: bool, ignore_case: bool
) -> Callable[[bytes, int], int] | None:
    """Where the literal every match holds next occurs in a file's bytes, from an offset.

    ``find(data, start)`` is the offset of the next occurrence at or after ``start``, or -1.
    Case-insensitive, it is exact only for ASCII ``data`` (the caller checks). ``None`` where
    no literal is known, or where :func:`prefilter_for` would rule nothing out.
    """
    return _finder(pattern, fixed, ignore_case)


@functools.lru_cache(maxsize=64)
def _finder(pattern: str, fixed: bool, ignore_case: bool) -> Callable[[bytes, int], int] | None:
    needle = _needle(pattern, fixed, ignore_case)
    if needle is None:
        return None
    if not ignore_case:
        return lambda data, start: data.find(needle, start)
    search = _folded(needle).search

    def find_any_case(data: bytes, start: int) -> int:
        found = search(data, start)
        return -1 if found is None else found.start()

    return find_any_case
