"""The grep engine: exact outputs per mode, line semantics, limits, and the fast-path property."""

from __future__ import annotations

import time

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st

from ctxfs import Limits, PatternError, SearchTimeoutError, Workspace
from ctxfs._workspace._grep import (
    FileResult,
    GrepLine,
    GrepOptions,
    _fast_spans,
    apply_paging,
    compile_pattern,
    search_file,
)
from ctxfs.sandbox import TimeBudget


def _search(data: bytes | str, pattern: str, **kwargs: object) -> FileResult:
    options = GrepOptions(pattern=pattern, **kwargs)  # type: ignore[arg-type]
    raw = data.encode() if isinstance(data, str) else data
    return search_file("/notes/f.txt", raw, compile_pattern(options), options)


def _content(data: bytes | str, pattern: str, **kwargs: object) -> list[str]:
    """Render content mode like ripgrep: ``N:text`` for matches, ``N-text`` for context."""
    result = _search(data, pattern, output_mode="content", **kwargs)
    rendered: list[str] = []
    for line in result.lines:
        if line.gap_before:
            rendered.append("--")
        rendered.append(f"{line.line_number}{':' if line.is_match else '-'}{line.text}")
    return rendered


TEN = "".join(f"l{n}\n" for n in range(1, 11))  # l1 .. l10


def test_content_without_context_has_no_gaps() -> None:
    assert _content(TEN, "l[28]") == ["2:l2", "8:l8"]


def test_after_context() -> None:
    assert _content(TEN, "l[28]", after=1) == ["2:l2", "3-l3", "--", "8:l8", "9-l9"]


def test_before_context_is_cut_at_the_file_start() -> None:
    assert _content(TEN, "l[28]", before=3) == [
        "1-l1",
        "2:l2",
        "--",
        "5-l5",
        "6-l6",
        "7-l7",
        "8:l8",
    ]


def test_overlapping_context_is_merged_without_repeats() -> None:
    assert _content(TEN, "l[35]", before=2, after=2) == [
        "1-l1",
        "2-l2",
        "3:l3",
        "4-l4",
        "5:l5",
        "6-l6",
        "7-l7",
    ]


def test_adjacent_context_windows_have_no_gap() -> None:
    assert _content(TEN, "l[25]$", after=1, before=1) == [
        "1-l1",
        "2:l2",
        "3-l3",
        "4-l4",
        "5:l5",
        "6-l6",
    ]


def test_after_context_is_cut_at_the_file_end_and_matches_inside_context_count() -> None:
    assert _content(TEN, "l(9|10)", after=3) == ["9:l9", "10:l10"]
    assert _search(TEN, "l(9|10)", output_mode="count").match_count == 2


def test_count_mode_counts_matching_lines_not_matches() -> None:
    result = _search("a a a\nb\na\n", "a", output_mode="count")
    assert result == FileResult("/notes/f.txt", match_count=2)


def test_files_mode_stops_at_the_first_match() -> None:
    assert _search("x\na\na\n", "a") == FileResult("/notes/f.txt", match_count=1)
    assert not _search("x\ny\n", "a").matched


def test_line_anchors_and_empty_lines() -> None:
    assert _content("x\n\ny\n", "^$") == ["2:"]
    assert _content("", "^") == []
    assert _content("\n", "^$") == ["1:"]
    assert _content("ab\nb\nab", "^b|b$") == ["1:ab", "2:b", "3:ab"]


def test_crlf_lines_lose_their_carriage_return() -> None:
    assert _content("one\r\ntwo\r\n", "e$", after=1) == ["1:one", "2-two"]
    assert _content("a\r\r\nb\r", r"\r$|b$") == ["1:a\r", "2:b"]


def test_a_match_never_spans_lines_without_multiline() -> None:
    data = "a\nb\nxa b\n"
    assert _content(data, r"a\sb") == ["3:xa b"]
    assert _search(data, r"a\sb", output_mode="count").match_count == 1
    assert _content("a\nb", r"a[^x]b") == []
    assert not _search("a\nb", r"a\sb").matched


def test_a_crossing_match_does_not_hide_a_later_one_on_its_line() -> None:
    # The leftmost match "a\nb" crosses a line break; line 1 on its own still matches "a$".
    assert _content("xa\nb\na\n", r"a\s*b|a$") == ["1:xa", "3:a"]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"\Ab", ["2:b"]),  # \A anchors at each line start
        (r"b\Z", ["1:ab", "2:b"]),  # \Z at each line end
        (r"(?<!ab\n)b", ["1:ab", "2:b"]),  # lookbehind cannot see the previous line
        (r"(?<=\n)b", []),
        (r"b(?!\n)", ["1:ab", "2:b"]),  # lookahead cannot see the line break
        (r"b\s*+$", ["1:ab", "2:b"]),  # possessive: there is no newline to swallow
        (r"b\n?\Kb", []),  # \K cannot hide a consumed line break
    ],
)
def test_patterns_that_look_beyond_the_line_keep_line_semantics(
    pattern: str, expected: list[str]
) -> None:
    assert _content("ab\nb", pattern) == expected


