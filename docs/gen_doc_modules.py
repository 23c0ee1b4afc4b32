"""Writes the Python blocks of README.md and docs/ as modules, for ``make typecheck``.

Blocks of one page run in one namespace (``tests/test_docs.py``), so each page becomes one
module: ``python docs/gen_doc_modules.py OUT`` writes ``OUT/doc_<page>.py`` for every page
with a ```python block, and mypy checks them as strictly as the package.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def main(out: Path) -> list[Path]:
    """Writes one module per page into ``out``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for page in sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]):
        blocks = FENCE.findall(page.read_text(encoding="utf-8"))
        if blocks:
            name = re.sub(r"\W", "_", str(page.relative_to(ROOT).with_suffix("")))
            module = out / f"doc_{name}.py"
            module.write_text(f"# generated from {page.relative_to(ROOT)}\n" + "\n".join(blocks))
            written.append(module)
    return written


if __name__ == "__main__":
    for path in main(Path(sys.argv[1])):
        print(path)
