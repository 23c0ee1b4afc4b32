"""Translate every backend's exceptions into ctxfs's error tree, in one place.

The stores (:mod:`ctxfs.backends`) wrap every call to their backend in
:func:`translate_errors`; nothing above them sees a backend exception. The local disk raises
builtin ``OSError`` subclasses, fsspec filesystems mostly do too (s3fs maps S3 error codes
onto them), botocore raises its own, and some backends raise anything at all. The rule that
matters: only a real "not found" becomes :class:`~ctxfs._errors.PathNotFoundError`; a
permission, network or server failure becomes :class:`~ctxfs._errors.BackendError`, so it
never reads as "missing".
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ctxfs._errors import (
    BackendError,
    IsADirectoryPathError,
    NotADirectoryPathError,
    PathExistsError,
    PathNotFoundError,
    WorkspaceError,
)

__all__ = ["translate_error", "translate_errors"]


def translate_error(exc: BaseException, path: str) -> WorkspaceError:
    """The ctxfs error for a backend exception raised while working on virtual ``path``."""
    if isinstance(exc, WorkspaceError):
        return exc
    if isinstance(exc, FileNotFoundError):
        return PathNotFoundError(f"{path}: no such file or directory", path=path)
    if isinstance(exc, FileExistsError):
        return PathExistsError(f"{path}: already exists", path=path)
    if isinstance(exc, IsADirectoryError):
        return IsADirectoryPathError(f"{path}: is a directory, not a file", path=path)
    if isinstance(exc, NotADirectoryError):
        return NotADirectoryPathError(f"{path}: is a file, not a directory", path=path)
    if isinstance(exc, PermissionError):
        return BackendError(f"{path}: storage refused access ({exc})", path=path)
    return BackendError(
        f"{path}: storage could not be reached or failed ({type(exc).__name__}: {exc})",
        path=path,
    )


@contextmanager
def translate_errors(path: str) -> Iterator[None]:
    """Re-raise any exception from the block as the matching ctxfs error about ``path``."""
    try:
        yield
    except WorkspaceError:
        raise
    except Exception as exc:
        raise translate_error(exc, path) from exc