def test_multiline_matches_span_lines_and_dot_matches_newline() -> None:
    data = "start\nmiddle\nend\nother\nstart end\n"
    assert _content(data, "start.*?end", multiline=True) == [
        "1:start",
        "2:middle",
        "3:end",
        "5:start end",
    ]
    assert _search(data, "start.*?end", multiline=True, output_mode="count").match_count == 2
    assert _content("a\nb", r"a\sb", multiline=True) == ["1:a", "2:b"]


def test_multiline_context_and_final_newline() -> None:
    assert _content("x\nfoo\nbar\ny\nz\n", r"foo\nbar\n", multiline=True, before=1, after=1) == [
        "1-x",
        "2:foo",
        "3:bar",
        "4-y",
    ]
    assert _search("a\n", "$", multiline=True, output_mode="count").match_count == 1


def test_multiline_files_mode() -> None:
    assert _search("a\nb\n", r"a\nb", multiline=True).match_count == 1


def test_ignore_case_folds_unicode() -> None:
    assert _content("Ärger\näh\nah\n", "ä", ignore_case=True) == ["1:Ärger", "2:äh"]
    assert _content("Straße\nSTRASSE\n", "strasse", ignore_case=True) == [
        "1:Straße",
        "2:STRASSE",
    ]
    assert _content("Ärger\n", "ä") == []


def test_fixed_strings_are_literal() -> None:
    assert _content("a.b(c)\naxb(c)\n", "a.b(c)", fixed_strings=True) == ["1:a.b(c)"]
    assert _content("(?!x)\\A\n", "(?!x)\\A", fixed_strings=True) == ["1:(?!x)\\A"]


def test_binary_files_are_skipped() -> None:
    result = _search(b"match\x00match\n", "match", output_mode="content")
    assert result == FileResult("/notes/f.txt", binary=True)
    assert not result.matched


def test_invalid_utf8_is_replaced_and_a_bom_ignored() -> None:
    assert _content(b"caf\xe9\n", "caf\ufffd") == ["1:caf\ufffd"]
    assert _content(b"\xef\xbb\xbfstart\n", "^start") == ["1:start"]


def test_invalid_regex_names_the_problem() -> None:
    with pytest.raises(PatternError) as caught:
        compile_pattern(GrepOptions(pattern="foo(bar"))
    assert str(caught.value) == (
        "invalid regular expression 'foo(bar': missing ) at position 7; "
        "to search for the text literally, use fixed_strings"
    )
    compile_pattern(GrepOptions(pattern="foo(bar", fixed_strings=True))


def test_catastrophic_backtracking_times_out_quickly() -> None:
    options = GrepOptions(pattern="(a|aa)+$", timeout=0.2)
    compiled = compile_pattern(options)
    started = time.perf_counter()
    with pytest.raises(SearchTimeoutError) as caught:
        search_file("/big.txt", b"a" * 50_000 + b"b", compiled, options)
    # Generous bound: it proves "no hang" without timing the machine.
    assert time.perf_counter() - started < 10
    assert caught.value.path == "/big.txt"
    assert str(caught.value) == (
        "grep ran past its 0.2 s time limit while searching /big.txt for '(a|aa)+$'; the "
        "pattern may backtrack catastrophically or the search covers too much text: try a "
        "simpler pattern, fixed_strings, or a narrower path or glob"
    )
    assert isinstance(caught.value, TimeoutError)


