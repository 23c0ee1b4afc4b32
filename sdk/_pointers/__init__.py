"""Pointers: what ctxfs leaves in the context in place of content it moved to the workspace.

- :mod:`~ctxfs._pointers._pointer`: the structured metadata a pointer carries on its message,
  and the text rendered from it (the model sees the text; ctxfs reads only the metadata);
- :mod:`~ctxfs._pointers._legacy`: the strict reader of pointers written before they carried
  metadata;
- :mod:`~ctxfs._pointers._resolve`: reading back what pointers stand for.
"""

from ctxfs._pointers._pointer import Pointer, input_pointers, result_pointer

__all__ = ["Pointer", "input_pointers", "result_pointer"]
