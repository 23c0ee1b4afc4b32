"""What a command prints arrives whole, however its stdout takes it: an unbuffered stdout
(``python -u``, ``PYTHONUNBUFFERED=1``) takes each write in one system call, which a pipe
may take in part."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxfs import Workspace
from ctxfs._cli._main import EXIT_BROKEN_PIPE, main


class _Sip(io.RawIOBase):
    """An unbuffered binary stream that takes at most ``size`` bytes per write, as a pipe
    whose reader is slow or a write a signal interrupts."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        taken = bytes(data[: self.size])
        self.data += taken
        return len(taken)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    workspace = Workspace(tmp_path / "ws")
    workspace.write_text("/big.txt", "".join(f"line {n} é\n" for n in range(50_000)))
    return tmp_path / "ws"


@pytest.mark.parametrize(
    "argv",
    [
        ["cat", "{ws}", "/big.txt"],
        ["cat", "{ws}", "/big.txt", "--limit", "2000"],
        ["grep", "{ws}", "line"],
        ["glob", "{ws}", "**"],
    ],
)
def test_an_unbuffered_stdout_gets_every_byte(
    folder: Path, argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # each write was one call that the stream took 1,000 bytes of: the rest was dropped
    # without a word, and the command said 0
    words = [word.format(ws=folder) for word in argv]
    expected = io.StringIO()
    monkeypatch.setattr(sys, "stdout", expected)
    assert main(words) == 0
    sip = _Sip(1_000)
    stdout = io.TextIOWrapper(sip, encoding="utf-8", write_through=True)  # type: ignore[type-var]
    monkeypatch.setattr(sys, "stdout", stdout)
    assert main(words) == 0
    assert sip.data.decode() == expected.getvalue()


@pytest.mark.slow
def test_a_reader_leaving_mid_output_ends_an_unbuffered_command_with_141(folder: Path) -> None:
    # the pipe took the first 64 KiB and the reader left: the rest of the write was dropped
    # and the command ended with status 0, as if it had printed the whole file
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "ctxfs", "cat", str(folder), "/big.txt"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, bufsize=0
    ) as child:
        assert child.stdout is not None and child.stderr is not None
        assert child.stdout.read(1) == b"l"  # the file is ten times what a pipe holds
        child.stdout.close()
        stderr = child.stderr.read()
        assert (child.wait(timeout=60), stderr) == (EXIT_BROKEN_PIPE, b"")
