"""The workspace conformance suite: run ctxfs's own backend tests on your storage.

Every behaviour of :class:`~ctxfs.Workspace` that must hold on any backend is a test here:
listing, metadata, "missing" versus "could not ask", paged reads, byte-exact and create-only
writes, conditional writes (compare-and-swap: versions, ``update``, edits that never lose
another writer's change), edits, deletes, read-only areas, the sandbox, glob, grep, and the
store's own walk and fetch. ctxfs runs it on memory, local disk and S3; run it on your fsspec
filesystem or your own :class:`~ctxfs.backends.Store` by subclassing
:class:`WorkspaceConformance` in a test module and giving it a ``make_workspace`` fixture::

    import itertools

    import pytest

    from ctxfs import Workspace
    from ctxfs.testing.conformance import WorkspaceConformance


    class TestMyFilesystem(WorkspaceConformance):
        @pytest.fixture
        def make_workspace(self):
            fs = MyFileSystem(...)  # or a Store
            numbers = itertools.count()

            def make(**options):
                return Workspace(fs, root=f"/conformance/ws{next(numbers)}", **options)

            return make

This module imports pytest, so it is the one part of :mod:`ctxfs.testing` that needs it.
"""

from __future__ import annotations

import pytest

from ctxfs._errors import (
    EditError,
    IsADirectoryPathError,
    NotADirectoryPathError,
    NotTextError,
    PathExistsError,
    PathNotFoundError,
    PatternError,
)
from ctxfs._workspace._results import FileInfo
from ctxfs._workspace._workspace import Workspace
from ctxfs.sandbox import Limits
from ctxfs.testing._conformance_areas import ReadOnlyAreaConformance, WorkspaceFactory
from ctxfs.testing._conformance_cas import ConditionalWriteConformance

__all__ = ["WorkspaceConformance", "WorkspaceFactory"]


BYTES_PAYLOADS = {
    "every-byte": bytes(range(256)) * 3,
    "nul-and-high-bytes": b"\x00\xff\xfe\x00\r\n\r",
    "empty": b"",
}

TEXT_PAYLOADS = {
    "cjk-and-emoji": "漢字かなカナ한국어 — naïve café 🧪🚀\n第二行\n",
    "mixed-line-endings": "a\r\nb\rc\nd\n\r\n",
    "no-final-newline": "the end",
    "combining-and-rtl": "e\u0301 \u05e9\u05dc\u05d5\u05dd \ufeffbom-inside\u2028sep",
}

UNUSUAL_NAMES = [
    "/" + "文" * 85,  # 255 bytes: the longest name the sandbox accepts
    "/" + "x" * 255,
    "/dir with spaces/report..final.md",
    "/[...slug]/page.tsx",
    "/%2e%2e/a+b?c=d#e.txt",
    "/.../....",
]


