"""Saving what ctxfs moves out of the context: create-only, read back, never overwritten.

Every step that moves content (result offload, input offload, clearing) saves it through
:func:`save_text` before the message changes; a failure raises :class:`Unsaved`, and the
caller keeps the content inline and reports why. Nothing is ever lost.
"""

from __future__ import annotations

from collections.abc import Iterable

from ctxfs._errors import PathExistsError, WorkspaceError
from ctxfs._layout import candidate_paths
from ctxfs._workspace._workspace import Workspace

__all__ = ["Unsaved", "exists", "read_saved", "save_bytes", "save_text"]

_IO_ERRORS = (WorkspaceError, OSError, UnicodeError)


class Unsaved(Exception):
    """The text could not be saved (or read back); carries the reason and the path tried."""

    def __init__(self, reason: str, path: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path = path


def save_text(workspace: Workspace, first_choice: str, text: str) -> str:
    """Writes ``text`` create-only at the first free or identical candidate path.

    Returns:
        The path that now holds exactly ``text`` (written now, or already there).

    Raises:
        Unsaved: No candidate could be written and verified; the reason says why.
    """
    data = text.encode("utf-8") if text.isascii() else _encode(text, first_choice)
    return _save(workspace, first_choice, data, candidate_paths(first_choice, text))


def save_bytes(workspace: Workspace, first_choice: str, data: bytes) -> str:
    """Like :func:`save_text`, for the bytes of a binary file (a media block's payload)."""
    return _save(workspace, first_choice, data, candidate_paths(first_choice, data))


def _save(workspace: Workspace, first_choice: str, data: bytes, paths: Iterable[str]) -> str:
    for path in paths:
        try:
            workspace.write_bytes(path, data, create_only=True)
        except PathExistsError:
            if read_saved(workspace, path) == data:
                return path  # same content already saved: idempotent
            continue  # taken by different content: never overwrite, try the next name
        except _IO_ERRORS as exc:
            raise Unsaved(f"could not write {path}: {exc}", path) from exc
        if read_saved(workspace, path) != data:
            raise Unsaved(f"{path} did not read back identical after writing", path)
        return path
    raise Unsaved(
        f"every candidate name next to {first_choice} holds different content", first_choice
    )


def read_saved(workspace: Workspace, path: str) -> bytes:
    """Returns the bytes at ``path``.

    Raises:
        Unsaved: They could not be read.
    """
    try:
        return workspace.read_bytes(path)
    except _IO_ERRORS as exc:
        raise Unsaved(f"could not read back {path}: {exc}", path) from exc


def exists(workspace: Workspace, path: str) -> bool:
    """Returns whether anything is at ``path``.

    Raises:
        Unsaved: The storage could not be asked.
    """
    try:
        return workspace.exists(path)
    except _IO_ERRORS as exc:
        raise Unsaved(f"could not check {path}: {exc}", path) from exc


def _encode(text: str, path: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise Unsaved(
            f"the text is not valid Unicode (lone surrogate at {exc.start})", path
        ) from exc
