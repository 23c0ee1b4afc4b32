"""One version, written once: the package, its metadata and the command line agree."""

from __future__ import annotations

import re
from importlib.metadata import version

import pytest

import ctxfs
from ctxfs._cli._main import main


def test_the_version_is_the_installed_distributions() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", ctxfs.__version__)
    assert version("ctxfs") == ctxfs.__version__


def test_ctxfs_version_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0  # returned, as every command's status is
    assert capsys.readouterr().out == f"ctxfs {ctxfs.__version__}\n"
