"""The package's modules import each other without cycles: a lower layer never calls back up.

The graph is read from the source (every ``import`` statement, wherever it is, including
those inside functions and under ``TYPE_CHECKING``), so a cycle hidden by a late import still
counts.
"""

from __future__ import annotations

import ast
import graphlib
import importlib.util
import pkgutil
from pathlib import Path

import ctxfs
import ctxfs.backends
import ctxfs.sandbox


def _sources() -> dict[str, Path]:
    # backends/ and sandbox/ are mapped into the package from folders of their own, so
    # walking ctxfs's folder does not reach them: each package is walked from its own path.
    found: dict[str, Path] = {}
    for package in (ctxfs, ctxfs.backends, ctxfs.sandbox):
        found[package.__name__] = Path(str(package.__file__))
        for info in pkgutil.walk_packages(package.__path__, prefix=package.__name__ + "."):
            spec = importlib.util.find_spec(info.name)
            assert spec is not None and spec.origin is not None
            found[info.name] = Path(spec.origin)
    return found


def _imported(name: str, path: Path, known: set[str]) -> set[str]:
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
            targets.update(f"{module}.{alias.name}" for alias in node.names)
    # a package's __init__ re-exports its modules; importing it from inside is not a cycle
    return {t for t in targets if t in known and t != name and not name.startswith(t + ".")}


def test_no_import_cycles() -> None:
    sources = _sources()
    known = set(sources)
    graph = {name: _imported(name, path, known) for name, path in sources.items()}
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        raise AssertionError(f"import cycle: {' -> '.join(exc.args[1])}") from None


def test_the_graph_is_read_from_every_module() -> None:
    sources = _sources()
    assert {"ctxfs.backends", "ctxfs.sandbox", "ctxfs.tools", "ctxfs.integrations"} <= set(sources)
    assert len(sources) > 40
