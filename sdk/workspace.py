"""The Workspace: virtual, confined file access on any fsspec storage."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from fsspec import AbstractFileSystem

from ctxfs._grep import GrepOptions, OutputMode
from ctxfs._search import glob_files, grep_files
from ctxfs._textread import read_page
from ctxfs.backends import Storage, open_storage, translate_errors
from ctxfs.errors import (
    BackendError,
    EditError,
    IsADirectoryPathError,
    NotADirectoryPathError,
    NotTextError,
    PathExistsError,
    PathNotFoundError,
    ReadOnlyPathError,
    UnsafePathError,
)
from ctxfs.results import EditResult, FileInfo, GlobResult, GrepResult, ReadResult
from ctxfs.sandbox import Limits, check_host_path, host_path, is_within, normalize_path

__all__ = ["Workspace"]

READ_BLOCK_BYTES = 4 * 2**20
"""Read-ahead block for paged reads from remote storage (bounds a page read's memory)."""


class Workspace:
    """A folder of files, local or remote, seen through virtual paths rooted at ``/``.

    Every path goes through the sandbox first: ``..`` cannot climb above ``/``, URLs, ``~``,
    control characters and backslashes are refused, and on local disk symlinks that lead
    outside the root are refused. Areas declared read-only refuse writes, edits and deletes.

    Example:
        >>> ws = Workspace("memory://demo")
        >>> ws.write_text("/notes/todo.md", "- fix the parser\\n")
        FileInfo(path='/notes/todo.md', type='file', size=17)
        >>> ws.read_text("/notes/todo.md")
        '- fix the parser\\n'

    Args:
        target: A local folder (created if missing), a URL (``memory://name``,
            ``s3://bucket/prefix``, any fsspec URL) or an fsspec filesystem object.
        root: With a filesystem object, the folder inside it that becomes ``/``.
        storage_options: Options for the filesystem opened from a URL (for S3:
            ``endpoint_url``, ``key``, ``secret``, ``client_kwargs``...).
        read_only: Virtual folders that writes, edits and deletes must leave alone.
        limits: Size caps and time limits (see :class:`ctxfs.sandbox.Limits`).

    A ``memory://`` workspace has a private store: two Workspace objects never see each
    other's files, even with the same URL. To share one, pass the same filesystem object.
    """

    def __init__(
        self,
        target: str | os.PathLike[str] | AbstractFileSystem,
        *,
        root: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        read_only: Iterable[str] = (),
        limits: Limits | None = None,
    ) -> None:
        storage = open_storage(target, root=root, storage_options=storage_options)
        self._init(storage, read_only, limits or Limits())

    def _init(self, storage: Storage, read_only: Iterable[str], limits: Limits) -> None:
        self._storage = storage
        self._real_root = os.path.realpath(storage.root) if storage.is_local else ""
        self._read_only = tuple(sorted({normalize_path(p) for p in read_only}))
        self._limits = limits

    def view(self, *, read_only: Iterable[str] = ()) -> Workspace:
        """The same storage, with more folders read-only.

        The SDK writes its own areas through the full workspace and hands the agent's tools
        a view in which those areas are read-only.
        """
        clone = object.__new__(Workspace)
        clone._init(self._storage, (*self._read_only, *read_only), self._limits)
        return clone

    # -- properties ---------------------------------------------------------------------

    @property
    def url(self) -> str:
        """Where the workspace lives, for display (``s3://bucket/prefix``, a local path...)."""
        return self._storage.url

    @property
    def fs(self) -> AbstractFileSystem:
        """The underlying fsspec filesystem."""
        return self._storage.fs

    @property
    def is_local(self) -> bool:
        """Whether the workspace is on the local disk."""
        return self._storage.is_local

    @property
    def read_only(self) -> tuple[str, ...]:
        """Virtual folders that refuse writes, edits and deletes."""
        return self._read_only

    @property
    def limits(self) -> Limits:
        """The size caps and time limits in force."""
        return self._limits

    def __repr__(self) -> str:
        return f"Workspace({self.url!r})"

    # -- paths --------------------------------------------------------------------------

    def resolve(self, path: str) -> str:
        """Normalise an agent-supplied path, or raise :class:`~ctxfs.errors.UnsafePathError`."""
        virtual = normalize_path(path)
        if self._storage.is_local:
            check_host_path(self._real_root, self._host(virtual), virtual)
        return virtual

    def is_read_only(self, path: str) -> bool:
        """Whether the (normalised) virtual path lies in a read-only area."""
        return any(is_within(path, prefix) for prefix in self._read_only)

    def _host(self, virtual: str) -> str:
        if self._storage.is_local:
            return host_path(self._storage.root, virtual)
        root = self._storage.root
        return root if virtual == "/" else f"{root}{virtual}"

    def _virtual(self, host: str) -> str:
        root = self._storage.root.rstrip("/")
        host = host.rstrip("/")
        if self._storage.is_local:
            host = host.replace(os.sep, "/")
            root = root.replace(os.sep, "/")
        elif not host.startswith("/") and root.startswith("/"):
            host = "/" + host
        rest = host[len(root) :] if host.startswith(root) else host
        return "/" + rest.strip("/")

    def _real_virtual(self, virtual: str) -> str:
        """On local disk, the virtual path the target really is once symlinks are followed."""
        real = os.path.realpath(self._host(virtual))
        rest = os.path.relpath(real, self._real_root).replace(os.sep, "/")
        return "/" if rest == "." else "/" + rest

    def _writable(self, path: str) -> str:
        virtual = self.resolve(path)
        # Checked on the path as given and, on local disk, on where it really leads: a symlink
        # made inside the root must not open a way to write into a read-only area.
        real = self._real_virtual(virtual) if self._storage.is_local and self._read_only else None
        target = virtual if self.is_read_only(virtual) or real is None else real
        if self.is_read_only(target):
            area = next(p for p in self._read_only if is_within(target, p))
            where = virtual if target == virtual else f"{virtual} (a link to {target})"
            raise ReadOnlyPathError(
                f"{where} is in the read-only area {area}/ (written by ctxfs itself); "
                "write your own files elsewhere, e.g. /notes/",
                path=virtual,
            )
        if virtual == "/":
            raise IsADirectoryPathError("/ is the workspace root, not a file", path=virtual)
        return virtual

    # -- metadata -----------------------------------------------------------------------

    def info(self, path: str) -> FileInfo:
        """Metadata of one path.

        Raises:
            PathNotFoundError: Nothing is there.
            BackendError: The storage could not be asked (never reported as missing).
        """
        virtual = self.resolve(path)
        return self._info(virtual)

    def _info(self, virtual: str) -> FileInfo:
        if virtual == "/":
            return FileInfo("/", "directory")
        with translate_errors(virtual):
            raw = self.fs.info(self._host(virtual))
        return self._to_info(raw, virtual)

    def _to_info(self, raw: Mapping[str, Any], virtual: str | None = None) -> FileInfo:
        path = virtual if virtual is not None else self._virtual(str(raw["name"]))
        if raw.get("type") == "directory":
            return FileInfo(path, "directory")
        size = raw.get("size")
        return FileInfo(path, "file", int(size) if size is not None else None)

    def exists(self, path: str) -> bool:
        """Whether anything is at ``path``.

        Unlike fsspec's ``exists``, a storage failure raises
        :class:`~ctxfs.errors.BackendError` instead of answering ``False``.
        """
        try:
            self.info(path)
        except (PathNotFoundError, NotADirectoryPathError):  # the latter: a file above it
            return False
        return True

    def ls(self, path: str = "/") -> list[FileInfo]:
        """The direct children of a directory, sorted by name.

        Raises:
            PathNotFoundError: The directory does not exist (the empty root is fine).
            NotADirectoryPathError: ``path`` is a file.
        """
        virtual = self.resolve(path)
        host = self._host(virtual)
        try:
            with translate_errors(virtual):
                entries = self.fs.ls(host, detail=True)
        except PathNotFoundError:
            if virtual == "/":
                return []
            raise
        result: list[FileInfo] = []
        for raw in entries:
            info = self._to_info(raw)
            if info.path == virtual:
                if info.type == "file":
                    raise NotADirectoryPathError(
                        f"{virtual} is a file, not a directory; read it with read_file",
                        path=virtual,
                    )
                continue
            if self._storage.is_local and os.path.islink(str(raw["name"])):
                try:
                    check_host_path(self._real_root, str(raw["name"]), info.path)
                except UnsafePathError:
                    continue  # a link leading outside is not part of the workspace
                if os.path.isdir(str(raw["name"])):
                    # fsspec types a link by the link itself; info() follows it, so must ls.
                    info = FileInfo(info.path, "directory")
            result.append(info)
        return sorted(result, key=lambda i: i.path)

    # -- reading ------------------------------------------------------------------------

    def _file(self, path: str) -> str:
        virtual = self.resolve(path)
        info = self._info(virtual)
        if info.is_dir:
            raise IsADirectoryPathError(
                f"{virtual} is a directory, not a file; list it with ls", path=virtual
            )
        return virtual

    def read_bytes(self, path: str) -> bytes:
        """The whole content of a file, as bytes."""
        return self._read_bytes(self._file(path))

    def _read_bytes(self, virtual: str) -> bytes:
        with translate_errors(virtual):
            data = self.fs.cat_file(self._host(virtual))
        return bytes(data)

    def read_text(self, path: str) -> str:
        """The whole content of a UTF-8 text file.

        Raises:
            NotTextError: The file is binary or not valid UTF-8.
        """
        virtual = self._file(path)
        data = self._read_bytes(virtual)
        if b"\x00" in data:
            raise NotTextError(
                f"{virtual} is a binary file (it contains NUL bytes); it cannot be read as text",
                path=virtual,
            )
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NotTextError(
                f"{virtual} is not valid UTF-8 text ({exc.reason})", path=virtual
            ) from None

    def read_lines(
        self, path: str, offset: int = 0, limit: int | None = None, *, column: int = 0
    ) -> ReadResult:
        """A page of lines of a text file, with bounded memory whatever the file's size.

        Args:
            path: The file.
            offset: 0-based index of the first line.
            limit: Most lines; defaults to ``limits.default_read_lines``.
            column: Start the first line at this character (0-based): how a line longer than
                ``limits.max_line_chars`` is read piece by piece.

        The page also stops before ``limits.max_read_chars`` characters, and each line is
        clipped at ``limits.max_line_chars``; the result says so and where to go on.
        """
        if offset < 0:
            raise ValueError("offset must be >= 0 (it is the 0-based first line)")
        if limit is not None and limit < 1:
            raise ValueError("limit must be >= 1")
        if column < 0:
            raise ValueError("column must be >= 0 (it is the 0-based first character)")
        virtual = self._file(path)
        # s3fs reads ahead in 50 MiB blocks by default: a page read would hold one in memory.
        with (
            translate_errors(virtual),
            self.fs.open(self._host(virtual), "rb", block_size=READ_BLOCK_BYTES) as stream,
        ):
            return read_page(
                stream,
                virtual,
                offset=offset,
                limit=limit or self._limits.default_read_lines,
                max_line_chars=self._limits.max_line_chars,
                max_chars=self._limits.max_read_chars,
                column=column,
            )

    # -- writing ------------------------------------------------------------------------

    def write_text(self, path: str, text: str, *, create_only: bool = False) -> FileInfo:
        """Write ``text`` as UTF-8 (see :meth:`write_bytes`)."""
        return self.write_bytes(path, text.encode("utf-8"), create_only=create_only)

    def write_bytes(self, path: str, data: bytes, *, create_only: bool = False) -> FileInfo:
        """Write a whole file; missing parent folders are created.

        On local disk the write is atomic (temporary file, then rename): a crash leaves the
        old content or the new one, never half of it. Object stores write whole objects.

        Args:
            path: The file.
            data: Its new content.
            create_only: Refuse to overwrite: raise :class:`~ctxfs.errors.PathExistsError` if
                the file exists (write-once files).

        Raises:
            ReadOnlyPathError: ``path`` is in a read-only area.
            PathExistsError: ``create_only`` and the file exists.
            IsADirectoryPathError: ``path`` is a directory.
        """
        virtual = self._writable(path)
        try:
            existing: FileInfo | None = self._info(virtual)
        except (PathNotFoundError, NotADirectoryPathError):  # the latter: a file above it
            existing = None
        if existing is not None:
            if existing.is_dir:
                raise IsADirectoryPathError(
                    f"{virtual} is a directory; give a file path inside it", path=virtual
                )
            if create_only:
                raise PathExistsError(f"{virtual} already exists and is write-once", path=virtual)
        else:
            self._check_no_file_above(virtual)
        host = self._host(virtual)
        with translate_errors(virtual):
            if self._storage.is_local:
                self._write_local(host, data, create_only)
            elif create_only and self._storage.url.startswith(("s3://", "s3a://")):
                self.fs.pipe_file(host, data, mode="create")
            else:
                self.fs.pipe_file(host, data)
        return FileInfo(virtual, "file", len(data))

    def _check_no_file_above(self, virtual: str) -> None:
        # Object stores would happily create "a.txt/b" next to the object "a.txt", leaving one
        # path that is both a file and a folder; refuse it the same way on every backend.
        parent = virtual.rsplit("/", 1)[0] or "/"
        while parent != "/":
            try:
                above = self._info(parent)
            except (PathNotFoundError, NotADirectoryPathError):
                parent = parent.rsplit("/", 1)[0] or "/"
                continue
            if not above.is_dir:
                raise NotADirectoryPathError(
                    f"{parent} is a file, so {virtual} cannot be created inside it; "
                    "choose another path",
                    path=virtual,
                )
            return

    def _write_local(self, host: str, data: bytes, create_only: bool) -> None:
        folder = os.path.dirname(host)
        os.makedirs(folder, exist_ok=True)
        # A fixed-length name: the target's own name may already be at the 255-byte limit.
        temp = os.path.join(folder, f".ctxfs-{uuid.uuid4().hex}.tmp")
        try:
            with open(temp, "xb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            if create_only:
                os.link(temp, host)  # atomic, and fails if host exists
            else:
                os.replace(temp, host)
        finally:
            if os.path.lexists(temp):
                os.unlink(temp)

    def edit(self, path: str, old: str, new: str, *, replace_all: bool = False) -> EditResult:
        """Replace exact text in a file.

        Args:
            path: The file.
            old: Text to find, exactly (whitespace and indentation included).
            new: Replacement text; must differ from ``old``.
            replace_all: Replace every occurrence; otherwise ``old`` must occur exactly once.

        Raises:
            EditError: ``old`` is empty, equal to ``new``, absent, or ambiguous.
        """
        virtual = self._writable(path)
        if old == "":
            raise EditError(
                "old_string is empty; give the exact text to replace, or use write_file "
                "to write a whole file",
                path=virtual,
            )
        if old == new:
            raise EditError("old_string and new_string are identical; nothing to do", path=virtual)
        text = self.read_text(virtual)
        count = text.count(old)
        if count == 0:
            raise EditError(
                f"old_string was not found in {virtual}; read the file again and copy the "
                "exact text, including whitespace and indentation",
                path=virtual,
            )
        if count > 1 and not replace_all:
            raise EditError(
                f"old_string occurs {count} times in {virtual}; add surrounding lines to make "
                "it unique, or set replace_all to replace every occurrence",
                path=virtual,
            )
        updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
        self.write_text(virtual, updated)
        return EditResult(virtual, count if replace_all else 1)

    def rm(self, path: str, *, recursive: bool = False) -> None:
        """Delete a file, or a directory with ``recursive=True``.

        Raises:
            PathNotFoundError: Nothing is there.
            IsADirectoryPathError: A directory without ``recursive``.
        """
        virtual = self._writable(path)
        info = self._info(virtual)
        if info.is_dir and not recursive:
            raise IsADirectoryPathError(
                f"{virtual} is a directory; pass recursive=True to delete it and its content",
                path=virtual,
            )
        if info.is_dir and any(is_within(p, virtual) for p in self._read_only):
            raise ReadOnlyPathError(
                f"{virtual} contains a read-only area; it cannot be deleted", path=virtual
            )
        with translate_errors(virtual):
            self.fs.rm(self._host(virtual), recursive=recursive)

    # -- searching ----------------------------------------------------------------------

    def glob(self, pattern: str, path: str = "/", *, limit: int | None = None) -> GlobResult:
        """Files under ``path`` matching a glob pattern, sorted.

        ``*``, ``?``, ``[...]``, ``{a,b}`` and ``**`` (any number of folders) are supported; a
        pattern without ``/`` matches file names at any depth. Hidden files (a name starting
        with ``.``) match only when the pattern names the dot. At most ``limit`` paths
        (default ``limits.max_glob_results``) are returned; ``truncated`` says if more matched.

        Raises:
            PatternError: The pattern is malformed.
            PathNotFoundError: ``path`` does not exist.
        """
        return glob_files(self, pattern, path, limit)

    def grep(
        self,
        pattern: str,
        path: str = "/",
        *,
        glob: str | None = None,
        fixed_strings: bool = False,
        ignore_case: bool = False,
        multiline: bool = False,
        output_mode: OutputMode = "files_with_matches",
        before: int = 0,
        after: int = 0,
    ) -> GrepResult:
        """Search text files under ``path`` with a regular expression.

        Args:
            pattern: A ``regex``-module regular expression (or a literal with
                ``fixed_strings``). Every match runs under ``limits.regex_timeout``.
            path: A folder to search recursively, or one file.
            glob: Only files whose path (relative to ``path``) matches this glob.
            fixed_strings: Search for ``pattern`` literally.
            ignore_case: Case-insensitive, with Unicode case folding.
            multiline: Let matches span lines (``.`` then matches newlines).
            output_mode: ``files_with_matches``, ``content`` or ``count``.
            before: Context lines before each match (content mode).
            after: Context lines after each match (content mode).

        Hidden files are skipped unless ``glob`` names them; binary files and files over
        ``limits.max_grep_file_bytes`` are skipped and listed in the result.

        Raises:
            PatternError: The pattern or glob is invalid.
            SearchTimeoutError: The pattern ran past the time limit.
            PathNotFoundError: ``path`` does not exist.
        """
        options = GrepOptions(
            pattern=pattern,
            fixed_strings=fixed_strings,
            ignore_case=ignore_case,
            multiline=multiline,
            output_mode=output_mode,
            before=before,
            after=after,
            max_line_chars=self._limits.max_line_chars,
            timeout=self._limits.regex_timeout,
        )
        return grep_files(self, options, path, glob)

    # -- walking (used by glob and grep) -------------------------------------------------

    def _walk_files(self, base: str) -> list[FileInfo]:
        """Every file under virtual ``base`` (a directory or a single file), sorted."""
        info = self._info(base)
        if not info.is_dir:
            return [info]
        if self._storage.is_local:
            return self._walk_local(base)
        host = self._host(base)
        try:
            with translate_errors(base):
                found = self.fs.find(host, withdirs=False, detail=True)
        except PathNotFoundError:
            return []
        files = [self._to_info(raw) for raw in found.values()]
        return sorted((f for f in files if f.type == "file"), key=lambda f: f.path)

    def _walk_local(self, base: str) -> list[FileInfo]:
        top = self._host(base)
        out: list[FileInfo] = []

        def fail(exc: OSError) -> None:
            raise BackendError(f"{base}: could not list ({exc})", path=base) from exc

        for folder, _dirs, names in os.walk(top, onerror=fail):
            for name in names:
                full = os.path.join(folder, name)
                virtual = self._virtual(full)
                try:
                    if os.path.islink(full):
                        check_host_path(self._real_root, full, virtual)
                        if not os.path.isfile(full):
                            continue
                    size = os.path.getsize(full)
                except (OSError, ValueError):
                    continue
                out.append(FileInfo(virtual, "file", size))
        return sorted(out, key=lambda f: f.path)
