"""What every ``ctxfs`` subcommand shares: the error it reports, opening a workspace, and
printing to a terminal.

This module is imported by every command, ``--version`` and ``--help`` included, so it imports
nothing of the library at module level: each command loads what it uses when it runs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import select
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pydantic import ValidationError

    from ctxfs._workspace._workspace import Workspace

__all__ = [
    "CREATE_HELP",
    "ENDPOINT_ENV",
    "EXIT_ERROR",
    "CliError",
    "TerminalText",
    "WholeWrites",
    "add_storage_arguments",
    "check_folder",
    "open_workspace",
    "positive_int",
    "raw_stream",
    "storage_options",
    "terminal_safe",
    "validation_text",
    "write_all",
    "write_file_bytes",
]

EXIT_ERROR = 2
"""Exit status of an error in what was asked (arguments, files, the workspace)."""

CREATE_HELP = (
    "make the workspace folder if it does not exist (without it, a missing one is refused)"
)
"""The help of a command's ``--create`` flag."""

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
    from ctxfs.backends import protocol_of

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


def positive_int(text: str) -> int:
    """An option's whole number above zero (``_`` separators allowed), for ``type=``.

    Raises:
        argparse.ArgumentTypeError: ``text`` is not a whole number, or not above zero.
    """
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return value


def validation_text(exc: ValidationError) -> str:
    """The problems of settings that did not validate, on one line: ``where: what; ...``."""
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        problems.append(f"{where}: {message}" if where else message)
    return "; ".join(problems)


def open_workspace(
    url: str,
    storage: argparse.Namespace | str | None,
    *,
    must_exist: bool = True,
    read_only: bool = False,
) -> Workspace:
    """Opens the workspace at ``url``; an S3 endpoint comes from the flag or the environment.

    Opening checks the storage (a missing bucket, missing credentials, an unreachable
    endpoint are reported here, in one line, before anything else is done). A local folder
    that does not exist is refused unless the command was asked to make it (``--create``):
    a mistyped path must not give an empty workspace.

    Args:
        url: A folder, ``memory://name``, ``s3://bucket/prefix`` or another fsspec URL.
        storage: The parsed arguments of :func:`add_storage_arguments`, or just an
            S3-compatible endpoint (``None``: ``$CTXFS_S3_ENDPOINT_URL``). A ``create``
            attribute set to true (the ``--create`` flag) makes a missing folder.
        must_exist: Refuse a missing local folder even when ``--create`` is given (the
            commands that only look).
        read_only: Open it read-only (the commands that only look): nothing can be
            written, and opening checks only that it can be read.

    Raises:
        CliError: The folder is missing (or is a file), or the URL cannot be opened (its
            storage's package is not installed, among others).
    """
    from ctxfs._workspace._workspace import Workspace

    if not isinstance(storage, argparse.Namespace):
        storage = argparse.Namespace(endpoint_url=storage)
    options = storage_options(storage, url)
    check_folder(url, storage, must_exist=must_exist)
    try:
        return Workspace(url, storage_options=options, read_only=["/"] if read_only else [])
    except (ValueError, OSError) as exc:
        raise CliError(f"cannot open the workspace {url}: {exc}") from None
    except ImportError as exc:  # the storage's package is missing: say which
        from ctxfs._cli._extras import missing_dependency

        reason = missing_dependency(exc) or exc
        raise CliError(f"cannot open the workspace {url}: {reason}") from None


def check_folder(url: str, storage: argparse.Namespace, *, must_exist: bool = True) -> None:
    """Refuses a local ``url`` that is not a folder, unless it is missing and ``--create``
    was given (and ``must_exist`` is false); other URLs pass.

    Raises:
        CliError: The folder is missing (without ``--create``) or is a file.
    """
    from ctxfs.backends import local_folder_of

    local = local_folder_of(url)
    if local is None:
        return
    folder = os.path.expanduser(local)
    if os.path.isdir(folder):
        return
    if os.path.lexists(folder):
        what = "a file" if os.path.isfile(folder) else "not a folder"
        raise CliError(f"no workspace at {url}: no such folder (it is {what})")
    offered = hasattr(storage, "create")  # the command has a --create flag
    if must_exist or not getattr(storage, "create", False):
        hint = " (to make a new workspace there, add --create)" if offered else ""
        raise CliError(f"no workspace at {url}: no such folder{hint}")


