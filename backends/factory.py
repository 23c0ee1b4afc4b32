"""Open a workspace target (path, URL or filesystem) as a :class:`Storage`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import fsspec
from fsspec import AbstractFileSystem
from fsspec.implementations.local import LocalFileSystem
from fsspec.implementations.memory import MemoryFileSystem

__all__ = ["Storage", "open_storage"]


@dataclass(frozen=True, slots=True)
class Storage:
    """An fsspec filesystem and the root inside it that is the workspace's ``/``.

    Attributes:
        fs: The filesystem.
        root: The root path in the filesystem's own form (no protocol), without a trailing
            slash. For local storage, an absolute host path.
        url: A display form of the location, such as ``s3://bucket/prefix``.
        is_local: Whether ``fs`` is the local disk (enables atomic rename and symlink checks).
    """

    fs: AbstractFileSystem
    root: str
    url: str
    is_local: bool


def open_storage(
    target: str | os.PathLike[str] | AbstractFileSystem,
    *,
    root: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Storage:
    """Open ``target`` without sharing any state with other workspaces.

    Args:
        target: A local path (``./ws``), a URL (``memory://name``, ``s3://bucket/prefix``,
            ``file:///abs/path``, any fsspec protocol), or an existing fsspec filesystem.
        root: With a filesystem target: the folder inside it to use as the root. Ignored
            (must be ``None``) for a path or URL, which carries its own root.
        storage_options: Keyword options for the filesystem (``endpoint_url``, ``key``, ...).

    Returns:
        The opened storage. A local root folder is created if it does not exist yet.

    Raises:
        ValueError: ``root`` was given with a path/URL, ``storage_options`` with a
            filesystem object or with a local/memory target (which use none), or the URL's
            protocol is unknown.
        ImportError: The URL's protocol needs an extra that is not installed (the message
            names it, e.g. ``pip install 'ctxfs[s3]'``).
    """
    options = dict(storage_options or {})
    if isinstance(target, AbstractFileSystem):
        if options:
            raise ValueError(
                "storage_options apply only to a URL; configure the filesystem object itself"
            )
        fs_root = (root or "").rstrip("/")
        is_local = isinstance(target, LocalFileSystem)
        if is_local:
            fs_root = os.path.abspath(fs_root or os.getcwd())
            os.makedirs(fs_root, exist_ok=True)
        protocol = target.protocol if isinstance(target.protocol, str) else target.protocol[0]
        return Storage(target, fs_root, f"{protocol}://{fs_root.lstrip('/')}", is_local)
    if root is not None:
        raise ValueError(
            "root= is only for a filesystem object; put the folder in the URL instead, "
            "e.g. Workspace('s3://bucket/prefix')"
        )
    text = os.fspath(target)
    if "://" not in text or text.startswith("file://") or text.startswith("local://"):
        _refuse_options(options, "a local folder")
        path = text.split("://", 1)[1] if "://" in text else text
        local_root = os.path.abspath(os.path.expanduser(path))
        os.makedirs(local_root, exist_ok=True)
        return Storage(LocalFileSystem(), local_root, local_root, True)
    protocol, rest = text.split("://", 1)
    if protocol == "memory":
        _refuse_options(options, "a memory:// workspace")
        # A private store: fsspec's memory filesystem is global by default.
        fs: AbstractFileSystem = MemoryFileSystem(global_store=False, skip_instance_cache=True)
        name = rest.strip("/")
        return Storage(fs, f"/{name}" if name else "", text, False)
    if protocol in ("s3", "s3a"):
        try:
            import s3fs
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("S3 workspaces need s3fs: pip install 'ctxfs[s3]'") from exc
        options.setdefault("skip_instance_cache", True)
        options.setdefault("use_listings_cache", False)
        fs = s3fs.S3FileSystem(**options)
        return Storage(fs, rest.rstrip("/"), text, False)
    try:
        fsspec.get_filesystem_class(protocol)
    except ValueError:
        raise ValueError(
            f"unknown storage protocol {protocol!r} in {text!r}; give a local folder, "
            "memory://name, s3://bucket/prefix or another URL that fsspec knows "
            "(fsspec.available_protocols()), or pass an fsspec filesystem object"
        ) from None
    options.setdefault("skip_instance_cache", True)
    fs, fs_root = fsspec.url_to_fs(text, **options)
    return Storage(fs, fs_root.rstrip("/"), text, isinstance(fs, LocalFileSystem))


def _refuse_options(options: Mapping[str, Any], what: str) -> None:
    # fsspec's local and memory filesystems accept any keyword and ignore it; a typo such as
    # ``endpoint_urll`` must not pass silently.
    if options:
        raise ValueError(
            f"storage_options {sorted(options)} are not used by {what}; remove them "
            "(they configure remote storage such as s3://)"
        )
