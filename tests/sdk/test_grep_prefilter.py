"""The byte prefilter: a literal every match must hold rules a file out before decoding.

Speed over many files comes from never decoding a file that cannot match; correctness needs
the literal to be truly required. Both are checked over generated patterns and texts: every
match contains the literal :func:`required_literal` gives, and grep finds the same with the
prefilter as without it.
"""

from __future__ import annotations

import time
import uuid

import pytest
import regex
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ctxfs._workspace import _grep
from ctxfs._workspace._grep import GrepOptions, compile_pattern, search_file
from ctxfs._workspace._literals import required_literal
from ctxfs._workspace._prefilter import literal_test, prefilter_for

_ATOMS = st.sampled_from(
    ["ab", "ba", "abc", "a", "b", " ", r"\.", ".", r"\w", r"\d", "[ab]", "[^a]", "(ab|b)", "(?:a)"]
)
_QUANT = st.sampled_from(["", "", "", "?", "*", "+", "{2}", "{0,2}"])
patterns = st.lists(st.tuples(_ATOMS, _QUANT), min_size=1, max_size=6).map(
    lambda parts: "".join(atom + quant for atom, quant in parts)
)
patterns = st.one_of(patterns, st.builds(lambda a, b: f"{a}|{b}", patterns, patterns))
texts = st.text(alphabet="abcAB .1\n", max_size=60)


