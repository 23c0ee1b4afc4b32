"""What every ``ctxfs`` subcommand shares: the error it reports, and opening a workspace."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
from typing import Any

from ctxfs._workspace._workspace import Workspace
from ctxfs.backends import local_folder_of, protocol_of

__all__ = [
    "ENDPOINT_ENV",
    "CliError",
    "add_storage_arguments",
    "open_workspace",
    "storage_options",
]

ENDPOINT_ENV = "CTXFS_S3_ENDPOINT_URL"
"""Environment variable read for ``--endpoint-url`` when the flag is not given."""

# Credentials and names are text whatever they look like: a secret of digits read as JSON
# would reach botocore as a number.
_TEXT_OPTIONS = frozenset({"key", "secret", "token", "username", "password", "profile"})


class CliError(Exception):
    """A problem the command line reports in one line on stderr, with a non-zero exit."""


def add_storage_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the options that reach an ``s3://`` (or other fsspec) workspace to ``parser``."""
    group = parser.add_argument_group("storage (s3:// and other fsspec URLs)")
    group.add_argument(
        "--endpoint-url",
        metavar="URL",
        help=f"S3-compatible endpoint for an s3:// workspace (default: ${ENDPOINT_ENV})",
    )
    group.add_argument("--profile", metavar="NAME", help="s3://: a profile of the AWS config")
    group.add_argument("--region", metavar="NAME", help="s3://: the bucket's region")
    group.add_argument(
        "--storage-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of the fsspec filesystem (repeatable); dotted keys nest "
        "(client_kwargs.verify=false); values are read as JSON where they parse, "
        "except credentials and names (key, secret, token, username, password, profile)",
    )


def storage_options(args: argparse.Namespace, url: str) -> dict[str, Any] | None:
    """The fsspec options the arguments of :func:`add_storage_arguments` ask for.

    Raises:
        CliError: A ``--storage-option`` without ``=`` or with an empty part in its key, one
            that sets a value where another nests options (or the other way round), or
            ``--profile``/``--region`` for a workspace that is not on S3.
    """
    options: dict[str, Any] = {}
    for item in getattr(args, "storage_option", None) or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"--storage-option {item!r}: write KEY=VALUE, e.g. anon=true")
        *parents, last = key.strip().split(".")
        if "" in (*parents, last):
            raise CliError(f"--storage-option {item!r}: the key has an empty part")
        value: Any = raw
        if last not in _TEXT_OPTIONS:
            with contextlib.suppress(json.JSONDecodeError):
                value = json.loads(raw)
        target = _nested(options, parents, f"--storage-option {item!r}")
        if isinstance(target.get(last), dict) and not isinstance(value, dict):
            raise CliError(
                f"--storage-option {item!r}: {last} already holds "
                f"{', '.join(f'{last}.{name}' for name in target[last])}"
            )
        target[last] = value
    s3 = protocol_of(url) == "s3"
    profile, region = getattr(args, "profile", None), getattr(args, "region", None)
    if (profile or region) and not s3:
        raise CliError("--profile and --region apply to an s3:// workspace only")
    if profile:
        options["profile"] = profile
    if region:
        _nested(options, ["client_kwargs"], "--region")["region_name"] = region
    endpoint = getattr(args, "endpoint_url", None) or (os.environ.get(ENDPOINT_ENV) if s3 else None)
    if endpoint:
        options["endpoint_url"] = endpoint
    return options or None


def _nested(options: dict[str, Any], parents: list[str], flag: str) -> dict[str, Any]:
    """The dict of ``options`` the dotted ``parents`` name, made where missing."""
    target = options
    for part in parents:
        nested = target.setdefault(part, {})
        if not isinstance(nested, dict):
            raise CliError(f"{flag}: {part} is already set to a value")
        target = nested
    return target


def open_workspace(
    url: str,
    storage: argparse.Namespace | str | None,
    *,
    must_exist: bool = False,
    read_only: bool = False,
) -> Workspace:
    """Opens the workspace at ``url``; an S3 endpoint comes from the flag or the environment.

    Opening checks the storage (a missing bucket, missing credentials, an unreachable
    endpoint are reported here, in one line, before anything else is done).

    Args:
        url: A folder, ``memory://name``, ``s3://bucket/prefix`` or another fsspec URL.
        storage: The parsed arguments of :func:`add_storage_arguments`, or just an
            S3-compatible endpoint (``None``: ``$CTXFS_S3_ENDPOINT_URL``).
        must_exist: Refuse a local folder that does not exist (instead of creating it): for
            the commands that only look.
        read_only: Open it read-only (the commands that only look): nothing can be
            written, and opening checks only that it can be read.

    Raises:
        CliError: The folder is missing, or the URL cannot be opened.
    """
    if not isinstance(storage, argparse.Namespace):
        storage = argparse.Namespace(endpoint_url=storage)
    options = storage_options(storage, url)
    folder = local_folder_of(url)
    if must_exist and folder is not None and not os.path.isdir(os.path.expanduser(folder)):
        raise CliError(f"no workspace at {url}: no such folder")
    try:
        return Workspace(url, storage_options=options, read_only=["/"] if read_only else [])
    except (ValueError, ImportError, OSError) as exc:
        raise CliError(f"cannot open the workspace {url}: {exc}") from None
