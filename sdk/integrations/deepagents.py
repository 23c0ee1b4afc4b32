"""A Deep Agents backend over a ctxfs workspace: ``create_deep_agent(backend=...)`` on any storage.

Deep Agents' filesystem tools (``ls``, ``read_file``, ``write_file``, ``edit_file``, ``glob``,
``grep``, ``delete``) talk to a *backend*. :class:`WorkspaceBackend` is one over a
:class:`~ctxfs.Workspace`, so they work on local disk, in memory, on S3 or anywhere fsspec
reaches, with ctxfs's confinement (no path leaves the root) and its read-only areas: what ctxfs
offloads and archives (``/tool_results/``, ``/tool_inputs/``, ``/transcripts/``,
``/memories/``) can be listed, read and searched by the agent, never changed. Give the same
workspace to :class:`~ctxfs.integrations.langchain.ContextMiddleware` (with ``tools=False``:
Deep Agents brings its own tools) and both see the same files.

Example:
    >>> from deepagents import create_deep_agent
    >>> from ctxfs import Workspace
    >>> from ctxfs.integrations.deepagents import WorkspaceBackend
    >>> from ctxfs.testing import ScriptedChatModel
    >>> backend = WorkspaceBackend(Workspace("memory://deep"))
    >>> agent = create_deep_agent(ScriptedChatModel(responses=["Done."]), backend=backend)
    >>> agent.invoke({"messages": [("user", "hi")]})["messages"][-1].content
    'Done.'

The backend follows Deep Agents' protocol (:class:`deepagents.backends.protocol.BackendProtocol`)
and its error strings where the tools rely on them (``Path '/x': path_not_found``, ``File '/x'
not found``, ``file_not_found``...); other failures carry ctxfs's own message, which says what
to do instead. The async methods are the protocol's: the sync ones run in a worker thread.

Needs the ``deepagents`` extra: ``pip install 'ctxfs[deepagents]'``.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

from ctxfs._errors import (
    IsADirectoryPathError,
    NotADirectoryPathError,
    PathNotFoundError,
    PatternError,
    ReadOnlyPathError,
    UnsafePathError,
    WorkspaceError,
)
from ctxfs._layout import SDK_AREAS
from ctxfs._workspace._glob import compile_glob
from ctxfs._workspace._quote import quote, shown_path
from ctxfs._workspace._results import FileInfo as Entry
from ctxfs._workspace._textread import text_lines
from ctxfs._workspace._workspace import Workspace
from ctxfs.backends import guard_store
from ctxfs.sandbox import relative_to
from ctxfs.tools._function import error_text

try:
    from deepagents.backends.protocol import (
        BackendProtocol,
        DeleteResult,
        EditResult,
        FileData,
        FileDownloadResponse,
        FileInfo,
        FileOperationError,
        FileUploadResponse,
        GlobResult,
        GrepMatch,
        GrepResult,
        LsResult,
        ReadResult,
        WriteResult,
    )
    from deepagents.backends.utils import normalize_read_bounds
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "ctxfs.integrations.deepagents needs Deep Agents: pip install 'ctxfs[deepagents]'"
    ) from exc

__all__ = ["DEFAULT_MAX_MEDIA_BYTES", "WorkspaceBackend"]

# The extensions Deep Agents reads as whole binary payloads (images, audio, video, documents)
# rather than as lines of text; its read_file tool turns them into multimodal content.
_BINARY_KINDS = frozenset({"image", "audio", "video", "file"})

DEFAULT_MAX_MEDIA_BYTES = 5 * 1024 * 1024
"""Largest media file ``read_file`` returns (5 MiB, the smallest per-image limit of the
major providers' APIs): it goes to the model base64-encoded, a third larger, and stays in the
agent's state."""


def _file_kind(path: str) -> str:
    from deepagents.backends.utils import _get_backend_read_file_type

    return str(_get_backend_read_file_type(path))


def _include_glob(pattern: str) -> Callable[[str], bool]:
    """Deep Agents' glob contract, matched by ctxfs's non-backtracking automaton.

    A pattern without ``/`` matches the file name at any depth (also under hidden folders);
    one with ``/`` matches the path relative to the search root, and a leading ``/`` only
    anchors. ``..`` segments are refused, repeated slashes count as one, and a pattern ending
    in ``/`` names folders, so it matches no file. The predicate takes the path relative to
    the search root.

    Raises:
        PatternError: The pattern has a ``..`` segment or is malformed.
    """
    if ".." in pattern.split("/"):
        raise PatternError(f"Path traversal not allowed in glob pattern {quote(pattern)}")
    if "/" not in pattern:
        by_name = compile_glob(pattern)
        return lambda relpath: by_name.matches(relpath.rsplit("/", 1)[-1])
    anchored = pattern.lstrip("/")
    if not anchored or anchored.endswith("/"):
        return lambda relpath: False
    by_path = compile_glob("/" + anchored)
    return by_path.matches


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MiB"


def _slice_lines(text: str, offset: int, limit: int) -> ReadResult:
    """A window of ``text``'s lines, as Deep Agents reports one: lines end at ``\n`` only,
    a ``\r`` before it is dropped, and the last line keeps its lack of one.

    Deep Agents' own slicing breaks lines with :meth:`str.splitlines` (also at a lone
    ``\r``, U+2028, form feeds...), which numbers lines otherwise than grep, ctxfs's
    ``read_file`` and the offsets its pointers name. Blank text comes back whole, without a
    window, as Deep Agents' does (its tool turns that into the empty-file reminder).
    """
    if not text.strip():
        return ReadResult(file_data=FileData(content=text, encoding="utf-8"))
    offset, limit = normalize_read_bounds(offset, limit)
    if limit == 0:
        empty = FileData(content="", encoding="utf-8")
        return ReadResult(file_data=empty, no_lines_requested=True)
    lines = text_lines(text)
    total = len(lines)
    if offset >= total:
        return ReadResult(error=f"Line offset {offset} exceeds file length ({total} lines)")
    end = min(offset + limit, total)
    window = "".join(f"{line}\n" for line in lines[offset:end])
    if end == total and not text.endswith("\n"):
        window = window[:-1]  # the last line keeps its lack of a newline
    return ReadResult(
        file_data=FileData(content=window, encoding="utf-8"),
        total_lines=total,
        start_line=offset + 1,
        end_line=end,
        next_offset=end if end < total else None,
    )


def _problem(exc: Exception) -> str:
    """What a failed call says: a workspace error its own message; anything else as ctxfs's
    tools say it (a lone surrogate in the text, a bad value, or an internal error, logged
    with its traceback), so no exception reaches the agent's loop."""
    if isinstance(exc, WorkspaceError):
        return str(exc)
    return error_text(exc).removeprefix("Error: ")


def _error_code(exc: Exception) -> FileOperationError | str:
    """The standard code of an upload or download failure, or ctxfs's message."""
    if isinstance(exc, PathNotFoundError):
        return "file_not_found"
    if isinstance(exc, ReadOnlyPathError):
        return "permission_denied"
    if isinstance(exc, IsADirectoryPathError):
        return "is_directory"
    if isinstance(exc, UnsafePathError | NotADirectoryPathError):
        return "invalid_path"
    return _problem(exc)


class WorkspaceBackend(BackendProtocol):
    """Deep Agents' file operations on a ctxfs :class:`~ctxfs.Workspace`.

    Pass it as ``create_deep_agent(backend=WorkspaceBackend(workspace))``. Every path goes
    through the workspace's sandbox; ctxfs's own areas (and any folder the workspace was
    opened with as ``read_only``) refuse writes, edits and deletes with a message that says
    where to write instead. Files are stored byte-exact (a write of ``"a\\r\\n"`` reads back
    as written).

    Args:
        workspace: Where the files live. The backend works on a view of it in which ctxfs's
            areas are read-only; ``workspace`` itself is not changed.
        read_only: More virtual folders the agent's tools may read but not change.
        max_media_bytes: Largest image, audio, video or document ``read_file`` returns
            (default :data:`DEFAULT_MAX_MEDIA_BYTES`); a larger one is an error that gives its
            size and the limit, and is never read into memory.
    """

    def __init__(
        self,
        workspace: Workspace,
        *,
        read_only: tuple[str, ...] = (),
        max_media_bytes: int = DEFAULT_MAX_MEDIA_BYTES,
    ) -> None:
        if max_media_bytes < 0:
            raise ValueError(f"max_media_bytes must be 0 or more, got {max_media_bytes}")
        self._max_media_bytes = max_media_bytes
        if not isinstance(workspace, Workspace):
            raise TypeError(
                "WorkspaceBackend needs a ctxfs Workspace, e.g. "
                "WorkspaceBackend(Workspace('s3://bucket/agent')), "
                f"not {type(workspace).__name__}"
            )
        self._workspace = workspace.view(read_only=(*SDK_AREAS, *read_only))

    @property
    def workspace(self) -> Workspace:
        """The view the tools work on (the SDK's areas read-only)."""
        return self._workspace

    def __repr__(self) -> str:
        return f"WorkspaceBackend({self._workspace.url!r})"

    # -- listing --------------------------------------------------------------------------

    def ls(self, path: str) -> LsResult:
        """The direct children of a folder; folders end in ``/`` and have ``is_dir``.

        A missing folder answers ``Path '<path>': path_not_found`` and a file
        ``Path '<path>': not_a_directory`` (Deep Agents' wording, which its tools read).
        """
        try:
            entries = self._workspace.ls(path)
        except PathNotFoundError:
            return LsResult(error=f"Path '{path}': path_not_found")
        except NotADirectoryPathError:
            return LsResult(error=f"Path '{path}': not_a_directory")
        except Exception as exc:
            return LsResult(error=_problem(exc))
        infos: list[FileInfo] = []
        for entry in entries:
            if entry.is_dir:
                infos.append({"path": shown_path(entry.path) + "/", "is_dir": True, "size": 0})
            else:
                size = entry.size or 0
                infos.append({"path": shown_path(entry.path), "is_dir": False, "size": size})
        return LsResult(entries=infos)

    # -- reading --------------------------------------------------------------------------

    def read(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        """A window of lines of a text file, raw (Deep Agents' middleware numbers them).

        Images, audio, video and documents (by extension) come back whole, base64-encoded,
        up to ``max_media_bytes``; a larger one is an error naming its size. ``offset`` is
        0-based; a negative one reads from the start, a non-positive ``limit`` reads nothing;
        an offset past the end is an error that gives the file's length. Lines end at
        ``\n`` only, a ``\r`` before it dropped (a lone ``\r``, U+2028 and the like stay
        inside their line), so a line's number is the one ``grep`` gives and ctxfs's pointers
        name. A text file over the workspace's ``limits.max_read_bytes`` is read as a stream,
        the window alone kept in memory: a line over ``limits.max_line_chars`` is shown in
        part, marked ``… [line clipped: N chars]`` as ``grep`` marks it.
        """
        try:
            if _file_kind(file_path) in _BINARY_KINDS:
                data = self._read_media(file_path)
                if isinstance(data, str):
                    return ReadResult(error=data)
                encoded = base64.standard_b64encode(data).decode("ascii")
                return ReadResult(file_data=FileData(content=encoded, encoding="base64"))
            size = self._workspace.info(file_path).size or 0
            if size > self._workspace.limits.max_read_bytes:
                return self._read_streamed(file_path, offset, limit)
            text = self._workspace.read_text(file_path)
            return _slice_lines(text, offset, limit)
        except PathNotFoundError:
            return ReadResult(error=f"File '{file_path}' not found")
        except Exception as exc:
            return ReadResult(error=_problem(exc))

    def _read_streamed(self, path: str, offset: int, limit: int) -> ReadResult:
        """:meth:`read` of a large text file, as Deep Agents reports a window."""
        offset, limit = normalize_read_bounds(offset, limit)
        if limit == 0:
            empty = FileData(content="", encoding="utf-8")
            return ReadResult(file_data=empty, no_lines_requested=True)
        page = self._workspace.read_lines(path, offset, limit)
        if offset >= page.total_lines:
            return ReadResult(
                error=f"Line offset {offset} exceeds file length ({page.total_lines} lines)"
            )
        end = offset + len(page.lines)
        lines = list(page.lines)
        for index, full in page.clipped:
            # marked as grep marks it: shown whole, a clipped line would pass for the line
            lines[index] += f" … [line clipped: {full} chars]"
        return ReadResult(
            file_data=FileData(content="".join(f"{line}\n" for line in lines), encoding="utf-8"),
            total_lines=page.total_lines,
            start_line=offset + 1,
            end_line=end,
            next_offset=page.next_offset,
        )

    def _read_media(self, path: str) -> bytes | str:
        """The bytes of a media file, or the error when it is over the cap (its size is read
        first, and checked again on the bytes: the file may grow in between)."""
        size = self._workspace.info(path).size or 0
        data = b"" if size > self._max_media_bytes else self._workspace.read_bytes(path)
        size = max(size, len(data))
        if size <= self._max_media_bytes:
            return data
        return (
            f"{path} is {_megabytes(size)}, over the {_megabytes(self._max_media_bytes)} "
            "limit of a media file read_file returns to the model; use a smaller file "
            "(e.g. a frame or an excerpt)"
        )

    def download_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        """The bytes of each file, in order; a failure is reported per file."""
        responses: list[FileDownloadResponse] = []
        for path in paths:
            try:
                responses.append(FileDownloadResponse(path, self._workspace.read_bytes(path)))
            except Exception as exc:
                responses.append(FileDownloadResponse(path, error=_error_code(exc)))
        return responses

    # -- writing --------------------------------------------------------------------------

    def write(self, file_path: str, content: str) -> WriteResult:
        """Create or overwrite a text file (UTF-8); missing folders are created."""
        try:
            info = self._workspace.write_text(file_path, content)
        except Exception as exc:
            return WriteResult(error=f"Error: {_problem(exc)}")
        return WriteResult(path=info.path)

    def upload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        """Write each ``(path, bytes)`` pair, in order; a failure is reported per file."""
        responses: list[FileUploadResponse] = []
        for path, data in files:
            try:
                self._workspace.write_bytes(path, data)
            except Exception as exc:
                responses.append(FileUploadResponse(path, error=_error_code(exc)))
            else:
                responses.append(FileUploadResponse(path))
        return responses

    def edit(
        self,
        file_path: str,
        old_string: str,
        new_string: str,
        replace_all: bool = False,
    ) -> EditResult:
        """Replace exact text: ``old_string`` must occur once, or set ``replace_all``.

        :meth:`read` shows a file with CRLF line endings with LF ones, as Deep Agents' other
        backends do; so when ``old_string`` is not in such a file as given, it is looked for
        with CRLF endings, and the file keeps its endings (as :meth:`ctxfs.Workspace.edit`
        does).
        """
        try:
            result = self._workspace.edit(
                file_path, old_string, new_string, replace_all=replace_all
            )
        except PathNotFoundError:
            return EditResult(error=f"Error: File '{file_path}' not found")
        except Exception as exc:
            return EditResult(error=f"Error: {_problem(exc)}")
        return EditResult(path=result.path, occurrences=result.replacements)

    def delete(self, file_path: str) -> DeleteResult:
        """Delete a file, or a folder and everything under it."""
        try:
            virtual = self._workspace.resolve(file_path)
            self._workspace.rm(virtual, recursive=True)
        except PathNotFoundError:
            return DeleteResult(error=f"Error: '{file_path}' not found")
        except Exception as exc:
            return DeleteResult(error=f"Error: {_problem(exc)}")
        return DeleteResult(path=virtual)

    # -- searching ------------------------------------------------------------------------

    def glob(self, pattern: str, path: str | None = None) -> GlobResult:
        """Files under ``path`` (default ``/``) matching ``pattern``, in path order.

        Deep Agents' glob contract: a pattern without ``/`` matches file names at any depth,
        one with ``/`` the path relative to ``path``; ``**`` spans folders but not hidden
        ones, and a hidden name matches only a pattern that starts with ``.``. At most the
        workspace's ``limits.max_glob_results`` paths come back (``truncated`` says so).
        """
        try:
            matcher = _include_glob(pattern)
            base = self._workspace.resolve(path or "/")
            files = self._files(base)
        except PathNotFoundError:
            return GlobResult(matches=[])
        except Exception as exc:
            return GlobResult(error=_problem(exc))
        cap = self._workspace.limits.max_glob_results
        matches: list[FileInfo] = []
        for info in files:
            if matcher(relative_to(info.path, base) or info.name):
                if len(matches) == cap:
                    return GlobResult(matches=matches, truncated=True, truncation_reason="budget")
                shown = shown_path(info.path)
                matches.append({"path": shown, "is_dir": False, "size": info.size or 0})
        return GlobResult(matches=matches)

    def _files(self, base: str) -> list[Entry]:
        info = self._workspace.info(base)
        if not info.is_dir:
            return [info]
        return sorted(guard_store(self._workspace.store).walk(base), key=lambda f: f.path)

    def grep(
        self,
        pattern: str,
        path: str | None = None,
        glob: str | None = None,
        *,
        max_count: int | None = None,
    ) -> GrepResult:
        """Lines containing ``pattern`` literally (not a regular expression).

        ``glob`` keeps only the files it matches (Deep Agents' glob contract, relative to
        ``path``). Hidden files are searched only when ``glob`` names them; binary files are
        skipped. ``max_count`` caps the matches returned (``truncated`` if more exist).
        """
        try:
            include = _include_glob(glob) if glob else None
            base = self._workspace.resolve(path or "/")
            found = self._workspace.grep(
                pattern, base, glob=glob, fixed_strings=True, output_mode="content"
            )
        except PathNotFoundError:
            return GrepResult(matches=[])
        except Exception as exc:
            return GrepResult(error=_problem(exc))
        matches: list[GrepMatch] = []
        for file in found.files:
            if include is not None and not include(
                relative_to(file.path, base) or file.path.rsplit("/", 1)[-1]
            ):
                continue
            for line in file.lines:
                if not line.is_match:
                    continue
                if max_count is not None and len(matches) == max_count:
                    return GrepResult(matches=matches, truncated=True)
                shown = shown_path(file.path)
                matches.append({"path": shown, "line": line.line_number, "text": line.text})
        return GrepResult(matches=matches)
