"""The byte prefilter: a literal every match must hold rules a file out before decoding.

Speed over many files comes from never decoding a file that cannot match; correctness needs
the literal to be truly required. Both are checked over generated patterns and texts: every
match contains the literal :func:`required_literal` gives, and grep finds the same with the
prefilter as without it.
"""

from __future__ import annotations

import uuid

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxfs._workspace import _grep
from ctxfs._workspace._grep import GrepOptions, compile_pattern, search_file
from ctxfs._workspace._literals import required_literal

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
