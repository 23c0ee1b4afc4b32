"""A user's script type-checks against the installed ctxfs (issue 22).

After the README's set-up (``make``: an editable install in setuptools' strict mode),
``mypy --strict`` on a script outside the repository must find ``ctxfs`` and its types: the
default editable install is an import hook static tools cannot follow, and reported
``Cannot find implementation or library stub for module named "ctxfs"``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """\
from ctxfs import FileInfo, Workspace

ws = Workspace("memory://user-script")
info: FileInfo = ws.write_text("/a.txt", "hello\\n")
size: int | None = info.size
text: str = ws.read_text("/a.txt")
"""


@pytest.mark.slow
def test_mypy_strict_finds_ctxfs_from_a_users_script(tmp_path: Path) -> None:
    # One wrong annotation: the run must report exactly it, so ctxfs was found and its
    # types were read (a missing package would be reported instead, or Any let it pass).
    (tmp_path / "script.py").write_text(SCRIPT + 'wrong: int = ws.read_text("/a.txt")\n')
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "script.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    out = done.stdout + done.stderr
    assert "Cannot find implementation or library stub" not in out, out
    assert 'script.py:7: error: Incompatible types in assignment (expression has type "str"' in out
    assert "Found 1 error in 1 file" in out, out


def test_every_package_folder_is_in_the_build_list() -> None:
    # A wheel, and the strict editable install, carry only the listed packages: a folder
    # missing from the list imports from a checkout and fails everywhere else.
    import tomllib

    root = Path(__file__).resolve().parents[1]
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = set()
    for name, folder in config["package-dir"].items():
        for init in (root / folder).rglob("__init__.py"):
            if "__pycache__" in init.parts:
                continue
            relative = init.parent.relative_to(root / folder).parts
            found.add(".".join((name, *relative)))
    assert found - listed == set()
