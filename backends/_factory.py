"""Open a workspace target (path, URL, filesystem or store) as a :class:`~ctxfs.backends.Store`.

This is where the backend is chosen, once per workspace: a local folder (a path, ``file://``,
``local://`` or fsspec's ``LocalFileSystem``) becomes a :class:`LocalStore`, everything else an
:class:`FsspecStore`. Nothing is shared between workspaces: each gets its own filesystem
object, and ``memory://`` gets a private store.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ctxfs.backends._local import LocalStore
from ctxfs.backends._options import check_s3_options
from ctxfs.backends._store import Store

if TYPE_CHECKING:  # fsspec loads only for storage that needs it, not for a local folder
    from fsspec import AbstractFileSystem

__all__ = ["local_folder_of", "open_storage", "protocol_of"]


def open_storage(
    target: str | os.PathLike[str] | AbstractFileSystem | Store,
    *,
    root: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Store:
    """Open ``target`` without sharing any state with other workspaces.

    Args:
        target: A local path (``./ws``), a URL (``memory://name``, ``s3://bucket/prefix``,
            ``file:///abs/path``, any fsspec protocol), an existing fsspec filesystem, or a
            :class:`Store` (returned as it is).
        root: With a filesystem target: the folder inside it to use as the root. Must be
            ``None`` otherwise (a path or URL carries its own root).
        storage_options: Keyword options for the filesystem opened from a URL
            (``endpoint_url``, ``key``, ...).

    Returns:
        The store. A local root folder is created if it does not exist yet.

    Raises:
        ValueError: ``root`` was given with a path, URL or store; ``storage_options`` with a
            filesystem object, a store, or a local/memory target (which use none); an S3
            option s3fs does not know; the URL's protocol is unknown; or its filesystem
            cannot be made from the URL and options given (it needs other arguments).
        ImportError: The URL's protocol needs an extra or a package that is not installed
            (the message names it, e.g. ``pip install 'ctxfs[s3]'``, ``pip install gcsfs``).
    """
    options = dict(storage_options or {})
    # a filesystem object is an instance of fsspec's class, so fsspec is loaded already
    fsspec_loaded = sys.modules.get("fsspec")
    if fsspec_loaded is not None and isinstance(target, fsspec_loaded.AbstractFileSystem):
        from fsspec.implementations.local import LocalFileSystem

        from ctxfs.backends._fsspec import FsspecStore

        if options:
            raise ValueError(
                "storage_options apply only to a URL; configure the filesystem object itself"
            )
        if isinstance(target, LocalFileSystem):
            return LocalStore(root or os.getcwd())
        return FsspecStore(target, root or "")
    if root is not None:
        raise ValueError(
            "root= is only for a filesystem object; put the folder in the URL instead, "
            "e.g. Workspace('s3://bucket/prefix')"
        )
    if not isinstance(target, str | os.PathLike):
        if options:
            raise ValueError("storage_options apply only to a URL; configure the store itself")
        return target
    text = os.fspath(target)
    folder = local_folder_of(text)
    if folder is not None:
        _refuse_options(options, "a local folder")
        return LocalStore(folder)
    import fsspec
    from fsspec.implementations.local import LocalFileSystem
    from fsspec.implementations.memory import MemoryFileSystem

    from ctxfs.backends._fsspec import FsspecStore

    protocol, rest = text.split("://", 1)
    if protocol == "memory":
        _refuse_options(options, "a memory:// workspace")
        # A private store: fsspec's memory filesystem is global by default.
        fs: AbstractFileSystem = MemoryFileSystem(global_store=False, skip_instance_cache=True)
        name = rest.strip("/")
        return FsspecStore(fs, f"/{name}" if name else "", url=text)
    if protocol in ("s3", "s3a"):
        try:
            import s3fs
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("S3 workspaces need s3fs: pip install 'ctxfs[s3]'") from exc
        check_s3_options(options, s3fs.S3FileSystem)
        options.setdefault("skip_instance_cache", True)
        options.setdefault("use_listings_cache", False)
        return FsspecStore(s3fs.S3FileSystem(**options), rest.rstrip("/"), url=text)
    try:
        fsspec.get_filesystem_class(protocol)
    except ValueError:
        raise ValueError(
            f"unknown storage protocol {protocol!r} in {text!r}; give a local folder, "
            "memory://name, s3://bucket/prefix or another URL that fsspec knows "
            "(fsspec.available_protocols()), or pass an fsspec filesystem object"
        ) from None
    except ImportError as exc:
        raise _missing_package(protocol, exc) from exc
    options.setdefault("skip_instance_cache", True)
    try:
        fs, fs_root = fsspec.url_to_fs(text, **options)
    except (TypeError, AttributeError) as exc:
        # a filesystem that needs arguments a URL does not carry (jupyter://, reference://),
        # or an option it does not take
        raise ValueError(
            f"cannot open {text!r} from its URL: the {protocol}:// filesystem needs other "
            f"options ({' '.join(str(exc).split())}); give them as storage_options, or pass "
            "an fsspec filesystem object"
        ) from None
    if isinstance(fs, LocalFileSystem):
        return LocalStore(fs_root)
    return FsspecStore(fs, fs_root, url=text)


def protocol_of(target: str | os.PathLike[str]) -> str:
    """The storage protocol a workspace URL names, as :func:`open_storage` reads it.

    ``"file"`` for a local folder (a path, ``file://`` or ``local://``), ``"s3"`` for
    ``s3://`` and ``s3a://``, otherwise the URL's scheme (``"memory"``, ``"gcs"``...).

    Example:
        >>> protocol_of("./ws"), protocol_of("s3a://bucket/run"), protocol_of("memory://x")
        ('file', 's3', 'memory')
    """
    if local_folder_of(target) is not None:
        return "file"
    scheme = os.fspath(target).split("://", 1)[0]
    return "s3" if scheme == "s3a" else scheme


def local_folder_of(target: str | os.PathLike[str]) -> str | None:
    """The local folder a workspace URL names, or ``None`` when it names other storage."""
    text = os.fspath(target)
    if "://" not in text:
        return text
    scheme, rest = text.split("://", 1)
    return rest if scheme in ("file", "local") else None


def _missing_package(protocol: str, exc: ImportError) -> ImportError:
    """The error for a protocol whose fsspec filesystem cannot be loaded: fsspec's words,
    which say what to install, and the module that failed to import, when it names one."""
    reason = " ".join(str(exc).split()).rstrip(".")
    cause: BaseException | None = exc.__cause__ or exc.__context__
    for _ in range(10):  # the chain is short; a bound, whatever it holds
        if cause is None or (isinstance(cause, ImportError) and cause.name):
            break
        cause = cause.__cause__ or cause.__context__
    missing = f"; module {cause.name!r} not found" if isinstance(cause, ImportError) else ""
    return ImportError(f"{protocol}:// storage is not available here: {reason}{missing}")


def _refuse_options(options: Mapping[str, Any], what: str) -> None:
    # fsspec's local and memory filesystems accept any keyword and ignore it; a typo such as
    # ``endpoint_urll`` must not pass silently.
    if options:
        raise ValueError(
            f"storage_options {sorted(options)} are not used by {what}; remove them "
            "(they configure remote storage such as s3://)"
        )
