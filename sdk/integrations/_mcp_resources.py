"""What an MCP server lists and reads as resources: the files ctxfs saved.

Offloaded tool results (``/tool_results``), saved tool inputs (``/tool_inputs``) and archived
transcripts (``/transcripts``) are listed, in pages, as ``ctxfs:///<path>`` resources; any
file of the workspace can be read by its URI (the template ``ctxfs:///{path}``), through the
same confined view as the tools. Framework-neutral, like :mod:`._mcp_tools`.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote

from ctxfs._errors import IsADirectoryPathError, PathNotFoundError
from ctxfs._layout import INPUTS_DIR, RESULTS_DIR, TRANSCRIPTS_DIR
from ctxfs._workspace._quote import quote, usable_path
from ctxfs._workspace._results import FileInfo
from ctxfs._workspace._workspace import Workspace
from ctxfs.backends import guard_store
from ctxfs.integrations._mcp_tools import MCP_NAMES, URI_PREFIX, resource_uri
from ctxfs.tools._format import plural

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "RESOURCE_AREAS",
    "ResourceContent",
    "ResourceEntry",
    "list_resources",
    "path_of",
    "read_resource",
]

RESOURCE_AREAS: Final = (RESULTS_DIR, INPUTS_DIR, TRANSCRIPTS_DIR)
"""The folders whose files are listed as resources."""

DEFAULT_PAGE_SIZE: Final = 500
"""Resources per page of a listing."""

_MIME_TYPES: Final = {
    "md": "text/markdown",
    "json": "application/json",
    "jsonl": "application/jsonl",
    "txt": "text/plain",
}

_KINDS: Final = {
    RESULTS_DIR: "The full text of a tool result that was shortened in {conversation}.",
    INPUTS_DIR: "The byte-exact argument of a tool call that was shortened in {conversation}.",
    TRANSCRIPTS_DIR: "Archived messages of {conversation} ({form}).",
}


@dataclass(frozen=True, slots=True)
class ResourceEntry:
    """One listed resource.

    Attributes:
        uri: ``ctxfs:///`` plus the workspace path.
        path: The workspace path.
        description: What the file holds.
        mime_type: Its media type, from its extension.
        size: Its size in bytes, when the store knows it.
    """

    uri: str
    path: str
    description: str
    mime_type: str | None
    size: int | None


@dataclass(frozen=True, slots=True)
class ResourceContent:
    """A resource read back: text when it is UTF-8 without NUL bytes, else base64.

    Attributes:
        uri: The URI that was read.
        mime_type: Its media type, from its extension.
        text: The content, for text.
        blob: The content as base64, for anything else.
    """

    uri: str
    mime_type: str | None
    text: str | None = None
    blob: str | None = None


def list_resources(
    workspace: Workspace, cursor: str | None = None, *, page_size: int = DEFAULT_PAGE_SIZE
) -> tuple[list[ResourceEntry], str | None]:
    """One page of the saved files, sorted by path.

    Args:
        workspace: The workspace.
        cursor: ``None`` for the first page, else the cursor the previous page returned.
        page_size: Most entries per page.

    Returns:
        The entries and the cursor of the next page (``None`` after the last).
    """
    entries: list[ResourceEntry] = []
    for info in _saved_files(workspace):
        if cursor is not None and info.path <= cursor:
            continue
        if len(entries) == page_size:
            return entries, entries[-1].path
        entries.append(_entry(info))
    return entries, None


def read_resource(workspace: Workspace, uri: str, *, max_bytes: int) -> ResourceContent:
    """The content of the file a ``ctxfs:///`` URI names.

    Raises:
        ValueError: Not a ``ctxfs:///`` URI, or the file is over ``max_bytes`` (the message
            says to page through it with ``read_text_file``, or, for a binary file, which
            the tools do not read, to raise the server's ``max_resource_bytes``).
        WorkspaceError: The path is refused, missing, a folder, or could not be read.
    """
    path = workspace.resolve(path_of(uri))
    info = workspace.info(path)
    if info.is_dir:
        raise IsADirectoryPathError(
            f"{path} is a directory; list it with {MCP_NAMES.ls}", path=path
        )
    if info.size is not None and info.size > max_bytes:
        over = f"{plural(info.size, 'byte')}, over the {max_bytes}-byte limit of a resource read"
        if _is_text(_head(workspace, path), whole=False):
            raise ValueError(f"{path} is {over}; read it in pages with {MCP_NAMES.read_file}")
        # the tools read text only: a binary file this large has no way out of this server
        raise ValueError(
            f"{path} is binary and {over}; start the server with a larger "
            "max_resource_bytes (--max-resource-bytes) to read it"
        )
    data = workspace.read_bytes(path)
    mime = _mime_type(path)
    if _is_text(data, whole=True):
        return ResourceContent(uri, mime, text=data.decode("utf-8"))
    blob = base64.b64encode(data).decode("ascii")
    return ResourceContent(uri, mime or "application/octet-stream", blob=blob)


_HEAD_BYTES: Final = 8_192


def _head(workspace: Workspace, path: str) -> bytes:
    """The first bytes of a file (a read of the whole file is what the limit avoids)."""
    with guard_store(workspace.store).open_read(path) as stream:
        return stream.read(_HEAD_BYTES)


def _is_text(data: bytes, *, whole: bool) -> bool:
    """Whether ``data`` is UTF-8 text with no NUL byte; of a file's head (``whole=False``),
    a character cut at its end does not count against it."""
    if b"\x00" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return not whole and exc.start >= len(data) - 3 and exc.reason == "unexpected end of data"
    return True


def path_of(uri: str) -> str:
    """The workspace path a ``ctxfs:///`` URI names.

    Raises:
        ValueError: The URI does not start with ``ctxfs:///``.
    """
    if not uri.startswith(URI_PREFIX + "/"):
        raise ValueError(
            f"{quote(uri)} is not a resource of this server; its URIs look like "
            f"{resource_uri('/transcripts/<thread>/<file>')}"
        )
    return unquote(uri[len(URI_PREFIX) :])


def _saved_files(workspace: Workspace) -> Iterator[FileInfo]:
    found: list[FileInfo] = []
    for area in RESOURCE_AREAS:
        try:
            # a name no workspace path can be (see usable_path) has no URI to read it by
            listed = guard_store(workspace.store).walk(area)
            found.extend(info for info in listed if usable_path(info.path))
        except PathNotFoundError:
            continue  # nothing saved there yet
    return iter(sorted(found, key=lambda info: info.path))


def _entry(info: FileInfo) -> ResourceEntry:
    area, _, rest = info.path[1:].partition("/")
    # files are kept per conversation: <area>/<thread>/<file>
    conversation = f"conversation {rest.partition('/')[0]}" if "/" in rest else "a conversation"
    form = "lossless JSONL" if info.path.endswith(".jsonl") else "Markdown"
    if info.path.endswith("/index.json"):
        description = f"The index of the archived segments of {conversation}."
    else:
        description = _KINDS[f"/{area}"].format(conversation=conversation, form=form)
    return ResourceEntry(
        uri=resource_uri(info.path),
        path=info.path,
        description=description,
        mime_type=_mime_type(info.path),
        size=info.size,
    )


def _mime_type(path: str) -> str | None:
    name = path.rsplit("/", 1)[-1]
    return _MIME_TYPES.get(name.rpartition(".")[2]) if "." in name else None
