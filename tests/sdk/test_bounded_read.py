"""Bounded reads of whole files (issue 24.8, the storage part): at most
``Limits.max_read_bytes`` come back, nothing past the cap is read, and a larger file is a
clear :class:`FileTooLargeError`, whatever the store and the file's size."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxfs import FileInfo, FileTooLargeError, Limits, Workspace
from ctxfs.backends import Store


class _Counting:
    """A store that counts the bytes read through it, and may lie about sizes."""

    def __init__(self, inner: Store, *, lie: bool = False) -> None:
        self._inner = inner
        self._lie = lie
        self.read = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def info(self, path: str) -> FileInfo:
        found = self._inner.info(path)
        return FileInfo(found.path, found.type, 0) if self._lie and not found.is_dir else found

    def read_bytes(self, path: str) -> bytes:
        raise AssertionError("a bounded read must not read the whole file")

    @contextmanager
    def open_read(self, path: str) -> Iterator[BinaryIO]:
        counter = self

        class Stream(io.RawIOBase):
            def __init__(self, inner: BinaryIO) -> None:
                self._inner = inner

            def read(self, size: int = -1) -> bytes:
                data = self._inner.read(size)
                counter.read += len(data)
                return data

        with self._inner.open_read(path) as stream:
            yield Stream(stream)  # type: ignore[misc]


@settings(max_examples=60, deadline=None)
@given(size=st.integers(0, 3_000), cap=st.integers(1, 2_000), lie=st.booleans())
def test_a_bounded_read_returns_the_file_or_refuses_it_having_read_at_most_the_cap(
    size: int, cap: int, lie: bool
) -> None:
    inner = Workspace("memory://bounded")
    data = bytes(range(256)) * (size // 256 + 1)
    inner.write_bytes("/media.bin", data[:size])
    store = _Counting(inner.store, lie=lie)
    ws = Workspace(store, limits=Limits(max_read_bytes=cap), check=False)  # type: ignore[arg-type]
    if size <= cap:
        assert ws.read_bytes("/media.bin", bounded=True) == data[:size]
    else:
        with pytest.raises(FileTooLargeError) as caught:
            ws.read_bytes("/media.bin", bounded=True)
        message = str(caught.value)
        assert message.startswith("/media.bin ")
        assert f"over the {cap:,}-byte cap of one read (Limits.max_read_bytes)" in message
        assert caught.value.path == "/media.bin"
    assert store.read <= cap + 1


def test_an_unbounded_read_is_unchanged_and_the_default_cap_is_16_mib(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws", limits=Limits(max_read_bytes=4))
    ws.write_bytes("/a.bin", b"\x00\x01\x02\x03\x04")
    assert ws.read_bytes("/a.bin") == b"\x00\x01\x02\x03\x04"
    with pytest.raises(FileTooLargeError, match=r"^/a.bin is 5 bytes, over the 4-byte cap"):
        ws.read_bytes("/a.bin", bounded=True)
    assert Limits().max_read_bytes == 16 * 2**20
