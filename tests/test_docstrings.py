"""Every example in a docstring of the package runs and prints what it says."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from types import ModuleType

import pytest

import ctxfs
import ctxfs.backends
import ctxfs.sandbox


def _modules() -> list[str]:
    # backends/ and sandbox/ are mapped into the package from folders of their own
    names: list[str] = []
    for package in (ctxfs, ctxfs.backends, ctxfs.sandbox):
        names.append(package.__name__)
        prefix = package.__name__ + "."
        names += [info.name for info in pkgutil.walk_packages(package.__path__, prefix=prefix)]
    return sorted(set(names))


def _examples(module: ModuleType) -> list[doctest.DocTest]:
    finder = doctest.DocTestFinder(exclude_empty=True)
    # only what the module itself defines: re-exports are checked where they live
    return [t for t in finder.find(module) if t.examples and _defined_in(t, module)]


def _defined_in(test: doctest.DocTest, module: ModuleType) -> bool:
    return test.filename is None or test.filename == module.__file__


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in _examples(module):
        runner.run(test)
    assert runner.failures == 0, f"{runner.failures} docstring example(s) of {name} failed"


def test_the_package_has_docstring_examples() -> None:
    total = sum(
        len(t.examples) for name in _modules() for t in _examples(importlib.import_module(name))
    )
    assert total >= 10
