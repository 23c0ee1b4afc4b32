"""The folders are ranked, and a module imports only from its own rank or below.

The ranks, lowest first (docs/architecture.md draws them):

0. the shared vocabulary, at the root of ``ctxfs``: errors, events, tokens, messages, the
   layout of the workspace, and section rendering;
1. storage: ``ctxfs.backends`` and ``ctxfs.sandbox``, which import only the vocabulary;
2. the workspace (``ctxfs._workspace``);
3. what the compaction is made of, as values: pointers, the archive, the settings (which
   import nothing but the vocabulary);
4. the summary step (``ctxfs._summary``);
5. the compaction (``ctxfs._compaction``);
6. the agent's tools and replay;
7. what is built on the core: integrations, memory, sub-agents, workflows, testing,
   the workspace lifecycle;
8. the faces: the command line, the demo, and ``ctxfs`` itself.

Every ``import`` statement counts, wherever it is (inside functions, under
``TYPE_CHECKING``), so a late import that climbs is caught too.
"""

from __future__ import annotations

import ast
import importlib.util
import pkgutil
from pathlib import Path

import ctxfs
import ctxfs.backends
import ctxfs.sandbox

VOCABULARY = {"_errors", "_events", "_json", "_tokens", "_messages", "_layout", "_sections"}
RANKS: dict[str, int] = {
    **{f"ctxfs.{name}": 0 for name in VOCABULARY},
    "ctxfs.backends": 1,
    "ctxfs.sandbox": 1,
    "ctxfs._workspace": 2,
    "ctxfs._pointers": 3,
    "ctxfs._archive": 3,
    "ctxfs._policy": 3,
    "ctxfs._summary": 4,
    "ctxfs._compaction": 5,
    "ctxfs.tools": 6,
    "ctxfs._replay": 6,
    "ctxfs.integrations": 7,
    "ctxfs.lifecycle": 7,
    "ctxfs.memory": 7,
    "ctxfs.subagents": 7,
    "ctxfs.workflows": 7,
    "ctxfs.testing": 7,
    "ctxfs._cli": 8,
    "ctxfs.demo": 8,
    "ctxfs.__main__": 8,
    "ctxfs": 8,
}
ONLY_VOCABULARY = {"ctxfs.backends", "ctxfs.sandbox", "ctxfs._policy"}
"""Folders that import nothing of ctxfs but the vocabulary (and their own modules)."""

ROOT_MODULES_AT_MOST = 8
MODULE_LINES_AT_MOST = 600
CLASS_LINES_AT_MOST = 500


def _sources() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in (ctxfs, ctxfs.backends, ctxfs.sandbox):
        found[package.__name__] = Path(str(package.__file__))
        for info in pkgutil.walk_packages(package.__path__, prefix=package.__name__ + "."):
            spec = importlib.util.find_spec(info.name)
            assert spec is not None and spec.origin is not None
            found[info.name] = Path(spec.origin)
    return found


def _folder(module: str) -> str:
    """The ranked folder a module belongs to: its longest prefix in :data:`RANKS`."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in RANKS:
            return prefix
    raise AssertionError(f"{module} is in no ranked folder: give it a rank in RANKS")


def _imports(name: str, path: Path) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, module] if module else base)
            targets.add(module)
    return {t for t in targets if t == "ctxfs" or t.startswith("ctxfs.")}


def _violations() -> list[str]:
    found = []
    for name, path in sorted(_sources().items()):
        mine = _folder(name)
        for target in sorted(_imports(name, path)):
            theirs = _folder(target)
            if theirs == mine:
                continue
            if RANKS[theirs] > RANKS[mine]:
                found.append(f"{name} (rank {RANKS[mine]}) imports {target} (rank {RANKS[theirs]})")
            elif mine in ONLY_VOCABULARY and RANKS[theirs] != 0:
                found.append(f"{name} may import only the vocabulary, not {target}")
    return found


def test_no_module_imports_from_a_higher_rank() -> None:
    found = _violations()
    assert found == []


def test_every_module_has_a_rank() -> None:
    for name in _sources():
        _folder(name)


def test_the_root_holds_the_face_and_the_vocabulary_only() -> None:
    root = Path(str(ctxfs.__file__)).parent
    modules = sorted(p.stem for p in root.glob("*.py"))
    assert len(modules) <= ROOT_MODULES_AT_MOST, modules
    assert set(modules) <= VOCABULARY | {"__init__", "__main__"}, modules


def test_no_module_over_600_lines_and_no_class_over_500() -> None:
    # Above that, a module or a class is usually two concepts: cut where one ends.
    too_big = []
    for name, path in sorted(_sources().items()):
        source = path.read_text(encoding="utf-8")
        lines = source.count("\n")
        if lines > MODULE_LINES_AT_MOST:
            too_big.append(f"{name}: {lines} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                lines = node.end_lineno - node.lineno + 1
                if lines > CLASS_LINES_AT_MOST:
                    too_big.append(f"{name}.{node.name}: {lines} lines")
    assert too_big == []


def test_the_checker_sees_a_climbing_import(tmp_path: Path) -> None:
    # The rule itself, on a module that imports up: tools (6) from the workspace (2).
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from ctxfs.tools import tool_functions\n")
    assert _imports("ctxfs._workspace.m", source) == {"ctxfs.tools"}
    assert RANKS[_folder("ctxfs.tools")] > RANKS[_folder("ctxfs._workspace.m")]
