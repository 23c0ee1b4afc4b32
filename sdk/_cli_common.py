"""What every ``ctxfs`` subcommand shares: the error it reports, and opening a workspace."""

from __future__ import annotations

import os

from ctxfs._workspace import Workspace
from ctxfs.backends import local_folder_of, protocol_of

__all__ = ["ENDPOINT_ENV", "CliError", "open_workspace"]

ENDPOINT_ENV = "CTXFS_S3_ENDPOINT_URL"
"""Environment variable read for ``--endpoint-url`` when the flag is not given."""


class CliError(Exception):
    """A problem the command line reports in one line on stderr, with a non-zero exit."""


def open_workspace(
    url: str, endpoint_url: str | None, *, must_exist: bool = False, read_only: bool = False
) -> Workspace:
    """Opens the workspace at ``url``; an S3 endpoint comes from the flag or the environment.

    Opening checks the storage (a missing bucket, missing credentials, an unreachable
    endpoint are reported here, in one line, before anything else is done).

    Args:
        url: A folder, ``memory://name``, ``s3://bucket/prefix`` or another fsspec URL.
        endpoint_url: An S3-compatible endpoint, or ``None`` for ``$CTXFS_S3_ENDPOINT_URL``.
        must_exist: Refuse a local folder that does not exist (instead of creating it): for
            the commands that only look.
        read_only: Open it read-only (the commands that only look): nothing can be
            written, and opening checks only that it can be read.

    Raises:
        CliError: The folder is missing, or the URL cannot be opened.
    """
    s3 = protocol_of(url) == "s3"
    endpoint = endpoint_url or (os.environ.get(ENDPOINT_ENV) if s3 else None)
    folder = local_folder_of(url)
    if must_exist and folder is not None and not os.path.isdir(os.path.expanduser(folder)):
        raise CliError(f"no workspace at {url}: no such folder")
    options = {"endpoint_url": endpoint} if endpoint else None
    try:
        return Workspace(url, storage_options=options, read_only=["/"] if read_only else [])
    except (ValueError, ImportError, OSError) as exc:
        raise CliError(f"cannot open the workspace {url}: {exc}") from None