@settings(max_examples=400, deadline=None)
@given(pattern=patterns, text=texts)
def test_every_match_holds_the_required_literal(pattern: str, text: str) -> None:
    literal = required_literal(pattern)
    if literal is None:
        return
    for found in regex.finditer(pattern, text):
        assert literal in found.group(), (pattern, literal, found.group())


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    pattern=patterns,
    text=texts,
    ignore_case=st.booleans(),
    mode=st.sampled_from(["files_with_matches", "count", "content"]),
)
def test_grep_finds_the_same_with_and_without_the_prefilter(
    pattern: str, text: str, ignore_case: bool, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = GrepOptions(pattern=pattern, ignore_case=ignore_case, output_mode=mode)  # type: ignore[arg-type]
    compiled = compile_pattern(options)
    data = text.encode()
    with_filter = search_file("/f", data, compiled, options)
    with monkeypatch.context() as patch:
        patch.setattr(_grep, "_ruled_out", lambda data, options: False)
        without = search_file("/f", data, compiled, options)
    assert with_filter == without


@pytest.mark.parametrize(
    ("pattern", "literal"),
    [
        (r"Conn\w+ Re[a-z]+ by", "Conn"),
        ("connection refused", "connection refused"),
        ("abcd?", "abc"),
        (r"foo\.bar", "foo.bar"),
        (r"\d+ errors found", " errors found"),
        ("ab|cd", None),
        ("(?i)abcdef", None),
        (r"\x41bcd", None),
        ("x(abc)yz", None),
    ],
)
def test_required_literals_of_known_patterns(pattern: str, literal: str | None) -> None:
    assert required_literal(pattern) == literal


_FOLDED = st.text(alphabet="abkKsS\u00df\u017f\u212a \n.", max_size=40)
"""Texts with letters whose full case folding leaves ASCII: ß (ss), ſ (s), the Kelvin sign (k)."""


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    texts=st.lists(_FOLDED, min_size=1, max_size=4),
    pattern=st.sampled_from(["ss", "kk", "abk", "sk", "k s", r"s\w*k", "ab.s"]),
    fixed=st.booleans(),
    mode=st.sampled_from(["files_with_matches", "count", "content"]),
)
def test_a_workspace_grep_finds_the_same_without_its_prefilter(
    texts: list[str], pattern: str, fixed: bool, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The byte prefilter (case-insensitive too) never rules out a file that has a match:
    over ASCII and non-ASCII files alike, grep finds the same as with no prefilter."""
    from ctxfs import Workspace
    from ctxfs._workspace import _find

    ws = Workspace(f"memory://prefilter-{uuid.uuid4().hex}")
    for n, text in enumerate(texts):
        ws.write_text(f"/f{n}.txt", text)
    kwargs = {"fixed_strings": fixed, "ignore_case": True, "output_mode": mode}
    found = ws.grep(pattern, "/", **kwargs)  # type: ignore[arg-type]
    with monkeypatch.context() as patch:
        patch.setattr(_find, "prefilter", lambda options: lambda data: True)
        patch.setattr(_grep, "_ruled_out", lambda data, options: False)
        unfiltered = ws.grep(pattern, "/", **kwargs)  # type: ignore[arg-type]
    assert found == unfiltered


def test_the_case_insensitive_prefilter_rules_out_only_ascii_files() -> None:
    test = _grep.prefilter(GrepOptions(pattern="strasse", ignore_case=True))
    assert test(b"a STRASSE here") and not test(b"nothing here")
    assert test("die Stra\u00dfe".encode())  # not ASCII: searched, and matched (ss = ß)
    options = GrepOptions(pattern="strasse", ignore_case=True, output_mode="count")
    data = "die Stra\u00dfe".encode()
    assert search_file("/f", data, compile_pattern(options), options).match_count == 1


# Bytes chosen so that a needle's rare byte (upper case, digits, '_', non-ASCII) occurs often
# without the needle: the scan for it must fall back to a full find, never miss.
_BYTES = (
    st.binary(max_size=200)
    .map(lambda b: bytes(c % 12 for c in b))
    .map(lambda b: b.translate(bytes.maketrans(bytes(range(12)), b"Cn_oN4 \n\xc3\xa9aE")))
)
_NEEDLES = st.sampled_from(
    [b"Conn", b"CC", b"NE_4", b"n_", b"C", b"\xc3\xa9C", b"oN4", b"aaE", b"na_n", b"Ca"]
)


@settings(max_examples=400, deadline=None)
@given(needle=_NEEDLES, data=_BYTES, repeat=st.integers(0, 12))
def test_the_rare_byte_scan_finds_what_find_finds(needle: bytes, data: bytes, repeat: int) -> None:
    data = needle[:-1] * repeat + data  # many near misses before the data
    assert literal_test(needle)(data) == (data.find(needle) >= 0)


@settings(max_examples=300, deadline=None)
@given(
    literal=st.sampled_from(["NE_4", "n_4", "4-e", "ab", "a_B_c", "x: 1"]),
    data=st.text(alphabet="nNeE_4-aAbBcC:x1 \n", max_size=200),
    repeat=st.integers(0, 12),
)
def test_the_case_insensitive_test_is_exact_on_ascii(literal: str, data: str, repeat: int) -> None:
    raw = (literal[:-1].upper() * repeat + data).encode()
    test = prefilter_for(literal, True, True)
    assert test(raw) == (literal.lower().encode() in raw.lower())


_LINE_TEXTS = st.lists(
    st.sampled_from(["ab", "abc", "Abc", "ss", "\u00df", "\r", "\n", "\r\n", " ", "x1", "abcd"]),
    max_size=30,
).map("".join)


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    pattern=st.sampled_from(["abc", r"abc\w", "^abc", r"abc$", r"\babc", "abcd?", "b?abc x"]),
    text=_LINE_TEXTS,
    prefix=st.sampled_from([b"", b"\xef\xbb\xbf", b"\xe2", b"\xc3"]),
    bad=st.sampled_from([b"", b"\xe2\n", b"\xffabc", b"\xc3\r\n"]),
    fixed=st.booleans(),
    ignore_case=st.booleans(),
    mode=st.sampled_from(["files_with_matches", "count"]),
)
@example(
    pattern="^abc",
    text="abc",
    prefix=b"\xef\xbb\xbf",
    bad=b"",
    fixed=False,
    ignore_case=False,
    mode="count",
)
def test_searching_only_the_lines_that_hold_the_literal_finds_the_same(
    pattern: str,
    text: str,
    prefix: bytes,
    bad: bytes,
    fixed: bool,
    ignore_case: bool,
    mode: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Counting matches over the lines whose bytes hold the literal (each decoded alone)
    gives what searching the whole decoded text gives: byte order marks, CRLF, invalid UTF-8
    and full case folding included."""
    options = GrepOptions(
        pattern=pattern,
        fixed_strings=fixed,
        ignore_case=ignore_case,
        output_mode=mode,  # type: ignore[arg-type]
    )
    compiled = compile_pattern(options)
    data = prefix + text.encode() + bad + text.encode()
    found = search_file("/f", data, compiled, options)
    with monkeypatch.context() as patch:
        patch.setattr(_grep, "_count_literal_lines", lambda *args: None)
        whole = search_file("/f", data, compiled, options)
    assert found == whole


def test_many_lines_holding_the_literal_fall_back_to_the_whole_text() -> None:
    options = GrepOptions(pattern=r"abc\d", output_mode="count")
    compiled, deadline = compile_pattern(options), time.monotonic() + 60
    data = b"abc\n" * 100 + b"abc1\n"
    assert _grep._count_literal_lines(data, compiled, options, deadline) is None
    assert search_file("/f", data, compiled, options).match_count == 1
    few = b"abc\n" * 3 + b"abc1\nabc2\n"
    assert _grep._count_literal_lines(few, compiled, options, deadline) == 2
