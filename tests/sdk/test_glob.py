"""The glob matcher: every syntax rule by example, and escaping / separator properties."""

from __future__ import annotations

import time
import tracemalloc

import pytest
from _glob_oracle import oracle_matches
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxfs import PatternError
from ctxfs._workspace._glob import (
    MAX_ALTERNATIVES,
    MAX_BRACE_DEPTH,
    MAX_EXPANDED_CHARS,
    compile_glob,
    escape_glob,
)


def _check(pattern: str, matching: list[str], not_matching: list[str]) -> None:
    matcher = compile_glob(pattern)
    assert [p for p in matching if not matcher.matches(p)] == []
    assert [p for p in not_matching if matcher.matches(p)] == []


@pytest.mark.parametrize(
    ("pattern", "matching", "not_matching"),
    [
        # '*' and '?' stay inside one segment
        ("src/*", ["src/a.py", "src/b"], ["src/x/a.py", "src", "lib/a.py"]),
        ("src/a?.py", ["src/ab.py"], ["src/a.py", "src/abc.py", "src/a/.py"]),
        ("a*b", ["ab", "axxb"], ["ax/b", "x/ax/b/c"]),
        # classes
        ("f[abc].txt", ["fa.txt", "fc.txt"], ["fd.txt", "f.txt"]),
        ("f[a-c].txt", ["fb.txt"], ["fd.txt"]),
        ("f[!a-c].txt", ["fd.txt", "fZ.txt"], ["fa.txt", "f/.txt"]),
        ("f[^a-c].txt", ["fd.txt"], ["fb.txt"]),
        ("a[/]b", [], ["a/b"]),
        ("a[!x]b", ["ayb"], ["a/b"]),
        ("[]x]", ["]", "x", "d/]"], ["y"]),
        ("[a-]", ["a", "-"], ["b"]),
        # braces: alternation, nested, with wildcards and separators, empty alternatives
        ("*.{py,md}", ["a.py", "d/r.md"], ["a.txt", "a.pymd"]),
        ("{src,lib/{x,y}}/*.py", ["src/a.py", "lib/x/a.py", "lib/y/b.py"], ["lib/a.py"]),
        ("a{,.bak}", ["a", "a.bak", "d/a.bak"], ["a.b"]),
        ("{a**,**}", ["a/b", "ab", "x/y"], [".a", "x/.y"]),
        ("{*.py,.env}", ["x.py", ".env", "d/.env"], [".x.py"]),
        # '**' as a whole segment
        ("a/**/b", ["a/b", "a/x/b", "a/x/y/b"], ["b", "a/xb", "x/a/b", "a/x/b/c"]),
        ("a/**", ["a/x", "a/x/y"], ["a", "ab/x", "x/a/y"]),
        ("**/b", ["b", "x/b", "x/y/b"], ["xb", "b/x"]),
        ("**", ["a", "a/b/c"], []),
        ("a/**/**/b", ["a/b", "a/x/y/b"], ["a/x"]),
        # '**' inside a segment is '*'
        ("a**b", ["axxb"], ["ax/xb"]),
        ("**.py", ["a.py", "d/a.py"], []),
        # basename at any depth without '/', anchored with one
        ("*.py", ["a.py", "src/x/a.py"], ["a.pyc", "a.py/x"]),
        ("src/*.py", ["src/a.py"], ["x/src/a.py"]),
        ("/*.py", ["a.py"], ["src/a.py"]),
        ("/src/a.py", ["src/a.py"], ["x/src/a.py"]),
        ("src//a.py/", ["src/a.py"], []),
        # everything else is literal
        ("a.b", ["a.b"], ["axb"]),
        ("a+(b)|$^", ["a+(b)|$^"], ["a(b)"]),
        (r"a\*", ["a\\x", "a\\"], ["a*"]),
        ("x}y,z", ["x}y,z"], []),
        ("[[]...slug[]].tsx", ["app/[...slug].tsx"], ["app/s.tsx"]),
        ("[...slug].tsx", ["s.tsx", "a/g.tsx"], ["[...slug].tsx", ".tsx"]),
        ("ünï/*", ["ünï/ç"], ["uni/c"]),
    ],
)
def test_glob_rules(pattern: str, matching: list[str], not_matching: list[str]) -> None:
    _check(pattern, matching, not_matching)


