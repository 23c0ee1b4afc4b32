"""Every grep and glob is bounded: literals in linear time, the call in wall time.

Issue 24.5: a 6,000-character literal over a 2 MB line took 24 s with no error, the regex
module preparing a long literal in time that grows with the cube of its length before any
timeout applies. Fixed strings are now found with ``str.find`` (linear) wherever that is
exact, a long literal in a regular expression is kept from that preparation, and the whole
call is bounded in wall time (``Limits.search_timeout``) whatever the store does. No timed
assertions: the tests check which mechanism runs, and that each bound triggers.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxfs import FileInfo, Limits, SearchTimeoutError, Workspace
from ctxfs._workspace._grep import GrepOptions, compile_pattern, search_file
from ctxfs.backends import Store


class _NoRegex:
    """A compiled pattern that must not be used: the literal path never needs one."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the regex module was used ({name}) for a fixed string")


def _lines(text: str, needle: str, *, fold: bool) -> list[int]:
    """The obvious reference: each line on its own, '\\r' stripped."""
    lines = text.replace("\r\n", "\n").split("\n")
    if text.endswith("\n"):
        lines.pop()
    if not text:
        lines = []
    if fold:
        return [n for n, line in enumerate(lines, 1) if needle.lower() in line.lower()]
    return [n for n, line in enumerate(lines, 1) if needle in line]


_ASCII = st.text(alphabet="aAbB \n\r.", max_size=80)
_ASCII_NEEDLE = st.text(alphabet="aAbB .", min_size=1, max_size=4)


@settings(max_examples=300)
@given(text=_ASCII, needle=_ASCII_NEEDLE, ignore_case=st.booleans())
def test_fixed_strings_are_found_without_the_regex_module_and_agree_line_by_line(
    text: str, needle: str, ignore_case: bool
) -> None:
    options = GrepOptions(
        pattern=needle, fixed_strings=True, ignore_case=ignore_case, output_mode="content"
    )
    result = search_file("/f", text.encode(), _NoRegex(), options)  # type: ignore[arg-type]
    expected = _lines(text, needle, fold=ignore_case)
    assert [line.line_number for line in result.lines] == expected
    assert result.match_count == len(expected)


@settings(max_examples=200)
@given(
    text=st.text(alphabet="aßsSkK\u212a \n", max_size=40),
    needle=st.text(alphabet="aßsSkK\u212a", min_size=1, max_size=3),
)
def test_beyond_ascii_case_folding_is_left_to_the_regex_module(text: str, needle: str) -> None:
    # 'ß' matches 'ss' and the Kelvin sign 'k' under full case folding: lowering is not
    # exact there, so the regex module decides, and agrees with itself line by line.
    options = GrepOptions(
        pattern=needle, fixed_strings=True, ignore_case=True, output_mode="content"
    )
    compiled = compile_pattern(options)
    found = search_file("/f", text.encode(), compiled, options)
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    expected = [n for n, line in enumerate(lines if text else [], 1) if compiled.search(line)]
    assert [line.line_number for line in found.lines] == expected


@pytest.mark.parametrize("length", [6_000, 20_000])
def test_a_long_hostile_literal_over_a_long_line_never_reaches_the_regex_module(
    length: int,
) -> None:
    line = "a" * (2 * 2**20)
    for needle, hits in [("a" * length, 1), ("a" * (length - 1) + "b", 0)]:
        for ignore_case in (False, True):
            options = GrepOptions(
                pattern=needle, fixed_strings=True, ignore_case=ignore_case, output_mode="count"
            )
            found = search_file("/f", line.encode(), _NoRegex(), options)  # type: ignore[arg-type]
            assert found.match_count == hits


_LONG = st.builds(
    lambda unit, times, tail: unit * times + tail,
    st.sampled_from(["a", "ab", "x y", "-_,"]),
    st.integers(min_value=130, max_value=150),
    st.sampled_from(["", "b", r"\d", "c?"]),
)


