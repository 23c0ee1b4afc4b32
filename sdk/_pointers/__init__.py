"""Pointers: what ctxfs leaves in the context in place of content it moved to the workspace.

- :mod:`~ctxfs._pointers._pointer`: the structured metadata a pointer carries on its message,
  and the text rendered from it (the model sees the text; ctxfs reads only the metadata);
- :mod:`~ctxfs._pointers._legacy`: the strict reader of pointers written before they carried
  metadata;
- :mod:`~ctxfs._pointers._resolve`: reading back what pointers stand for;
- :mod:`~ctxfs._pointers._recovery`: how ctxfs's own recovery tools are told apart.

The names below load on first use, so the tools (which register themselves with
``_recovery`` when imported) do not load LangChain for a command that only lists files.
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from ctxfs._pointers._pointer import Pointer, input_pointers, result_pointer

__all__ = ["Pointer", "input_pointers", "result_pointer"]


def __getattr__(name: str) -> object:
    if name in __all__:
        return getattr(_importlib.import_module("ctxfs._pointers._pointer"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