@pytest.mark.parametrize(
    ("pattern", "matching", "not_matching"),
    [
        ("**/*.py", ["a.py", "x/a.py"], [".venv/x.py", "a/.hidden.py", ".a.py", "a/.b/c.py"]),
        ("*.py", ["x/a.py"], [".venv/x.py", ".a.py"]),
        ("*", ["a"], [".env"]),
        ("?env", ["xenv"], [".env"]),
        ("[.]env", [], [".env"]),
        ("**", ["a/b"], [".git/HEAD", "a/.b", ".a"]),
        ("a/**", ["a/b"], ["a/.b", "a/.b/c"]),
        (".env", [".env", "d/.env"], ["env"]),
        (".*", [".env", "d/.git"], ["env"]),
        (".git/**", [".git/HEAD", ".git/refs/x"], ["git/HEAD"]),
        ("**/.cache/*", [".cache/x", "a/.cache/x"], [".cache/.x", ".cache"]),
        (".venv/*.py", [".venv/x.py"], [".venv/a/x.py"]),
        ("**/.hidden.py", ["a/.hidden.py", ".hidden.py"], [".a/.hidden.py"]),
        ("a.*", ["a.b"], []),
    ],
)
def test_hidden_segments_need_a_literal_dot(
    pattern: str, matching: list[str], not_matching: list[str]
) -> None:
    _check(pattern, matching, not_matching)


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("", "empty glob pattern ''; write e.g. '*' or '**/*.py'"),
        ("//", "empty glob pattern '//'; write e.g. '*' or '**/*.py'"),
        (
            "src/[abc",
            "unclosed '[' at position 4 in glob pattern 'src/[abc'; write a literal '[' as '[[]'",
        ),
        ("[!]", "unclosed '[' at position 0 in glob pattern '[!]'; write a literal '[' as '[[]'"),
        (
            "*.{py,md",
            "unclosed '{' at position 2 in glob pattern '*.{py,md'; write a literal '{' as '[{]'",
        ),
        (
            "{a,{b,c}",
            "unclosed '{' at position 0 in glob pattern '{a,{b,c}'; write a literal '{' as '[{]'",
        ),
        ("[z-a]", "reversed range 'z-a' in glob class '[z-a]'; write 'a-z'"),
    ],
)
def test_bad_patterns_raise_with_a_clear_message(pattern: str, message: str) -> None:
    with pytest.raises(PatternError) as caught:
        compile_glob(pattern)
    assert str(caught.value) == message


def test_brace_explosion_is_refused() -> None:
    compile_glob("{a,b}" * 10)  # 1024 alternatives is the limit, still fine
    with pytest.raises(PatternError, match=f"more than {MAX_ALTERNATIVES} alternatives"):
        compile_glob("{a,b}" * 11)


def test_brace_explosion_is_refused_before_anything_is_expanded() -> None:
    # 100 distinct options of 1,024 alternatives each: expanding first would build 102,400
    # strings (about 13 MB) before noticing.
    pattern = "{" + ",".join("{a,b}" * 10 + f"x{i}" for i in range(100)) + "}"
    tracemalloc.start()
    try:
        with pytest.raises(PatternError, match=f"more than {MAX_ALTERNATIVES} alternatives"):
            compile_glob(pattern)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20


def test_expanded_size_and_nesting_are_capped() -> None:
    long_options = "{a,b,c,d}{" + ",".join("x" * 1000 + str(i) for i in range(20)) + "}"
    with pytest.raises(PatternError) as caught:
        compile_glob(long_options)
    assert str(caught.value) == (
        f"glob pattern {long_options[:100]!r}… ({len(long_options)} chars) "
        f"expands to more than {MAX_EXPANDED_CHARS} characters; "
        "use fewer or shorter '{...}' alternatives"
    )
    with pytest.raises(PatternError) as caught:
        compile_glob("x" * (MAX_EXPANDED_CHARS + 1))
    assert str(caught.value) == (
        f"glob pattern is longer than {MAX_EXPANDED_CHARS} characters; use a shorter one"
    )
    nested = "{" * (MAX_BRACE_DEPTH + 1) + "}" * (MAX_BRACE_DEPTH + 1)
    with pytest.raises(PatternError, match=f"nests '{{' more than {MAX_BRACE_DEPTH} deep"):
        compile_glob(nested)
    compile_glob("{" * MAX_BRACE_DEPTH + "a" + "}" * MAX_BRACE_DEPTH)