class WorkspaceConformance(ReadOnlyAreaConformance, ConditionalWriteConformance):
    """Every backend-independent Workspace behaviour, as pytest tests.

    Subclass it (with a name starting with ``Test``) and override the ``make_workspace``
    fixture to return a :class:`WorkspaceFactory`: a callable taking ``read_only=`` and
    ``limits=`` and returning a fresh, empty workspace on the storage under test.
    """

    @pytest.fixture
    def make_workspace(self) -> WorkspaceFactory:
        """Override: return a factory of fresh, empty workspaces on your storage."""
        raise NotImplementedError(
            "subclass WorkspaceConformance and define a make_workspace fixture that returns "
            "a callable making a fresh, empty Workspace on the storage under test"
        )

    @pytest.fixture
    def workspace(self, make_workspace: WorkspaceFactory) -> Workspace:
        """A fresh, empty workspace."""
        return make_workspace()

    # -- ls -------------------------------------------------------------------------------

    def test_ls_lists_direct_children_sorted_with_directories_typed(
        self, workspace: Workspace
    ) -> None:
        assert workspace.ls("/") == []
        assert workspace.ls() == []
        for path in ["/b.txt", "/a/inner.txt", "/c/deep/x.txt", "/a.md", "/B.txt"]:
            workspace.write_text(path, "x" * len(path))

        entries = workspace.ls("/")

        assert [e.path for e in entries] == ["/B.txt", "/a", "/a.md", "/b.txt", "/c"]
        by_path = {e.path: e for e in entries}
        assert by_path["/a"] == FileInfo("/a", "directory")
        assert by_path["/c"].is_dir and by_path["/c"].size is None
        assert by_path["/b.txt"] == FileInfo("/b.txt", "file", len("/b.txt"))
        assert [e.name for e in workspace.ls("/c")] == ["deep"]
        assert workspace.ls("c/deep/") == [FileInfo("/c/deep/x.txt", "file", len("/c/deep/x.txt"))]

    def test_ls_of_a_missing_directory_or_of_a_file_raises(self, workspace: Workspace) -> None:
        workspace.write_text("/notes.md", "x")
        with pytest.raises(PathNotFoundError, match=r"/absent: no such file or directory"):
            workspace.ls("/absent")
        with pytest.raises(NotADirectoryPathError, match=r"/notes.md is a file, not a directory"):
            workspace.ls("/notes.md")

    # -- info / exists ----------------------------------------------------------------------

    def test_info_of_files_directories_and_the_root(self, workspace: Workspace) -> None:
        workspace.write_bytes("/data/blob.bin", b"\x00\x01\x02" * 7)
        assert workspace.info("/data/blob.bin") == FileInfo("/data/blob.bin", "file", 21)
        assert workspace.info("data/./blob.bin").path == "/data/blob.bin"
        workspace.write_bytes("/empty", b"")
        assert workspace.info("/empty") == FileInfo("/empty", "file", 0)
        workspace.write_text("/dir/sub/f.txt", "x")
        assert workspace.info("/dir") == FileInfo("/dir", "directory")
        assert workspace.info("/dir/sub/") == FileInfo("/dir/sub", "directory")
        assert workspace.info("/") == FileInfo("/", "directory")

    def test_exists_answers_true_and_false_and_info_of_missing_is_not_found(
        self, workspace: Workspace
    ) -> None:
        workspace.write_text("/dir/f.txt", "x")
        assert workspace.exists("/dir/f.txt")
        assert workspace.exists("/dir")
        assert workspace.exists("/")
        assert not workspace.exists("/dir/g.txt")
        assert not workspace.exists("/nothing/here")
        assert not workspace.exists("/dir/f.tx")  # a prefix of a name is not the name
        with pytest.raises(PathNotFoundError) as caught:
            workspace.info("/missing.txt")
        assert isinstance(caught.value, FileNotFoundError)
        assert caught.value.path == "/missing.txt"

    def test_exists_is_false_under_a_file(self, workspace: Workspace) -> None:
        workspace.write_text("/a.txt", "x")
        assert workspace.exists("/a.txt/b") is False

    # -- reading ----------------------------------------------------------------------------

    def test_read_text_and_read_bytes(self, workspace: Workspace) -> None:
        workspace.write_text("/a.txt", "héllo\nworld\n")
        assert workspace.read_text("/a.txt") == "héllo\nworld\n"
        assert workspace.read_bytes("/a.txt") == "héllo\nworld\n".encode()
        workspace.write_bytes("/empty.txt", b"")
        assert workspace.read_text("/empty.txt") == ""
        assert workspace.read_bytes("/empty.txt") == b""

    def test_a_missing_path_is_path_not_found_and_file_not_found(
        self, workspace: Workspace
    ) -> None:
        for op in ["read_text", "read_bytes", "read_lines", "info", "rm"]:
            with pytest.raises(
                PathNotFoundError, match=r"^/no/such\.txt: no such file or directory$"
            ) as caught:
                getattr(workspace, op)("/no/such.txt")
            assert isinstance(caught.value, FileNotFoundError), op
        with pytest.raises(PathNotFoundError):
            workspace.edit("/ghost.txt", "a", "b")
        assert workspace.ls("/") == []

    def test_a_directory_given_as_a_file_is_refused_and_kept(self, workspace: Workspace) -> None:
        workspace.write_text("/dir/f.txt", "x")
        for op in ["read_text", "read_bytes", "read_lines"]:
            with pytest.raises(IsADirectoryPathError, match=r"^/dir is a directory, not a file"):
                getattr(workspace, op)("/dir")
            with pytest.raises(IsADirectoryError):
                getattr(workspace, op)("/")
        with pytest.raises(IsADirectoryPathError, match=r"/dir is a directory"):
            workspace.write_text("/dir", "clobber")
        with pytest.raises(IsADirectoryPathError):
            workspace.edit("/dir", "x", "y")
        with pytest.raises(IsADirectoryPathError, match=r"workspace root"):
            workspace.write_text("/", "clobber")
        assert workspace.info("/dir").is_dir
        assert workspace.read_text("/dir/f.txt") == "x"

    def test_binary_or_invalid_utf8_is_not_text_and_left_intact(self, workspace: Workspace) -> None:
        workspace.write_bytes("/img.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
        with pytest.raises(NotTextError, match=r"^/img.png is a binary file \(it contains NUL"):
            workspace.read_text("/img.png")
        with pytest.raises(NotTextError, match=r"/img.png is a binary file"):
            workspace.read_lines("/img.png")
        with pytest.raises(NotTextError):
            workspace.edit("/img.png", "PNG", "GIF")
        assert workspace.read_bytes("/img.png").startswith(b"\x89PNG")
        workspace.write_bytes("/latin1.txt", "café\n".encode("latin-1"))
        with pytest.raises(NotTextError, match=r"^/latin1.txt is not valid UTF-8 text \("):
            workspace.read_text("/latin1.txt")
        with pytest.raises(NotTextError, match=r"/latin1.txt is not valid UTF-8 text"):
            workspace.read_lines("/latin1.txt")
        with pytest.raises(NotTextError):
            workspace.edit("/latin1.txt", "caf", "CAF")
        assert workspace.read_bytes("/latin1.txt") == "café\n".encode("latin-1")
        workspace.write_bytes("/cut.txt", "ok\n€".encode()[:-1])
        with pytest.raises(NotTextError):
            workspace.read_lines("/cut.txt")

    # -- read_lines -------------------------------------------------------------------------

    def test_read_lines_pages_with_offset_and_limit(self, workspace: Workspace) -> None:
        workspace.write_text("/ten.txt", "".join(f"line {i}\n" for i in range(10)))

        first = workspace.read_lines("/ten.txt", limit=4)
        assert first.lines == ("line 0", "line 1", "line 2", "line 3")
        assert (first.offset, first.total_lines, first.next_offset) == (0, 10, 4)

        second = workspace.read_lines("/ten.txt", offset=first.next_offset or 0, limit=4)
        assert second.lines == ("line 4", "line 5", "line 6", "line 7")
        assert second.next_offset == 8

        last = workspace.read_lines("/ten.txt", offset=8, limit=4)
        assert last.lines == ("line 8", "line 9")
        assert last.next_offset is None
        assert not last.clipped and not last.stopped_by_chars

        beyond = workspace.read_lines("/ten.txt", offset=50)
        assert beyond.lines == () and beyond.total_lines == 10 and beyond.next_offset is None
        with pytest.raises(ValueError, match="offset must be >= 0"):
            workspace.read_lines("/ten.txt", offset=-1)
        with pytest.raises(ValueError, match="limit must be >= 1"):
            workspace.read_lines("/ten.txt", limit=0)

    def test_read_lines_line_endings_and_empty_file(self, workspace: Workspace) -> None:
        workspace.write_bytes("/dos.txt", b"one\r\ntwo\r\n\r\nlast")
        page = workspace.read_lines("/dos.txt")
        assert page.lines == ("one", "two", "", "last")
        assert page.total_lines == 4
        assert page.next_offset is None
        workspace.write_text("/a.txt", "x\n")
        workspace.write_text("/b.txt", "x\n\n")
        workspace.write_text("/c.txt", "\n")
        assert workspace.read_lines("/a.txt").lines == ("x",)
        assert workspace.read_lines("/b.txt").lines == ("x", "")
        assert workspace.read_lines("/c.txt").lines == ("",)
        assert workspace.read_lines("/c.txt").total_lines == 1
        workspace.write_bytes("/empty.txt", b"")
        page = workspace.read_lines("/empty.txt")
        assert page.lines == ()
        assert page.total_lines == 0
        assert page.next_offset is None

    def test_read_lines_obeys_the_configured_limits(self, make_workspace: WorkspaceFactory) -> None:
        full = make_workspace()
        full.write_text("/clip.txt", "short\n" + "é" * 12 + "\n12345\r\n123456\n")
        full.write_text("/f.txt", "aaaa\nbbbb\ncccc\ndddd\n")

        clipping = Workspace(full.store, limits=Limits(max_line_chars=5))
        page = clipping.read_lines("/clip.txt")
        assert page.lines == ("short", "ééééé", "12345", "12345")
        assert page.clipped == ((1, 12), (3, 6))

        three = Workspace(full.store, limits=Limits(default_read_lines=3))
        page = three.read_lines("/f.txt")
        assert page.lines == ("aaaa", "bbbb", "cccc")
        assert page.next_offset == 3
        assert three.read_lines("/f.txt", limit=4).lines[-1] == "dddd"

        workspace = Workspace(full.store, limits=Limits(max_read_chars=12))
        page = workspace.read_lines("/f.txt")
        assert page.lines == ("aaaa", "bbbb")
        assert page.stopped_by_chars
        assert page.next_offset == 2
        # The first line of a page always comes back, even if it alone is over the cap.
        workspace.write_text("/long.txt", "x" * 50 + "\ny\n")
        page = workspace.read_lines("/long.txt")
        assert page.lines == ("x" * 50,)
        assert page.next_offset == 1

    # -- writing ----------------------------------------------------------------------------

    def test_write_creates_missing_parents_and_overwrites(self, workspace: Workspace) -> None:
        info = workspace.write_text("/a/b/c/d.txt", "deep")
        assert info == FileInfo("/a/b/c/d.txt", "file", 4)
        assert workspace.info("/a/b/c").is_dir
        assert workspace.read_text("a/b/c/d.txt") == "deep"
        workspace.write_text("/f.txt", "a much longer first version\n")
        workspace.write_text("/f.txt", "short")
        assert workspace.read_text("/f.txt") == "short"
        assert workspace.info("/f.txt").size == 5

    def test_create_only_refuses_an_existing_file_and_keeps_its_content(
        self, workspace: Workspace
    ) -> None:
        assert workspace.write_text("/once.txt", "first", create_only=True).size == 5
        with pytest.raises(PathExistsError, match=r"^/once.txt already exists and is write-once$"):
            workspace.write_text("/once.txt", "second", create_only=True)
        with pytest.raises(FileExistsError):
            workspace.write_bytes("/once.txt", b"third", create_only=True)
        assert workspace.read_text("/once.txt") == "first"

    def test_the_store_refuses_a_create_only_write_onto_a_file(self, workspace: Workspace) -> None:
        # The Workspace checks first; the store must refuse too, for a writer that raced it.
        workspace.write_text("/once.txt", "first")
        with pytest.raises(PathExistsError):
            workspace.store.write("/once.txt", b"second", create_only=True)
        assert workspace.read_text("/once.txt") == "first"

    def test_writing_below_a_file_is_refused_and_writes_nothing(self, workspace: Workspace) -> None:
        workspace.write_text("/report.md", "report")
        with pytest.raises(NotADirectoryPathError, match=r"/report.md is a file"):
            workspace.write_text("/report.md/child.txt", "x")
        with pytest.raises(NotADirectoryPathError):
            workspace.write_text("/report.md/deeper/child.txt", "x")
        assert workspace.ls("/") == [FileInfo("/report.md", "file", 6)]
        assert workspace.read_text("/report.md") == "report"

    def test_write_bytes_and_write_text_round_trip_byte_exact(self, workspace: Workspace) -> None:
        for name, data in BYTES_PAYLOADS.items():
            assert workspace.write_bytes(f"/bin/{name}", data).size == len(data)
            assert workspace.read_bytes(f"/bin/{name}") == data, name
            assert workspace.info(f"/bin/{name}").size == len(data)
        for name, text in TEXT_PAYLOADS.items():
            workspace.write_text(f"/txt/{name}.txt", text)
            assert workspace.read_text(f"/txt/{name}.txt") == text, name
            assert workspace.read_bytes(f"/txt/{name}.txt") == text.encode("utf-8")

    def test_unusual_but_legal_names_round_trip(self, workspace: Workspace) -> None:
        for path in UNUSUAL_NAMES:
            workspace.write_text(path, path)
            assert workspace.read_text(path) == path
            assert path in [e.path for e in workspace.ls(path.rsplit("/", 1)[0] or "/")]

    # -- edit -------------------------------------------------------------------------------

    def test_edit_replaces_a_unique_match_or_all_with_a_count(self, workspace: Workspace) -> None:
        workspace.write_text("/code.py", "def f():\n    return 1\n")
        result = workspace.edit("/code.py", "return 1", "return 2")
        assert (result.path, result.replacements) == ("/code.py", 1)
        assert workspace.read_text("/code.py") == "def f():\n    return 2\n"
        workspace.write_text("/f.txt", "x = 1\ny = 1\nz = 1\n")
        result = workspace.edit("/f.txt", "= 1", "= 2", replace_all=True)
        assert result.replacements == 3
        assert workspace.read_text("/f.txt") == "x = 2\ny = 2\nz = 2\n"
        single = workspace.edit("/f.txt", "z = 2", "z = 3", replace_all=True)
        assert single.replacements == 1
        workspace.write_bytes("/f.txt", "héllo\r\n世界\r\n".encode())
        workspace.edit("/f.txt", "世界", "мир")
        assert workspace.read_bytes("/f.txt") == "héllo\r\nмир\r\n".encode()

    def test_edit_refusals_change_nothing(self, workspace: Workspace) -> None:
        original = "def f():\n    return 1\n\nx = 1\ny = 1\n"
        workspace.write_text("/code.py", original)
        with pytest.raises(EditError, match=r"old_string was not found in /code.py; read the"):
            workspace.edit("/code.py", "return 3", "return 4")
        with pytest.raises(
            EditError, match=r"old_string occurs 3 times in /code.py; .*replace_all"
        ):
            workspace.edit("/code.py", " 1", " 2")
        with pytest.raises(EditError, match=r"old_string is empty"):
            workspace.edit("/code.py", "", "x")
        with pytest.raises(EditError, match=r"identical"):
            workspace.edit("/code.py", "return", "return")
        assert workspace.read_text("/code.py") == original

    # -- rm ---------------------------------------------------------------------------------

    def test_rm_deletes_files_and_directories_only_when_recursive(
        self, workspace: Workspace
    ) -> None:
        workspace.write_text("/a/f.txt", "x")
        workspace.write_text("/a/g.txt", "y")
        workspace.rm("/a/f.txt")
        assert not workspace.exists("/a/f.txt")
        assert [e.path for e in workspace.ls("/a")] == ["/a/g.txt"]
        workspace.write_text("/a/b/f.txt", "x")
        workspace.write_text("/keep.txt", "k")
        with pytest.raises(IsADirectoryPathError, match=r"pass recursive=True"):
            workspace.rm("/a")
        assert workspace.read_text("/a/b/f.txt") == "x"
        workspace.rm("/a", recursive=True)
        assert not workspace.exists("/a")
        assert not workspace.exists("/a/b/f.txt")
        assert [e.path for e in workspace.ls("/")] == ["/keep.txt"]
        with pytest.raises(IsADirectoryPathError):
            workspace.rm("/", recursive=True)
        assert workspace.read_text("/keep.txt") == "k"

    # -- glob and grep --------------------------------------------------------------------------

    def test_glob_finds_files_at_every_depth_sorted_and_skips_hidden_ones(
        self, workspace: Workspace
    ) -> None:
        for path in ["/src/b.py", "/src/a.py", "/src/pkg/c.py", "/docs/x.md", "/.hidden.py"]:
            workspace.write_text(path, "")
        workspace.write_text("/.venv/lib/d.py", "")
        assert workspace.glob("*.py").paths == ("/src/a.py", "/src/b.py", "/src/pkg/c.py")
        assert workspace.glob("**/.*.py").paths == ("/.hidden.py",)
        assert workspace.glob(".venv/**").paths == ("/.venv/lib/d.py",)
        assert workspace.glob("pkg/*.py", "/src").paths == ("/src/pkg/c.py",)
        assert workspace.glob("*.py", "/src/a.py").paths == ("/src/a.py",)
        assert workspace.glob("*.rs").paths == ()
        capped = workspace.glob("**", limit=2)
        assert capped.paths == ("/docs/x.md", "/src/a.py") and capped.truncated

    def test_glob_and_grep_of_a_missing_path_or_with_a_bad_pattern_raise(
        self, workspace: Workspace
    ) -> None:
        workspace.write_text("/a.txt", "x\n")
        with pytest.raises(PathNotFoundError, match=r"^/missing: no such file or directory$"):
            workspace.glob("*", "/missing")
        with pytest.raises(PathNotFoundError):
            workspace.grep("x", "/missing")
        with pytest.raises(PatternError):
            workspace.glob("[z-a]")
        with pytest.raises(PatternError):
            workspace.grep("foo(")

    def test_glob_and_grep_on_an_empty_workspace_find_nothing(self, workspace: Workspace) -> None:
        assert workspace.glob("**").paths == ()
        assert workspace.grep("x").searched == 0

    def test_grep_searches_text_files_and_names_what_it_skipped(
        self, make_workspace: WorkspaceFactory
    ) -> None:
        workspace = make_workspace(limits=Limits(max_grep_file_bytes=100))
        workspace.write_text("/logs/a.log", "alpha\nmatch one\nbeta\nmatch two\n")
        workspace.write_text("/logs/b.log", "match here\n")
        workspace.write_text("/notes.md", "nothing\n")
        workspace.write_text("/.hidden", "match hidden\n")
        workspace.write_bytes("/blob.bin", b"match\x00\x01")
        workspace.write_text("/big.txt", "match\n" * 50)

        found = workspace.grep("match")
        assert [f.path for f in found.files] == ["/logs/a.log", "/logs/b.log"]
        assert found.skipped_binary == ("/blob.bin",)
        assert found.skipped_large == ("/big.txt",)
        assert found.searched == 4

        content = workspace.grep("match t", "/logs", output_mode="content")
        assert [(line.line_number, line.text) for line in content.files[0].lines] == [
            (4, "match two")
        ]
        counts = workspace.grep("match", output_mode="count")
        assert [(f.path, f.match_count) for f in counts.files] == [
            ("/logs/a.log", 2),
            ("/logs/b.log", 1),
        ]
        assert [f.path for f in workspace.grep("match", glob=".*").files] == ["/.hidden"]
        assert [f.path for f in workspace.grep("match", "/.hidden").files] == ["/.hidden"]

    def test_grep_reads_more_files_than_one_batch_in_order(self, workspace: Workspace) -> None:
        paths = [f"/many/d{n % 3}/f{n:03d}.txt" for n in range(70)]
        for n, path in enumerate(paths):
            workspace.write_text(path, f"line\nvalue {n}\n")
        found = workspace.grep(r"value \d*7$")
        assert [f.path for f in found.files] == sorted(p for p in paths if p.endswith("7.txt"))
        assert found.searched == 70

    def test_walk_reaches_deep_folders(self, workspace: Workspace) -> None:
        deep = "/" + "/".join(f"d{n}" for n in range(40))
        workspace.write_text(f"{deep}/bottom.txt", "found at the bottom\n")
        assert workspace.glob("bottom.txt").paths == (f"{deep}/bottom.txt",)
        assert workspace.grep("bottom").files[0].path == f"{deep}/bottom.txt"

    # -- the store under the workspace --------------------------------------------------------

    def test_the_store_walks_files_only(self, workspace: Workspace) -> None:
        workspace.write_text("/a/b/c.txt", "c")
        workspace.write_text("/a/d.txt", "dd")
        workspace.write_text("/e.txt", "")
        walked = sorted(workspace.store.walk("/a"), key=lambda info: info.path)
        assert walked == [FileInfo("/a/b/c.txt", "file", 1), FileInfo("/a/d.txt", "file", 2)]
        assert list(workspace.store.walk("/nowhere")) == []

    def test_the_store_fetches_in_order_and_skips_vanished_files(
        self, workspace: Workspace
    ) -> None:
        first = workspace.write_text("/b.txt", "bee")
        second = workspace.write_text("/a.txt", "ay")
        gone = FileInfo("/gone.txt", "file", 4)
        fetched = list(workspace.store.fetch([first, gone, second]))
        assert fetched == [(first, b"bee"), (second, b"ay")]

    def test_the_store_reads_through_a_stream(self, workspace: Workspace) -> None:
        workspace.write_bytes("/data.bin", bytes(range(256)) * 64)
        with workspace.store.open_read("/data.bin") as stream:
            assert stream.read(3) == b"\x00\x01\x02"
            assert len(stream.read()) == 256 * 64 - 3
        with pytest.raises(PathNotFoundError), workspace.store.open_read("/absent.bin"):
            pass

    def test_a_path_without_links_is_its_own_real_path(self, workspace: Workspace) -> None:
        workspace.write_text("/dir/f.txt", "x")
        assert workspace.store.real_path("/dir/f.txt") == "/dir/f.txt"
        assert workspace.store.real_path("/not/yet") == "/not/yet"
        assert workspace.store.real_path("/") == "/"