@settings(max_examples=30, deadline=None)
@given(pattern=_LONG, text=st.text(alphabet="ab xy-_,\n1", max_size=300))
def test_a_regex_with_a_long_literal_is_guarded_and_matches_the_same(
    pattern: str, text: str
) -> None:
    guarded = compile_pattern(GrepOptions(pattern=pattern))
    assert guarded.pattern.endswith("|(?!)")  # kept from the cubic literal preparation
    plain = regex.compile(pattern, regex.MULTILINE)
    for haystack in (text, text + pattern.replace("\\d", "1").replace("c?", "") + text):
        assert [m.span() for m in guarded.finditer(haystack)] == [
            m.span() for m in plain.finditer(haystack)
        ]


def test_a_short_pattern_is_compiled_as_given() -> None:
    assert compile_pattern(GrepOptions(pattern=r"Conn\w+ Re[a-z]+ by")).pattern == (
        r"Conn\w+ Re[a-z]+ by"
    )


def test_a_long_literal_regex_over_a_long_line_hits_the_time_limit() -> None:
    ws = Workspace("memory://long-literal", limits=Limits(regex_timeout=0.01))
    # The literal is there (so the byte prefilter cannot rule the file out), after a long
    # line of near misses.
    # In content mode the regex runs over the whole text, the long line included. (Listing
    # the matching files searches only the lines whose bytes hold the literal: the short one.)
    ws.write_text("/big.txt", "ab" * 2**20 + "\n" + "ab" * 3_000 + "c\n")
    with pytest.raises(SearchTimeoutError, match=r"^grep ran past its 0.01 s time limit"):
        ws.grep("ab" * 3_000 + "c", output_mode="content")


# -- the whole call, in wall time ------------------------------------------------------------


class _SlowStore:
    """A store whose listing and reading take ``pause`` seconds per file."""

    def __init__(self, inner: Store, pause: float) -> None:
        self._inner = inner
        self._pause = pause

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def walk(self, path: str) -> Iterator[FileInfo]:
        for info in self._inner.walk(path):
            time.sleep(self._pause)
            yield info

    def fetch(self, files: Iterable[FileInfo]) -> Iterator[tuple[FileInfo, bytes]]:
        for info, data in self._inner.fetch(files):
            time.sleep(self._pause)
            yield info, data


def _slow(pause: float, files: int, limits: Limits) -> Workspace:
    inner = Workspace("memory://slow-store")
    for n in range(files):
        inner.write_text(f"/f{n}.txt", "needle\n")
    return Workspace(_SlowStore(inner.store, pause), limits=limits, check=False)  # type: ignore[arg-type]


@pytest.mark.parametrize("call", ["grep", "glob", "grep_glob"])
def test_listing_and_reading_count_against_the_wall_time_bound(call: str) -> None:
    # Each file takes longer than the whole bound: the call must stop at the bound, whatever
    # part of it the time goes to; matching alone would never trigger regex_timeout.
    ws = _slow(0.02, 5, Limits(search_timeout=0.01))
    with pytest.raises(SearchTimeoutError, match=r"ran past its 0.01 s limit \(listing"):
        if call == "grep":
            ws.grep("needle")
        elif call == "glob":
            ws.glob("*.txt")
        else:
            ws.grep("needle", glob="*.txt")


def test_a_generous_wall_time_bound_changes_nothing() -> None:
    ws = _slow(0.0, 5, Limits(search_timeout=60))
    assert len(ws.grep("needle").files) == 5
    assert len(ws.glob("*.txt").paths) == 5


def test_a_pattern_longer_than_grep_takes_is_refused_before_it_is_parsed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Parsing costs the regex module about 3 µs a character before any timeout: a pattern
    of a megabyte is refused by its length, and is never compiled."""
    from ctxfs import PatternError
    from ctxfs._workspace import _grep

    ws = Workspace("memory://grep-long-pattern")
    ws.write_text("/a.txt", "x" * 100 + "\n")
    compiled: list[str] = []
    real = regex.compile
    monkeypatch.setattr(_grep.regex, "compile", lambda p, f=0: compiled.append(p) or real(p, f))
    for fixed in (False, True):
        with pytest.raises(PatternError, match="longer than grep takes"):
            ws.grep("x" * (_grep.MAX_PATTERN_CHARS + 1), fixed_strings=fixed)
    assert compiled == []
    found = ws.grep("x" * 100 + "|" + "y" * (_grep.MAX_PATTERN_CHARS - 101))
    assert [f.path for f in found.files] == ["/a.txt"]
    assert len(compiled) == 1  # compiled once, not once to check and once to search
