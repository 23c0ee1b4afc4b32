"""Translate every backend's exceptions into ctxfs's error tree, in one place.

The stores (:mod:`ctxfs.backends`) wrap every call to their backend in
:func:`translate_errors`; nothing above them sees a backend exception. The local disk raises
builtin ``OSError`` subclasses, fsspec filesystems mostly do too (s3fs maps S3 error codes
onto them, keeping botocore's error as the cause), botocore raises its own, and some backends
raise anything at all. The rules that matter:

- Only a real "not found" becomes :class:`~ctxfs._errors.PathNotFoundError`; a permission,
  network or server failure becomes :class:`~ctxfs._errors.BackendError`, so it never reads
  as "missing". A missing S3 bucket is not a missing file either: it is a
  :class:`~ctxfs._errors.BackendError` that names the bucket.
- Storage-wide failures say what a person can act on: the bucket does not exist, there are
  no credentials, access was denied, the endpoint refused the connection.
- A path the storage cannot use (a loop of symbolic links, a name too long for the disk) is
  an :class:`~ctxfs._errors.UnsafePathError` about that path, not a storage failure.
- Messages name virtual paths only, never where the workspace lives on this machine's disk.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from ctxfs._errors import (
    BackendError,
    ConflictError,
    IsADirectoryPathError,
    NotADirectoryPathError,
    PathExistsError,
    PathNotFoundError,
    UnsafePathError,
    WorkspaceError,
)

__all__ = [
    "conflict_error",
    "reason_of",
    "s3_error_code",
    "storage_error",
    "translate_error",
    "translate_errors",
]

_MISSING_BUCKET = frozenset({"NoSuchBucket"})
_DENIED = frozenset({"AccessDenied", "AllAccessDisabled", "403", "Forbidden"})
_BAD_CREDENTIALS = frozenset(
    {
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "InvalidToken",
        "TokenRefreshRequired",
    }
)


def translate_error(exc: BaseException, path: str, *, bucket: str | None = None) -> WorkspaceError:
    """The ctxfs error for a backend exception raised while working on virtual ``path``.

    Args:
        exc: What the backend raised.
        path: The virtual path the operation was about.
        bucket: The S3 bucket the store lives in, to name it in messages (``None`` for
            other storage).
    """
    if isinstance(exc, WorkspaceError):
        return exc
    storage = storage_error(exc, path, bucket)
    if storage is not None:
        return storage
    if isinstance(exc, FileNotFoundError):
        return PathNotFoundError(f"{path}: no such file or directory", path=path)
    if isinstance(exc, FileExistsError):
        return PathExistsError(f"{path}: already exists", path=path)
    if isinstance(exc, IsADirectoryError):
        return IsADirectoryPathError(f"{path}: is a directory, not a file", path=path)
    if isinstance(exc, NotADirectoryError):
        return NotADirectoryPathError(f"{path}: is a file, not a directory", path=path)
    if isinstance(exc, OSError) and exc.errno == errno.ELOOP:
        return UnsafePathError(
            f"path {path!r} goes through a loop of symbolic links; it cannot be used",
            path=path,
        )
    if isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG:
        return UnsafePathError(
            f"path {path!r} is too long for this storage; use a shorter path", path=path
        )
    if isinstance(exc, PermissionError):
        return BackendError(f"{path}: storage refused access ({reason_of(exc)})", path=path)
    return BackendError(
        f"{path}: storage could not be reached or failed ({reason_of(exc)})", path=path
    )


@contextmanager
def translate_errors(path: str, *, bucket: str | None = None) -> Iterator[None]:
    """Re-raise any exception from the block as the matching ctxfs error about ``path``."""
    try:
        yield
    except WorkspaceError:
        raise
    except Exception as exc:
        raise translate_error(exc, path, bucket=bucket) from exc


def conflict_error(path: str, *, deleted: bool = False) -> ConflictError:
    """The error of a conditional write whose file changed (or was deleted) since it was read."""
    what = "was deleted" if deleted else "changed"
    return ConflictError(
        f"{path} {what} since it was read; nothing was written: read it again and redo the "
        "change on what it holds now",
        path=path,
    )


def reason_of(exc: BaseException) -> str:
    """What went wrong, without the file names an ``OSError`` carries (host paths)."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return f"{type(exc).__name__}: {exc}"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def s3_error_code(exc: BaseException) -> str | None:
    """The S3 error code (``PreconditionFailed``, ``NoSuchKey``...) behind ``exc``, if any.

    Found on the first botocore error in the chain of causes (recognised by its shape).
    """
    for error in _chain(exc):
        response = getattr(error, "response", None)
        if isinstance(response, dict):
            code = response.get("Error", {}).get("Code")
            return str(code) if code is not None else None
    return None


def storage_error(exc: BaseException, path: str, bucket: str | None) -> BackendError | None:
    """A failure of the storage as a whole (S3 and other botocore clients), in words a
    person acts on; ``None`` when ``exc`` is about ``path`` itself.

    botocore is an optional dependency, so its errors are recognised by name and shape.
    """
    where = f"bucket {bucket!r}" if bucket else "the storage"
    for error in _chain(exc):
        kind = type(error).__name__
        if kind in ("NoCredentialsError", "PartialCredentialsError"):
            return BackendError(
                f"no credentials for {where}: give key and secret in storage_options, or "
                "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or an AWS profile",
                path=path,
            )
        if kind in ("EndpointConnectionError", "ConnectTimeoutError", "ConnectionClosedError"):
            url = urlsplit(str(getattr(error, "kwargs", {}).get("endpoint_url", "")))
            endpoint = f"{url.scheme}://{url.netloc}" if url.netloc else "its endpoint"
            return BackendError(
                f"could not connect to the storage at {endpoint} ({kind}); check the endpoint "
                "URL and that the server is running",
                path=path,
            )
        if kind == "ProfileNotFound":
            return BackendError(f"{error}; name an existing AWS profile", path=path)
        response = getattr(error, "response", None)
        if not isinstance(response, dict):
            continue
        code = str(response.get("Error", {}).get("Code", ""))
        operation = getattr(error, "operation_name", "")
        if code in _MISSING_BUCKET or (operation == "HeadBucket" and code in ("404", "NotFound")):
            return BackendError(
                f"{where} does not exist; create it, or fix the workspace URL", path=path
            )
        if code in _DENIED:
            return BackendError(
                f"access denied to {where} ({operation or 'request'} on {path}); check the "
                "credentials' permissions",
                path=path,
            )
        if code in _BAD_CREDENTIALS:
            return BackendError(
                f"the credentials for {where} were refused ({code}); check key, secret and token",
                path=path,
            )
    return None