def test_long_lines_are_clipped_with_a_marker() -> None:
    line = "x" * 50_000 + "needle" + "y" * 49_994
    result = _search(f"short\n{line}\n", "needle", output_mode="content", max_line_chars=10)
    assert result.lines == (
        GrepLine(2, "xxxxxxxxxx … [line clipped: 100000 chars]", is_match=True),
    )
    default = _search(line, "needle", output_mode="content").lines[0].text
    assert default == "x" * 2000 + " … [line clipped: 100000 chars]"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"before": -1},
        {"after": -1},
        {"max_line_chars": 0},
        {"timeout": 0},
        {"output_mode": "lines"},
    ],
)
def test_options_are_validated_at_construction(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        GrepOptions(pattern="x", **kwargs)  # type: ignore[arg-type]


def test_apply_paging() -> None:
    items = ["a", "b", "c", "d", "e"]
    assert apply_paging(items) == (items, False)
    assert apply_paging(items, 0, 2) == (["a", "b"], True)
    assert apply_paging(items, 3, 2) == (["d", "e"], False)
    assert apply_paging(items, 4, 0) == (["e"], False)
    assert apply_paging(items, 9, 2) == ([], False)
    with pytest.raises(ValueError):
        apply_paging(items, -1)


# -- the fast path agrees with a naive line-by-line reference ---------------------------------


def _reference(text: str, needle: str, before: int, after: int) -> list[tuple[int, bool]]:
    """Line by line, the obvious way: split, strip '\\r', find, then add context."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    if text == "":
        lines = []
    lines = [line.removesuffix("\r") for line in lines]
    hits = [i for i, line in enumerate(lines) if needle in line]
    wanted: dict[int, bool] = {}
    for i in hits:
        for j in range(max(0, i - before), min(len(lines), i + after + 1)):
            wanted[j] = wanted.get(j, False) or j == i
    return [(j + 1, wanted[j]) for j in sorted(wanted)]


_TEXT = st.text(alphabet="ab \n\r\t.", max_size=60)
_NEEDLE = st.text(alphabet="ab \r\n.", min_size=1, max_size=3)


@given(_TEXT, _NEEDLE, st.integers(0, 2), st.integers(0, 2), st.booleans())
def test_fast_path_agrees_with_line_by_line(
    text: str, needle: str, before: int, after: int, fixed: bool
) -> None:
    pattern = needle if fixed else needle.replace(".", r"\.")
    result = _search(
        text, pattern, fixed_strings=fixed, output_mode="content", before=before, after=after
    )
    expected = _reference(text, needle, before, after)
    assert [(line.line_number, line.is_match) for line in result.lines] == expected
    count = _search(text, pattern, fixed_strings=fixed, output_mode="count").match_count
    assert count == sum(is_match for _, is_match in expected)
    assert _search(text, pattern, fixed_strings=fixed).matched == (count > 0)


@given(_TEXT, st.sampled_from([r"a\sb", r"a[^x]*b", r"\s", r"^\s*$", r"b$", r"^a", r"a\W+"]))
def test_newline_crossing_patterns_agree_with_line_by_line(text: str, pattern: str) -> None:
    compiled = compile_pattern(GrepOptions(pattern=pattern))
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    expected = [
        n
        for n, line in enumerate(lines if text else [], start=1)
        if compiled.search(line.removesuffix("\r"))
    ]
    result = _search(text, pattern, output_mode="content")
    assert [line.line_number for line in result.lines] == expected


@given(_TEXT, _NEEDLE, st.integers(1, 8))
def test_chunked_search_agrees_with_line_by_line(text: str, needle: str, chunk: int) -> None:
    body = text.replace("\r\n", "\n")
    body = body[:-1] if body.endswith("\n") else body.removesuffix("\r")
    compiled = compile_pattern(GrepOptions(pattern=needle, fixed_strings=True))
    deadline = time.monotonic() + 60
    spans = _fast_spans(body, compiled, deadline, first_only=False, chunk_chars=chunk)
    found = [number for number, *_ in spans] if text else []
    expected = [number for number, is_match in _reference(text, needle, 0, 0) if is_match]
    assert found == expected


def _slow_line() -> tuple[str, float]:
    """A line that '(a|aa)+$' takes at least 10 ms of CPU to rule out, and that time."""
    pattern = regex.compile("(a|aa)+$")
    for size in range(14, 40):
        line = "a" * size + "!"
        started = time.process_time()
        pattern.search(line)
        spent = time.process_time() - started
        if spent >= 0.01:
            return line, spent
    raise AssertionError("no line was slow enough")  # pragma: no cover


def test_the_time_limit_holds_for_the_whole_grep_not_each_file() -> None:
    line, spent = _slow_line()
    ws = Workspace("memory://slow-grep", limits=Limits(regex_timeout=10 * spent))
    for n in range(40):  # each file alone stays well under the limit; all of them do not
        ws.write_text(f"/f{n:02}.txt", line + "\n")
    with pytest.raises(SearchTimeoutError) as caught:
        ws.grep("(a|aa)+$")
    assert caught.value.path is not None and caught.value.path < "/f39.txt"
    assert str(caught.value).startswith(f"grep ran past its {10 * spent:g} s time limit")


def test_time_budget_is_spent_across_pieces_of_work() -> None:
    budget = TimeBudget(5.0)
    with budget.spend() as first:
        assert first - time.monotonic() <= 5.0
    left = budget.left
    assert 0 < left <= 5.0
    with budget.spend() as second:
        assert second - time.monotonic() <= left
    with pytest.raises(ValueError, match="positive number of seconds"):
        TimeBudget(0)
