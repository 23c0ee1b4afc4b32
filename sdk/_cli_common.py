"""What every ``ctxfs`` subcommand shares: the error it reports, and opening a workspace."""

from __future__ import annotations

import os

from ctxfs.workspace import Workspace

__all__ = ["ENDPOINT_ENV", "CliError", "is_local_url", "open_workspace"]

ENDPOINT_ENV = "CTXFS_S3_ENDPOINT_URL"
"""Environment variable read for ``--endpoint-url`` when the flag is not given."""


class CliError(Exception):
    """A problem the command line reports in one line on stderr, with a non-zero exit."""


def is_local_url(url: str) -> bool:
    """Whether ``url`` names a local folder (a path, ``file://`` or ``local://``)."""
    return "://" not in url or url.startswith(("file://", "local://"))


def open_workspace(url: str, endpoint_url: str | None, *, must_exist: bool = False) -> Workspace:
    """Opens the workspace at ``url``; an S3 endpoint comes from the flag or the environment.

    Args:
        url: A folder, ``memory://name``, ``s3://bucket/prefix`` or another fsspec URL.
        endpoint_url: An S3-compatible endpoint, or ``None`` for ``$CTXFS_S3_ENDPOINT_URL``.
        must_exist: Refuse a local folder that does not exist (instead of creating it): for
            the commands that only look.

    Raises:
        CliError: The folder is missing, or the URL cannot be opened.
    """
    local = is_local_url(url)
    s3 = url.startswith(("s3://", "s3a://"))
    endpoint = endpoint_url or (os.environ.get(ENDPOINT_ENV) if s3 else None)
    if must_exist and local:
        folder = url.split("://", 1)[1] if "://" in url else url
        if not os.path.isdir(os.path.expanduser(folder)):
            raise CliError(f"no workspace at {url}: no such folder")
    options = {"endpoint_url": endpoint} if endpoint else None
    try:
        return Workspace(url, storage_options=options)
    except (ValueError, ImportError, OSError) as exc:
        raise CliError(f"cannot open the workspace {url}: {exc}") from None
