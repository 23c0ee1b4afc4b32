"""The Workspace: virtual, confined file access on any storage.

The Workspace holds what is the same on every backend: the sandbox rules for paths, typed
results, reading pages (:mod:`ctxfs._workspace._textread`), read-only areas and updates with
no lost write (:mod:`ctxfs._workspace._writes`), and glob and grep
(:mod:`ctxfs._workspace._find`, over the store's ``walk`` and ``fetch``). Everything that
differs between backends is behind the :class:`~ctxfs.backends.Store` it was opened with.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ctxfs._errors import (
    IsADirectoryPathError,
    NotADirectoryPathError,
    PathNotFoundError,
    ReadOnlyPathError,
)
from ctxfs._workspace._results import (
    EditResult,
    FileInfo,
    GlobResult,
    GrepResult,
    OutputMode,
    ReadResult,
)
from ctxfs._workspace._textread import check_page_request, decode_text, read_capped, read_page
from ctxfs._workspace._writes import (
    UPDATE_ATTEMPTS,
    ReadOnlyAreas,
    Replacement,
    check_write_target,
    update_file,
    write_conditionally,
)
from ctxfs.backends import Store, check_store, guard_store, open_storage
from ctxfs.sandbox import Limits, normalize_path

if TYPE_CHECKING:  # fsspec loads only for storage that needs it
    from fsspec import AbstractFileSystem

__all__ = ["UPDATE_ATTEMPTS", "Workspace"]


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
            ``s3://bucket/prefix``, any fsspec URL), an fsspec filesystem object, or a
            :class:`~ctxfs.backends.Store` (yours, or another workspace's ``store``).
        root: With a filesystem object, the folder inside it that becomes ``/``.
        storage_options: Options for the filesystem opened from a URL (for S3:
            ``endpoint_url``, ``key``, ``secret``, ``client_kwargs``...).
        read_only: Virtual folders that writes, edits and deletes must leave alone.
        limits: Size caps and time limits (see :class:`ctxfs.sandbox.Limits`).
        check: Check the storage now (see below). ``False`` defers every failure to the
            first operation that meets it.

    Opening checks the storage once (:func:`ctxfs.backends.check_store`): that it can be
    read and, unless ``read_only`` covers ``/``, written. A missing bucket, missing
    credentials, refused access or an unreachable endpoint raise
    :class:`~ctxfs._errors.BackendError` here, with the reason, rather than at first use.
    :meth:`view` makes no new check.

    Raises:
        BackendError: The storage check failed.
        ValueError: Options that do not fit the target (see
            :func:`ctxfs.backends.open_storage`).

    A ``memory://`` workspace has a private store: two Workspace objects never see each
    other's files, even with the same URL. To share one, pass the same filesystem object
    or store.
    """

    def __init__(
        self,
        target: str | os.PathLike[str] | AbstractFileSystem | Store,
        *,
        root: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        read_only: Iterable[str] = (),
        limits: Limits | None = None,
        check: bool = True,
    ) -> None:
        store = open_storage(target, root=root, storage_options=storage_options)
        self._init(store, read_only, limits or Limits())
        if check:
            check_store(self._io, write=not self.is_read_only("/"))

    def _init(self, store: Store, read_only: Iterable[str], limits: Limits) -> None:
        self._store, self._io = store, guard_store(store)  # calls go to _io: ctxfs errors only
        self._areas = ReadOnlyAreas(read_only)
        self._limits = limits

    def view(self, *, read_only: Iterable[str] = ()) -> Workspace:
        """The same storage, with more folders read-only.

        The SDK writes its own areas through the full workspace and hands the agent's tools
        a view in which those areas are read-only.
        """
        clone = object.__new__(Workspace)
        clone._init(self._store, (*self._areas.folders, *read_only), self._limits)
        return clone

    # -- properties ---------------------------------------------------------------------

    @property
    def url(self) -> str:
        """Where the workspace lives, for display (``s3://bucket/prefix``, a local path...)."""
        return self._store.url

    @property
    def store(self) -> Store:
        """The :class:`~ctxfs.backends.Store` the files live in (views share it).

        ``Workspace(ws.store, limits=...)`` sees the same files with other settings.
        """
        return self._store

    @property
    def read_only(self) -> tuple[str, ...]:
        """Virtual folders that refuse writes, edits and deletes."""
        return self._areas.folders

    @property
    def limits(self) -> Limits:
        """The size caps and time limits in force."""
        return self._limits

    def __repr__(self) -> str:
        return f"Workspace({self.url!r})"

    # -- paths --------------------------------------------------------------------------

    def resolve(self, path: str) -> str:
        """Normalise an agent-supplied path, or raise :class:`~ctxfs._errors.UnsafePathError`.

        Besides the sandbox's rules, the store refuses a path whose symbolic links lead
        outside the root (local disk).
        """
        virtual = normalize_path(path)
        self._io.real_path(virtual)
        return virtual

    def is_read_only(self, path: str) -> bool:
        """Whether the (normalised) virtual path lies in a read-only area.

        Compared with case folded (:func:`ctxfs.sandbox.case_key`), whatever the store: on a
        case-insensitive disk ``/TOOL_RESULTS/x`` is ``/tool_results/x``, so it must be
        refused everywhere the same way.
        """
        return self._areas.area_of(path) is not None

    def _writable(self, path: str) -> str:
        virtual = normalize_path(path)
        self._areas.check_writable(virtual, self._io.real_path(virtual))
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
        if virtual == "/":  # the root exists even before an object store holds anything
            return FileInfo("/", "directory")
        return self._io.info(virtual)

    def exists(self, path: str) -> bool:
        """Whether anything is at ``path``.

        Unlike fsspec's ``exists``, a storage failure raises
        :class:`~ctxfs._errors.BackendError` instead of answering ``False``.
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
        try:
            entries = self._io.ls(virtual)
        except PathNotFoundError:
            if virtual == "/":
                return []
            raise
        except NotADirectoryPathError:
            if self._info(virtual).is_dir:
                raise
            raise NotADirectoryPathError(
                f"{virtual} is a file, not a directory; read it with read_file", path=virtual
            ) from None
        return sorted(entries, key=lambda i: i.path)

    # -- reading ------------------------------------------------------------------------

    def _file(self, path: str) -> str:
        virtual = self.resolve(path)
        info = self._info(virtual)
        if info.is_dir:
            raise IsADirectoryPathError(
                f"{virtual} is a directory, not a file; list it with ls", path=virtual
            )
        return virtual

    def read_bytes(self, path: str, *, bounded: bool = False) -> bytes:
        """The whole content of a file, as bytes.

        With ``bounded``, at most ``limits.max_read_bytes`` are read: a larger file (by its
        size, or by what the stream holds if it grew) raises
        :class:`~ctxfs._errors.FileTooLargeError`, having read nothing past the cap. Use
        it for files an agent names, binary ones above all (media).
        """
        virtual = self._file(path)
        if not bounded:
            return self._read_bytes(virtual)
        size = self._info(virtual).size
        return read_capped(self._io, virtual, size, self._limits.max_read_bytes)

    def _read_bytes(self, virtual: str) -> bytes:
        return self._io.read_bytes(virtual)

    def read_text(self, path: str) -> str:
        """The whole content of a UTF-8 text file.

        Raises:
            NotTextError: The file is binary or not valid UTF-8.
        """
        virtual = self._file(path)
        return decode_text(virtual, self._read_bytes(virtual))

    def read_versioned(self, path: str) -> tuple[bytes, str]:
        """The whole content of a file and its version, for a conditional write.

        Give the version back as ``if_version`` to :meth:`write_bytes`: the write then
        happens only if nobody changed the file in between (compare-and-swap). The token is
        opaque (see :meth:`ctxfs.backends.Store.read_versioned`). :meth:`update` wraps the
        loop of reading, changing and writing again on a conflict.

        Raises:
            PathNotFoundError: Nothing is there.
            IsADirectoryPathError: ``path`` is a directory.
        """
        return self._io.read_versioned(self._file(path))

    def read_lines(
        self,
        path: str,
        offset: int = 0,
        limit: int | None = None,
        *,
        column: int = 0,
        max_chars: int | None = None,
    ) -> ReadResult:
        """A page of lines of a text file, with bounded memory whatever the file's size.

        Args:
            path: The file.
            offset: 0-based index of the first line.
            limit: Most lines; defaults to ``limits.default_read_lines``.
            column: Start the first line at this character (0-based): how a line longer than
                ``limits.max_line_chars`` is read piece by piece.
            max_chars: A tighter character cap for this page than ``limits.max_read_chars``
                (the tools derive one from their token budget).

        The page also stops before ``limits.max_read_chars`` characters (or ``max_chars``,
        if smaller), and each line is clipped at ``limits.max_line_chars``; the result says
        so and where to go on.
        """
        check_page_request(offset, limit, column, max_chars)
        cap = self._limits.max_read_chars
        virtual = self._file(path)
        with self._io.open_read(virtual) as stream:
            return read_page(
                stream,
                virtual,
                offset=offset,
                limit=limit or self._limits.default_read_lines,
                max_line_chars=self._limits.max_line_chars,
                max_chars=cap if max_chars is None else min(cap, max_chars),
                column=column,
            )

    # -- writing ------------------------------------------------------------------------

    def write_text(
        self,
        path: str,
        text: str,
        *,
        create_only: bool = False,
        if_version: str | None = None,
    ) -> FileInfo:
        """Write ``text`` as UTF-8 (see :meth:`write_bytes`)."""
        data = _utf8(text)
        return self.write_bytes(path, data, create_only=create_only, if_version=if_version)

    def write_bytes(
        self,
        path: str,
        data: bytes,
        *,
        create_only: bool = False,
        if_version: str | None = None,
    ) -> FileInfo:
        """Write a whole file; missing parent folders are created.

        On local disk the write is atomic (temporary file, then rename): a crash leaves the
        old content or the new one, never half of it. Object stores write whole objects.

        Args:
            path: The file.
            data: Its new content.
            create_only: Refuse to overwrite: raise :class:`~ctxfs._errors.PathExistsError` if
                the file exists (write-once files).
            if_version: Write only if the file still has this version, from
                :meth:`read_versioned` (compare-and-swap, atomic against other writers:
                see :meth:`ctxfs.backends.Store.write`).

        Raises:
            ReadOnlyPathError: ``path`` is in a read-only area.
            PathExistsError: ``create_only`` and the file exists (holding other bytes than
                ``data``: a write refused on its own bytes, a retry after a lost answer, is done).
            ConflictError: ``if_version`` and the file changed or was deleted since it was
                read; nothing was written.
            IsADirectoryPathError: ``path`` is a directory, or ends with ``/``.
            ValueError: Both ``create_only`` and ``if_version``.
            TypeError: ``data`` is not bytes (nothing is written).
        """
        _check_write(data, create_only=create_only, if_version=if_version)
        virtual = _file_path(path, self._writable(path))
        check_write_target(self._info, virtual, create_only=create_only, if_version=if_version)
        write_conditionally(self._io, virtual, data, create_only=create_only, if_version=if_version)
        return FileInfo(virtual, "file", len(data))

    def update(
        self,
        path: str,
        change: Callable[[bytes | None], bytes],
        *,
        attempts: int = UPDATE_ATTEMPTS,
    ) -> FileInfo:
        """Change a file with no lost update: read, change, write only if unchanged, retry.

        ``change`` gets the file's content (``None`` if it does not exist yet) and returns
        the new content. The write is conditional on the version that was read (create-only
        for a new file); when another writer got in first, the file is read again and
        ``change`` called again on what it holds now, after a short random pause. So
        ``change`` may run several times: it must depend only on its argument. An exception
        it raises ends the update with nothing written; content it returns unchanged is not
        written. A write that failed or was refused but that the file holds (its reply was
        lost, a retry refused) is done; one a store tore is undone (and the error raised).

        Example:
            >>> ws = Workspace("memory://update-doc")
            >>> def add_line(data: bytes | None) -> bytes:
            ...     return (data or b"") + b"one more\\n"
            >>> ws.update("/log.txt", add_line).size
            9
            >>> ws.update("/log.txt", add_line).size
            18

        Args:
            path: The file.
            change: From the current content (or ``None``) to the new content.
            attempts: Most reads-and-writes before giving up.

        Returns:
            The file as written.

        Raises:
            ConflictError: Other writers changed the file during every attempt; nothing written.
            ValueError: ``attempts`` is below 1.
        """
        if attempts < 1:
            raise ValueError("attempts must be >= 1")
        return update_file(self, self._writable(path), change, attempts)

    def edit(
        self,
        path: str,
        old: str,
        new: str,
        *,
        replace_all: bool = False,
        attempts: int = UPDATE_ATTEMPTS,
    ) -> EditResult:
        """Replace exact text in a file, applied to exactly the content it read.

        The file is written only if nobody changed it since the edit read it (see
        :meth:`update`); if someone did, the edit is checked and applied again on the new
        content, so two editors never lose each other's change.

        Args:
            path: The file.
            old: Text to find, exactly (whitespace and indentation included). In a file
                whose lines end with ``\r\n``, text with ``\n`` line ends (as copied from
                ``read_file``, which shows lines without their ``\r``) that is not in the
                file as given is found with ``\r\n`` ones, and ``new`` gets them too.
            new: Replacement text; must differ from ``old``.
            replace_all: Replace every occurrence; otherwise ``old`` must occur exactly once.
            attempts: Most tries while other writers keep changing the file.

        Raises:
            EditError: ``old`` is empty, equal to ``new``, absent, or ambiguous.
            ConflictError: The file changed since it was read, at every attempt; nothing
                was written.
        """
        virtual = self._writable(path)
        replacement = Replacement(virtual, old, new, replace_all=replace_all)
        # Applied to the content it read, or not at all: another writer's change in between
        # makes the write fail, and the edit is tried again on the new content.
        self.update(virtual, replacement, attempts=attempts)
        return EditResult(virtual, replacement.count)

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
        if info.is_dir and self._areas.inside(virtual):
            raise ReadOnlyPathError(
                f"{virtual} contains a read-only area; it cannot be deleted", path=virtual
            )
        self._io.remove(virtual, recursive=recursive)

    # -- searching ----------------------------------------------------------------------

    def glob(self, pattern: str, path: str = "/", *, limit: int | None = None) -> GlobResult:
        """Files under ``path`` matching a glob pattern, sorted.

        ``*``, ``?``, ``[...]``, ``{a,b}`` and ``**`` (any number of folders) are supported; a
        pattern without ``/`` matches file names at any depth. Hidden files (a name starting
        with ``.``) match only when the pattern names the dot. At most ``limit`` paths
        (default ``limits.max_glob_results``) are returned; ``truncated`` says if more matched
        and ``total`` how many did. Matching runs under ``limits.regex_timeout``, the whole
        call under ``limits.search_timeout``.

        Raises:
            PatternError: The pattern is malformed.
            SearchTimeoutError: Matching ran past the time limit.
            PathNotFoundError: ``path`` does not exist.
            BackendError: A folder could not be listed (no file silently goes missing).
        """
        from ctxfs._workspace._find import glob_store  # on first use: ls, cat need no regex

        base = self._info(self.resolve(path))
        cap = limit if limit is not None else self._limits.max_glob_results
        return glob_store(self._io, base, pattern, cap=cap, limits=self._limits)

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
                ``fixed_strings``). The whole search (every file, and the ``glob`` filter)
                runs under ``limits.regex_timeout``; listing, reading and matching together
                under ``limits.search_timeout``.
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
            SearchTimeoutError: The search ran past the time limit.
            PathNotFoundError: ``path`` does not exist.
            BackendError: A folder could not be listed or a file could not be read.
        """
        from ctxfs._workspace._find import grep_store  # on first use, as in glob
        from ctxfs._workspace._grep import GrepOptions

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
        base = self._info(self.resolve(path))
        return grep_store(self._io, base, options, glob=glob, limits=self._limits)


def _check_write(data: object, *, create_only: bool, if_version: str | None) -> None:
    # the data's type is checked before the store is asked: a store handed a str or None
    # leaves an empty file behind, then fails as if the storage could not be reached
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    if create_only and if_version is not None:
        raise ValueError(
            "create_only and if_version exclude each other: create_only is for a file "
            "that does not exist yet, if_version for one that was read"
        )


def _file_path(path: str, virtual: str) -> str:
    """``virtual``, unless ``path`` ends with ``/``: "/new/" names a folder, and writing it as
    the file /new would be a guess."""
    if isinstance(path, str) and path.rstrip("/") != path:
        raise IsADirectoryPathError(
            f"{path} ends with '/', which names a folder; give a file path", path=virtual
        )
    return virtual


def _utf8(text: object) -> bytes:
    """``text`` as UTF-8; a lone surrogate raises ``UnicodeEncodeError``."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    return text.encode("utf-8")
