"""Every rule of ``normalize_path``, each with the message the agent reads."""

from __future__ import annotations

import pytest

from ctxfs import UnsafePathError
from ctxfs.sandbox import MAX_NAME_BYTES, MAX_PATH_BYTES, is_within, normalize_path, relative_to


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("", "/"),
        (".", "/"),
        ("/", "/"),
        ("//", "/"),
        ("./a", "/a"),
        ("a", "/a"),
        ("a//b", "/a/b"),
        ("/a/./b", "/a/b"),
        ("a/b/../c", "/a/c"),
        ("a/b/..", "/a"),
        ("a/..", "/"),
        ("/a/b/", "/a/b"),
        ("a/./././b/.", "/a/b"),
        ("report..final.md", "/report..final.md"),
        ("/app/[...slug]/page.tsx", "/app/[...slug]/page.tsx"),
        ("...", "/..."),
        ("..../x", "/..../x"),
        ("..a/b..", "/..a/b.."),
        (".hidden", "/.hidden"),
        ("%2e%2e/%2f", "/%2e%2e/%2f"),
        ("a b/ c ", "/a b/ c "),
        ("漢字/ファイル.md", "/漢字/ファイル.md"),
        ("x:y", "/x:y"),
        ("a~/~b", "/a~/~b"),
        ("/" + "n" * MAX_NAME_BYTES, "/" + "n" * MAX_NAME_BYTES),
    ],
)
def test_paths_normalise(raw: str, expected: str) -> None:
    assert normalize_path(raw) == expected
    assert normalize_path(expected) == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("..", r"^path '\.\.' climbs above the workspace root with '\.\.'; paths are rooted"),
        ("../x", r"climbs above the workspace root"),
        ("/a/../../x", r"climbs above the workspace root"),
        ("a/./../../x", r"climbs above the workspace root"),
        ("~", r"^path '~' starts with '~'; home directories are outside the workspace"),
        ("~/notes.md", r"starts with '~'"),
        ("~root/x", r"starts with '~'"),
        ("s3://bucket/key", r"^path 's3://bucket/key' is a URL or drive path; give a workspace"),
        ("file:///etc/passwd", r"is a URL or drive path"),
        ("http://example.com/x", r"is a URL or drive path"),
        ("memory://other/x", r"is a URL or drive path"),
        ("C:/Windows", r"is a URL or drive path"),
        ("c:", r"is a URL or drive path"),
        ("a\x00b", r"^path 'a\\x00b' contains a NUL or control character; use a plain name"),
        ("a\nb", r"contains a NUL or control character"),
        ("tab\there", r"contains a NUL or control character"),
        ("esc\x1b[31m", r"contains a NUL or control character"),
        ("del\x7f", r"contains a NUL or control character"),
        ("c1\x85", r"contains a NUL or control character"),
        ("a\\b", r"contains a backslash; separate folders with '/'"),
        ("..\\..\\x", r"contains a backslash"),
        ("C:\\Windows", r"contains a backslash"),
        ("\ud800", r"not valid Unicode \(lone surrogate\)"),
    ],
)
def test_unsafe_paths_are_refused_with_a_reason(raw: str, message: str) -> None:
    with pytest.raises(UnsafePathError, match=message) as caught:
        normalize_path(raw)
    assert caught.value.path == raw
    assert isinstance(caught.value, ValueError)


def test_overlong_names_are_refused_in_bytes_not_characters() -> None:
    with pytest.raises(UnsafePathError, match=rf"has a name longer than {MAX_NAME_BYTES} bytes"):
        normalize_path("/dir/" + "n" * (MAX_NAME_BYTES + 1))
    assert normalize_path("/" + "文" * 85) == "/" + "文" * 85  # 255 bytes
    with pytest.raises(UnsafePathError, match=r"name longer than"):
        normalize_path("/" + "文" * 86)  # 258 bytes, 86 characters


def test_overlong_paths_are_refused() -> None:
    name = "n" * 200
    fits = "/" + "/".join([name] * 20)  # 4020 bytes
    assert normalize_path(fits) == fits
    with pytest.raises(UnsafePathError, match=rf"^path is longer than {MAX_PATH_BYTES} bytes"):
        normalize_path(fits + "/" + name)


def test_an_overlong_name_that_a_later_dotdot_removes_is_still_refused() -> None:
    # Refusing early is the safe side: the name was given, whatever follows it.
    with pytest.raises(UnsafePathError, match=r"name longer than"):
        normalize_path("n" * 300 + "/..")


def test_non_strings_are_refused() -> None:
    with pytest.raises(UnsafePathError, match=r"path must be a string, got bytes"):
        normalize_path(b"/a")  # type: ignore[arg-type]


def test_is_within_compares_whole_segments() -> None:
    assert is_within("/a/b", "/a/b")
    assert is_within("/a/b/c", "/a/b")
    assert not is_within("/a/bc", "/a/b")
    assert not is_within("/a", "/a/b")
    assert is_within("/anything", "/")


def test_relative_to() -> None:
    assert relative_to("/a/b/c", "/a") == "b/c"
    assert relative_to("/a", "/a") == ""
    assert relative_to("/a/b", "/") == "a/b"
