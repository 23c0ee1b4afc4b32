"""Every ```python block in README.md and docs/ runs, so documentation cannot drift.

Each block runs on its own, as a reader who copies just that block would run it: in a fresh
namespace (its imports included) and a temporary working directory of its own. Blocks fenced
as ```py are illustrations that need a server or a key, and are not run.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])


def _blocks(path: Path) -> list[str]:
    return FENCE.findall(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("doc", [d for d in DOCS if _blocks(d)], ids=lambda d: d.name)
def test_doc_code_blocks_run(doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for number, block in enumerate(_blocks(doc), 1):
        folder = tmp_path / f"block{number}"
        folder.mkdir()
        monkeypatch.chdir(folder)
        namespace: dict[str, object] = {"__name__": f"doc_{doc.stem}_{number}"}
        code = compile(block, f"{doc.relative_to(ROOT)}#block{number}", "exec")
        exec(code, namespace)
        assert os.getcwd() == str(folder)


def test_readme_has_runnable_examples() -> None:
    assert _blocks(ROOT / "README.md"), "README.md lost its runnable example"
