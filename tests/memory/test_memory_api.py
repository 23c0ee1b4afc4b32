"""The public surface of ctxfs.memory: one sorted __all__, every name documented."""

from __future__ import annotations

import inspect

import ctxfs.memory


def test_all_is_sorted_and_every_name_resolves() -> None:
    names = ctxfs.memory.__all__
    # constants, then classes, then functions, each alphabetical (ruff's RUF022 order)
    assert names == sorted(
        names, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n)
    )
    for name in names:
        assert getattr(ctxfs.memory, name) is not None


def test_every_public_class_and_function_has_a_docstring() -> None:
    for name in ctxfs.memory.__all__:
        value = getattr(ctxfs.memory, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), f"ctxfs.memory.{name} has no docstring"


def test_implementation_modules_are_private() -> None:
    import pkgutil

    modules = [m.name for m in pkgutil.iter_modules(ctxfs.memory.__path__)]
    assert modules and all(m.startswith("_") for m in modules)