# -- printing -------------------------------------------------------------------------------

# What a terminal would act on rather than show: C0 controls (ESC starts colour, cursor and
# title sequences; CR overwrites a line; BS erases), DEL, C1 controls (CSI, OSC as single
# bytes) and the bidirectional overrides that reorder what a line seems to say. Tab and
# newline are kept. Lone surrogates too (an argument's bytes that are not UTF-8 decode to
# them): a stdout that encodes strictly, as in most UTF-8 locales, cannot write one.
_UNSAFE = [
    *(c for c in range(0x20) if c not in (0x09, 0x0A)),
    *range(0x7F, 0xA0),
    0x061C,
    0x200E,
    0x200F,
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
    *range(0xD800, 0xE000),
]
_SAFE_TABLE = {c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" for c in _UNSAFE}


def terminal_safe(text: str) -> str:
    r"""``text`` with every character a terminal would act on written as a visible escape.

    Example:
        >>> terminal_safe("name\x1b]0;owned\x07.txt")
        'name\\x1b]0;owned\\x07.txt'
    """
    return text.translate(_SAFE_TABLE)


class TerminalText:
    """A text stream that writes through :func:`terminal_safe`: every command prints through
    one, so a file name, a grep line or a fact cannot drive the terminal.

    ``raw`` is the stream underneath, for :func:`write_file_bytes`.
    """

    def __init__(self, raw: IO[str]) -> None:
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(terminal_safe(text))
        return len(text)

    def flush(self) -> None:
        self.raw.flush()

    def isatty(self) -> bool:
        return self.raw.isatty()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


class WholeWrites:
    """A text stream over ``stream`` whose every write arrives whole.

    With ``python -u`` or ``PYTHONUNBUFFERED`` set, stdout writes straight through to an
    unbuffered binary layer: each write is one system call, which a pipe may take in part
    (its reader left after the first 64 KiB, a signal came), and the text layer drops the
    rest without a word, so a command ended with status 0 having printed part of a file.
    Here the rest is written until all of it is taken or the write fails
    (:class:`BrokenPipeError`, a full disk). A buffered stream is used as it is: its
    buffer already writes whole.
    """

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        binary = getattr(stream, "buffer", None)
        self.binary = binary if isinstance(binary, io.RawIOBase) else None

    def write(self, text: str) -> int:
        with _naming_the_stream():
            if self.binary is None:
                return self.stream.write(text)
            encoding = getattr(self.stream, "encoding", None) or "utf-8"
            errors = getattr(self.stream, "errors", None) or "strict"
            write_all(self.binary, text.encode(encoding, errors))
            return len(text)

    def flush(self) -> None:
        with _naming_the_stream():
            self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


@contextlib.contextmanager
def _naming_the_stream() -> Iterator[None]:
    """A failed write to standard output (a full disk, an I/O error) says it was standard
    output, not a file of the workspace; a reader that left stays a :class:`BrokenPipeError`."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OSError(exc.errno, f"writing to standard output: {exc.strerror or exc}") from exc


def write_all(binary: Any, data: bytes) -> None:
    """Writes all of ``data`` to the binary stream ``binary``, however little each write
    takes (an unbuffered stream writes only what one system call took)."""
    view = memoryview(data)
    while view:
        written = binary.write(view)
        if written is None:  # a non-blocking descriptor that is full: wait until it is not
            select.select([], [binary], [])
            continue
        view = view[written:]


def raw_stream(out: IO[str]) -> IO[str]:
    """The stream under a :class:`TerminalText` (for rich, which writes its own escapes: what
    it is given to show must be :func:`terminal_safe` already)."""
    return out.raw if isinstance(out, TerminalText) else out


def write_file_bytes(data: bytes, out: IO[str]) -> None:
    """Prints a file: byte-exact to a pipe or a file, made :func:`terminal_safe` on a terminal
    (the bytes of a file reach a person only through this)."""
    buffer = getattr(raw_stream(out), "buffer", None)
    if buffer is None or out.isatty():
        out.write(data.decode("utf-8", errors="replace"))
        return
    out.flush()
    with _naming_the_stream():
        write_all(buffer, data)
        buffer.flush()
