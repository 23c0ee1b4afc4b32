"""Paging through text with bounded memory: ``read_page`` and ``Workspace.read_lines``."""

from __future__ import annotations

import gc
import io
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxfs._workspace._textread as textread
from ctxfs import NotTextError, ReadResult, Workspace
from ctxfs._workspace._textread import read_page


def page(
    data: bytes, offset: int = 0, limit: int = 100, line: int = 50, chars: int = 10_000
) -> ReadResult:
    return read_page(
        io.BytesIO(data),
        "/f.txt",
        offset=offset,
        limit=limit,
        max_line_chars=line,
        max_chars=chars,
    )


def reference_lines(text: str) -> list[str]:
    """Lines end at \\n, a \\r before it is dropped, a final line without \\n still counts."""
    if text == "":
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 1 << 16])
def test_chunk_boundaries_do_not_change_the_result(
    monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    # CRLF split between chunks, a 4-byte character split between chunks, clipping mid-line.
    text = "ab\r\n😀é\r\n" + "x" * 12 + "\n\r\nend\r"
    monkeypatch.setattr(textread, "CHUNK_BYTES", chunk)
    result = page(text.encode(), line=10)
    assert result.lines == ("ab", "😀é", "x" * 10, "", "end")
    assert result.clipped == ((2, 12),)
    assert result.total_lines == 5


@settings(max_examples=150, deadline=None)
@given(
    text=st.lists(st.sampled_from(["a", "é", "😀", "\n", "\r", "\r\n", " "]), max_size=60).map(
        "".join
    ),
    chunk=st.integers(min_value=1, max_value=9),
    offset=st.integers(min_value=0, max_value=12),
    limit=st.integers(min_value=1, max_value=12),
)
def test_read_page_matches_a_simple_reference(
    text: str, chunk: int, offset: int, limit: int
) -> None:
    original = textread.CHUNK_BYTES
    textread.CHUNK_BYTES = chunk
    try:
        result = page(text.encode(), offset=offset, limit=limit, line=1000)
    finally:
        textread.CHUNK_BYTES = original
    expected = reference_lines(text)
    assert result.total_lines == len(expected)
    assert list(result.lines) == expected[offset : offset + limit]
    end = offset + len(result.lines)
    assert result.next_offset == (end if end < len(expected) else None)


def test_clipping_keeps_the_start_and_reports_the_full_length() -> None:
    result = page(("é" * 30 + "\n" + "short\n").encode(), line=10)
    assert result.lines == ("é" * 10, "short")
    assert result.clipped == ((0, 30),)


def test_a_line_of_exactly_the_limit_is_not_clipped_even_with_crlf() -> None:
    result = page(b"0123456789\r\n", line=10)
    assert result.lines == ("0123456789",)
    assert result.clipped == ()


def test_the_character_cap_stops_at_a_line_boundary() -> None:
    # "aaaa\nbbbb" is 9 characters: it fits a cap of 9, not a cap of 8.
    assert page(b"aaaa\nbbbb\ncccc\n", chars=9).lines == ("aaaa", "bbbb")
    result = page(b"aaaa\nbbbb\ncccc\n", chars=8)
    assert result.lines == ("aaaa",)
    assert result.stopped_by_chars
    assert result.next_offset == 1
    first_alone = page(b"a" * 40 + b"\nb\n", line=30, chars=5)
    assert first_alone.lines == ("a" * 30,)
    assert first_alone.next_offset == 1


def test_nul_anywhere_makes_it_binary_even_after_the_page() -> None:
    with pytest.raises(NotTextError, match=r"^/f.txt is a binary file \(it contains NUL bytes\)"):
        page(b"fine\n" * 100_000 + b"\x00", limit=1)


def test_invalid_utf8_inside_the_page_is_not_text() -> None:
    with pytest.raises(NotTextError, match=r"^/f.txt is not valid UTF-8 text \(invalid"):
        page(b"ok\n\xff\xfe\n")
    with pytest.raises(NotTextError, match=r"not valid UTF-8"):
        page(b"ok\n\xe2\x82")  # a character cut by the end of the file


def test_empty_stream_has_no_lines() -> None:
    result = page(b"")
    assert result.lines == () and result.total_lines == 0 and result.next_offset is None


FIFTY_MB = 50 * 2**20


@pytest.mark.parametrize("backend", ["memory", "local"])
def test_a_50_mb_single_line_file_is_paged_with_bounded_memory(
    tmp_path: Path, backend: str
) -> None:
    workspace = Workspace("memory://big" if backend == "memory" else tmp_path / "ws")
    workspace.write_bytes("/one-line.txt", b"x" * FIFTY_MB)
    gc.collect()

    # The memory backend holds the 50 MB already; only what the read allocates is measured.
    tracemalloc.start()
    try:
        result = workspace.read_lines("/one-line.txt")
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert peak < 5 * 2**20, f"read_lines allocated {peak / 2**20:.1f} MiB at peak"
    assert result.lines == ("x" * workspace.limits.max_line_chars,)
    assert result.clipped == ((0, FIFTY_MB),)
    assert result.total_lines == 1
    assert result.next_offset is None


@given(
    lines=st.lists(
        st.text(
            alphabet=st.characters(blacklist_characters="\n\x00", blacklist_categories=("Cs",)),
            max_size=40,
        )
    ),
    clip=st.integers(min_value=1, max_value=9),
)
def test_clipped_lines_read_back_whole_through_column(lines: list[str], clip: int) -> None:
    """Nothing is out of reach: stepping `column` by what each read returned rebuilds every
    line exactly, however long it is compared with the clip."""
    data = "\n".join(lines).encode()
    total = read_page(
        io.BytesIO(data), "/f", offset=0, limit=1, max_line_chars=clip, max_chars=10**6
    ).total_lines
    rebuilt = []
    for number in range(total):
        column, pieces = 0, []
        while True:
            page = read_page(
                io.BytesIO(data),
                "/f",
                offset=number,
                limit=1,
                max_line_chars=clip,
                max_chars=10**6,
                column=column,
            )
            pieces.append(page.lines[0])
            column += len(page.lines[0])
            if not page.clipped or page.clipped[0][1] <= column:
                break
        rebuilt.append("".join(pieces))
    parts = data.decode().split("\n")
    if parts[-1] == "":
        parts.pop()  # a final newline ends the last line, it does not start another
    expected = [line.removesuffix("\r") for line in parts]
    assert rebuilt == expected