@pytest.mark.parametrize(
    "pattern", ["*a*a*a*a*a*a*a*b", "**/*a*a*a*a*a*a*a*a*a*b", "{*a,*b}*a*a*a*a*a*a*c"]
)
def test_matching_never_backtracks(pattern: str) -> None:
    # With a backtracking regular expression each of these takes minutes on 100 characters.
    matcher = compile_glob(pattern)
    names = ["a" * 100, "a/" * 50 + "a" * 100, "ab" * 50 + "x"]
    started = time.process_time()
    for _ in range(20):
        assert not any(matcher.matches(name) for name in names)
    assert time.process_time() - started < 1.0
    assert matcher.matches("a" * 100 + "b") == pattern.endswith("b")


_PIECES = st.sampled_from(
    [
        "a",
        "b",
        ".",
        "/",
        "*",
        "**",
        "?",
        "[ab]",
        "[!a]",
        "[.a]",
        "{a,b}",
        "{,.}",
        "{a/,*}",
        "{a**,**}",
    ]
)


@settings(max_examples=1000)
@given(
    st.lists(_PIECES, min_size=1, max_size=6).map("".join),
    st.lists(st.sampled_from(["a", "b", ".", "/", "c"]), max_size=8).map("".join),
)
def test_automaton_agrees_with_the_regular_expression_translation(pattern: str, path: str) -> None:
    try:
        expected = oracle_matches(pattern, path)
    except PatternError:
        with pytest.raises(PatternError):
            compile_glob(pattern)
        return
    assert compile_glob(pattern).matches(path) == expected


def test_pattern_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        compile_glob("[")


def test_matcher_is_frozen_and_keeps_its_pattern() -> None:
    matcher = compile_glob("*.py")
    assert matcher.pattern == "*.py"
    with pytest.raises(AttributeError):
        matcher.pattern = "x"  # type: ignore[misc]


def test_escape_glob_wraps_specials_in_classes() -> None:
    assert escape_glob("[...slug]/{a,b}*?.tsx") == "[[]...slug[]]/[{]a[,]b[}][*][?].tsx"


_SEGMENT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/"),
    min_size=1,
    max_size=12,
)
_RELPATH = st.lists(
    st.one_of(_SEGMENT, st.sampled_from([".", "..", ".env", "[", "]", "{a,b}", "*", "[!x]"])),
    min_size=1,
    max_size=4,
).map("/".join)


@given(_RELPATH)
def test_escaped_path_matches_itself(path: str) -> None:
    assert compile_glob(escape_glob(path)).matches(path)


@given(_RELPATH, _RELPATH)
def test_anchored_escaped_path_matches_only_itself(path: str, other: str) -> None:
    assert compile_glob("/" + escape_glob(path)).matches(other) == (path == other)


@given(st.text(max_size=8), st.text(max_size=8), st.text(max_size=8), st.text(max_size=8))
def test_star_never_matches_a_separator(head: str, left: str, right: str, tail: str) -> None:
    middle = f"{left}/{right}"
    assert not compile_glob("/*").matches(middle)
    assert not compile_glob("/?").matches(middle)
    anchored = compile_glob(f"/{escape_glob(head)}*{escape_glob(tail)}")
    assert not anchored.matches(f"{head}{middle}{tail}")


@given(_SEGMENT.filter(lambda s: not s.startswith(".")), st.lists(_SEGMENT, max_size=3))
def test_basename_pattern_is_depth_independent(name: str, parents: list[str]) -> None:
    visible = all(not p.startswith(".") for p in parents)
    path = "/".join([*parents, name])
    assert compile_glob("*").matches(path) == visible
    assert compile_glob("**/*").matches(path) == visible
