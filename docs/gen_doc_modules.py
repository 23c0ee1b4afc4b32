"""Writes the Python blocks of README.md and docs/ as modules, for ``make typecheck``.

Each block runs on its own (``tests/test_docs.py``), so each becomes a module:
``python docs/gen_doc_modules.py OUT`` writes ``OUT/doc_<page>_<n>.py`` for every ```python
block, and mypy checks them as strictly as the package.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def main(out: Path) -> list[Path]:
    """Writes one module per block into ``out``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for page in sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]):
        name = re.sub(r"\W", "_", str(page.relative_to(ROOT).with_suffix("")))
        for number, block in enumerate(FENCE.findall(page.read_text(encoding="utf-8")), 1):
            module = out / f"doc_{name}_{number}.py"
            module.write_text(f"# generated from {page.relative_to(ROOT)}, block {number}\n{block}")
            written.append(module)
    return written


if __name__ == "__main__":
    for path in main(Path(sys.argv[1])):
        print(path)
