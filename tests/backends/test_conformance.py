"""One conformance suite for the Workspace, run on memory, local disk and S3 (moto over HTTP).

Every test that takes ``workspace`` or ``make_workspace`` runs once per backend; the few that
are about one backend only (atomic rename on local disk, a dead S3 endpoint, a real
permission failure, private memory stores) say so in their names.
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import shutil
import signal
import socket
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxfs import FileInfo, Limits, Workspace, WorkspaceError
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

WorkspaceFactory = Callable[..., Workspace]

# -- ls -----------------------------------------------------------------------------------


def test_ls_lists_direct_children_sorted_with_directories_typed(workspace: Workspace) -> None:
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


def test_ls_of_a_missing_directory_or_of_a_file_raises(workspace: Workspace) -> None:
    workspace.write_text("/notes.md", "x")
    with pytest.raises(PathNotFoundError, match=r"/absent: no such file or directory"):
        workspace.ls("/absent")
    with pytest.raises(NotADirectoryPathError, match=r"/notes.md is a file, not a directory"):
        workspace.ls("/notes.md")


# -- info / exists --------------------------------------------------------------------------


def test_info_of_files_directories_and_the_root(workspace: Workspace) -> None:
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
    workspace: Workspace,
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


def _dead_endpoint() -> str:
    """An http URL on loopback where nothing listens (the port was free a moment ago)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    return f"http://127.0.0.1:{port}"


def test_s3_dead_endpoint_raises_backend_error_never_missing() -> None:
    workspace = Workspace(
        "s3://ctxfs-test/ws",
        storage_options={
            "endpoint_url": _dead_endpoint(),
            "key": "testing",
            "secret": "testing",
            "client_kwargs": {"region_name": "us-east-1"},
            "config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 1},
        },
    )
    with pytest.raises(BackendError, match=r"could not be reached"):
        workspace.exists("/notes.md")
    with pytest.raises(BackendError):
        workspace.info("/notes.md")
    with pytest.raises(BackendError):
        workspace.ls("/")
    with pytest.raises(BackendError):
        workspace.read_text("/notes.md")
    with pytest.raises(BackendError) as caught:
        workspace.write_text("/notes.md", "x")
    assert not isinstance(caught.value, PathNotFoundError)


NOBODY = 65534


@contextlib.contextmanager
def _unprivileged() -> Iterator[None]:
    """Run the block without root's override of file permissions.

    Root's CAP_DAC_OVERRIDE ignores chmod, so as root the block runs with the effective uid of
    "nobody": the kernel then refuses with a real EACCES, nothing is simulated.
    """
    if os.geteuid() != 0:
        yield
        return
    os.seteuid(NOBODY)
    try:
        yield
    finally:
        os.seteuid(0)


def test_local_permission_denied_raises_backend_error_never_missing() -> None:
    top = tempfile.mkdtemp(prefix="ctxfs-perm-")
    try:
        os.chmod(top, 0o755)
        workspace = Workspace(os.path.join(top, "ws"))
        workspace.write_text("/locked/secret.txt", "secret")
        workspace.write_text("/open.txt", "open")
        os.chmod(workspace.url, 0o755)
        os.chmod(os.path.join(workspace.url, "locked"), 0o700)
        with _unprivileged():
            assert workspace.exists("/open.txt")
            assert not workspace.exists("/absent.txt")
            assert workspace.exists("/locked")
            with pytest.raises(BackendError, match=r"refused access"):
                workspace.exists("/locked/secret.txt")
            with pytest.raises(BackendError):
                workspace.info("/locked/secret.txt")
            with pytest.raises(BackendError):
                workspace.ls("/locked")
            with pytest.raises(BackendError):
                workspace.read_text("/locked/secret.txt")
        assert workspace.read_text("/locked/secret.txt") == "secret"
    finally:
        for folder, dirs, _files in os.walk(top):
            for name in dirs:
                os.chmod(os.path.join(folder, name), 0o755)
        shutil.rmtree(top)


# -- reading ------------------------------------------------------------------------------


def test_read_text_and_read_bytes(workspace: Workspace) -> None:
    workspace.write_text("/a.txt", "héllo\nworld\n")
    assert workspace.read_text("/a.txt") == "héllo\nworld\n"
    assert workspace.read_bytes("/a.txt") == "héllo\nworld\n".encode()
    workspace.write_bytes("/empty.txt", b"")
    assert workspace.read_text("/empty.txt") == ""
    assert workspace.read_bytes("/empty.txt") == b""


def test_a_missing_path_is_path_not_found_and_file_not_found(workspace: Workspace) -> None:
    for op in ["read_text", "read_bytes", "read_lines", "info", "rm"]:
        with pytest.raises(
            PathNotFoundError, match=r"^/no/such\.txt: no such file or directory$"
        ) as caught:
            getattr(workspace, op)("/no/such.txt")
        assert isinstance(caught.value, FileNotFoundError), op
    with pytest.raises(PathNotFoundError):
        workspace.edit("/ghost.txt", "a", "b")
    assert workspace.ls("/") == []


def test_a_directory_given_as_a_file_is_refused_and_kept(workspace: Workspace) -> None:
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


def test_binary_or_invalid_utf8_is_not_text_and_left_intact(workspace: Workspace) -> None:
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


# -- read_lines -----------------------------------------------------------------------------


def test_read_lines_pages_with_offset_and_limit(workspace: Workspace) -> None:
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


def test_read_lines_line_endings_and_empty_file(workspace: Workspace) -> None:
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


def test_read_lines_obeys_the_configured_limits(make_workspace: WorkspaceFactory) -> None:
    full = make_workspace()
    full.write_text("/clip.txt", "short\n" + "é" * 12 + "\n12345\r\n123456\n")
    full.write_text("/f.txt", "aaaa\nbbbb\ncccc\ndddd\n")
    root = _root_of(full)

    clipping = Workspace(full.fs, root=root, limits=Limits(max_line_chars=5))
    page = clipping.read_lines("/clip.txt")
    assert page.lines == ("short", "ééééé", "12345", "12345")
    assert page.clipped == ((1, 12), (3, 6))

    three = Workspace(full.fs, root=root, limits=Limits(default_read_lines=3))
    page = three.read_lines("/f.txt")
    assert page.lines == ("aaaa", "bbbb", "cccc")
    assert page.next_offset == 3
    assert three.read_lines("/f.txt", limit=4).lines[-1] == "dddd"

    workspace = Workspace(full.fs, root=root, limits=Limits(max_read_chars=12))
    page = workspace.read_lines("/f.txt")
    assert page.lines == ("aaaa", "bbbb")
    assert page.stopped_by_chars
    assert page.next_offset == 2
    # The first line of a page always comes back, even if it alone is over the cap.
    workspace.write_text("/long.txt", "x" * 50 + "\ny\n")
    page = workspace.read_lines("/long.txt")
    assert page.lines == ("x" * 50,)
    assert page.next_offset == 1


# -- writing --------------------------------------------------------------------------------


def test_write_creates_missing_parents_and_overwrites(workspace: Workspace) -> None:
    info = workspace.write_text("/a/b/c/d.txt", "deep")
    assert info == FileInfo("/a/b/c/d.txt", "file", 4)
    assert workspace.info("/a/b/c").is_dir
    assert workspace.read_text("a/b/c/d.txt") == "deep"
    workspace.write_text("/f.txt", "a much longer first version\n")
    workspace.write_text("/f.txt", "short")
    assert workspace.read_text("/f.txt") == "short"
    assert workspace.info("/f.txt").size == 5


def test_create_only_refuses_an_existing_file_and_keeps_its_content(
    workspace: Workspace,
) -> None:
    assert workspace.write_text("/once.txt", "first", create_only=True).size == 5
    with pytest.raises(PathExistsError, match=r"^/once.txt already exists and is write-once$"):
        workspace.write_text("/once.txt", "second", create_only=True)
    with pytest.raises(FileExistsError):
        workspace.write_bytes("/once.txt", b"third", create_only=True)
    assert workspace.read_text("/once.txt") == "first"


def test_writing_below_a_file_is_refused_and_writes_nothing(workspace: Workspace) -> None:
    workspace.write_text("/report.md", "report")
    with pytest.raises(NotADirectoryPathError, match=r"/report.md is a file"):
        workspace.write_text("/report.md/child.txt", "x")
    with pytest.raises(NotADirectoryPathError):
        workspace.write_text("/report.md/deeper/child.txt", "x")
    assert workspace.ls("/") == [FileInfo("/report.md", "file", 6)]
    assert workspace.read_text("/report.md") == "report"


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


def test_write_bytes_and_write_text_round_trip_byte_exact(workspace: Workspace) -> None:
    for name, data in BYTES_PAYLOADS.items():
        assert workspace.write_bytes(f"/bin/{name}", data).size == len(data)
        assert workspace.read_bytes(f"/bin/{name}") == data, name
        assert workspace.info(f"/bin/{name}").size == len(data)
    for name, text in TEXT_PAYLOADS.items():
        workspace.write_text(f"/txt/{name}.txt", text)
        assert workspace.read_text(f"/txt/{name}.txt") == text, name
        assert workspace.read_bytes(f"/txt/{name}.txt") == text.encode("utf-8")


UNUSUAL_NAMES = [
    "/" + "文" * 85,  # 255 bytes: the longest name the sandbox accepts
    "/" + "x" * 255,
    "/dir with spaces/report..final.md",
    "/[...slug]/page.tsx",
    "/%2e%2e/a+b?c=d#e.txt",
    "/.../....",
]


def test_unusual_but_legal_names_round_trip(workspace: Workspace) -> None:
    for path in UNUSUAL_NAMES:
        workspace.write_text(path, path)
        assert workspace.read_text(path) == path
        assert path in [e.path for e in workspace.ls(path.rsplit("/", 1)[0] or "/")]


def test_local_write_is_atomic_and_leaves_no_temp_files(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws")
    workspace.write_text("/a/f.txt", "one")
    workspace.write_text("/a/f.txt", "two")
    workspace.write_text("/a/g.txt", "three", create_only=True)
    with pytest.raises(PathExistsError):
        workspace.write_text("/a/g.txt", "four", create_only=True)
    assert sorted(os.listdir(tmp_path / "ws" / "a")) == ["f.txt", "g.txt"]
    assert (tmp_path / "ws" / "a" / "f.txt").read_text() == "two"


def test_local_write_failure_keeps_the_old_content(tmp_path: Path) -> None:
    # A real failure from the kernel: RLIMIT_FSIZE makes writes past 1 KiB fail with EFBIG.
    workspace = Workspace(tmp_path / "ws")
    workspace.write_text("/f.txt", "old content")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, hard))
        with pytest.raises(BackendError) as caught:
            workspace.write_text("/f.txt", "new " * 10_000)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)
    assert isinstance(caught.value.__cause__, OSError)
    assert caught.value.__cause__.errno == errno.EFBIG
    assert workspace.read_text("/f.txt") == "old content"
    assert os.listdir(tmp_path / "ws") == ["f.txt"]


# -- edit -----------------------------------------------------------------------------------


def test_edit_replaces_a_unique_match_or_all_with_a_count(workspace: Workspace) -> None:
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


def test_edit_refusals_change_nothing(workspace: Workspace) -> None:
    original = "def f():\n    return 1\n\nx = 1\ny = 1\n"
    workspace.write_text("/code.py", original)
    with pytest.raises(EditError, match=r"old_string was not found in /code.py; read the file"):
        workspace.edit("/code.py", "return 3", "return 4")
    with pytest.raises(EditError, match=r"old_string occurs 3 times in /code.py; .*replace_all"):
        workspace.edit("/code.py", " 1", " 2")
    with pytest.raises(EditError, match=r"old_string is empty"):
        workspace.edit("/code.py", "", "x")
    with pytest.raises(EditError, match=r"identical"):
        workspace.edit("/code.py", "return", "return")
    assert workspace.read_text("/code.py") == original


# -- rm -------------------------------------------------------------------------------------


def test_rm_deletes_files_and_directories_only_when_recursive(workspace: Workspace) -> None:
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


# -- read-only areas ------------------------------------------------------------------------


def _seed_results(workspace: Workspace) -> None:
    workspace.write_text("/tool_results/t1/call_1.txt", "full output\n")
    workspace.write_text("/notes.md", "mine\n")


def _assert_area_refuses_changes(workspace: Workspace) -> None:
    for path in ["/tool_results/t1/call_1.txt", "/tool_results/new.txt", "tool_results/x/../y"]:
        with pytest.raises(ReadOnlyPathError, match=r"is in the read-only area /tool_results/"):
            workspace.write_text(path, "overwritten")
    with pytest.raises(ReadOnlyPathError):
        workspace.write_bytes("/tool_results/t1/call_1.txt", b"x", create_only=True)
    with pytest.raises(ReadOnlyPathError):
        workspace.edit("/tool_results/t1/call_1.txt", "full", "partial")
    with pytest.raises(ReadOnlyPathError):
        workspace.rm("/tool_results/t1/call_1.txt")
    with pytest.raises(ReadOnlyPathError):
        workspace.rm("/tool_results", recursive=True)
    with pytest.raises(PermissionError):
        workspace.rm("/tool_results/t1", recursive=True)
    # Reads stay allowed, and a look-alike name is not part of the area.
    assert workspace.read_text("/tool_results/t1/call_1.txt") == "full output\n"
    assert workspace.read_lines("/tool_results/t1/call_1.txt").lines == ("full output",)
    assert [e.path for e in workspace.ls("/tool_results")] == ["/tool_results/t1"]
    assert workspace.exists("/tool_results/t1/call_1.txt")
    workspace.write_text("/tool_results_mine.txt", "allowed")
    workspace.edit("/notes.md", "mine", "still mine")


def test_read_only_areas_given_at_construction_refuse_the_first_write(
    make_workspace: WorkspaceFactory,
) -> None:
    workspace = make_workspace(read_only=["/tool_results/", "transcripts"])
    assert workspace.read_only == ("/tool_results", "/transcripts")
    with pytest.raises(ReadOnlyPathError):
        workspace.write_text("/tool_results/t1/call_1.txt", "x")
    with pytest.raises(ReadOnlyPathError):
        workspace.write_text("/transcripts/seg.jsonl", "x", create_only=True)
    assert workspace.ls("/") == []


def test_read_only_view_refuses_changes_but_the_original_can_write(
    workspace: Workspace,
) -> None:
    _seed_results(workspace)
    view = workspace.view(read_only=["tool_results"])
    assert view.read_only == ("/tool_results",)
    assert workspace.read_only == ()

    _assert_area_refuses_changes(view)
    assert view.read_text("/tool_results/t1/call_1.txt") == "full output\n"

    workspace.write_text("/tool_results/t1/call_2.txt", "written by the SDK")
    assert view.read_text("/tool_results/t1/call_2.txt") == "written by the SDK"
    assert view.read_text("/tool_results_mine.txt") == "allowed"


def test_read_only_constructor_argument_refuses_like_a_view(
    make_workspace: WorkspaceFactory,
) -> None:
    full = make_workspace()
    _seed_results(full)
    restricted = Workspace(full.fs, root=_root_of(full), read_only=["/tool_results"])
    _assert_area_refuses_changes(restricted)
    assert full.read_text("/tool_results/t1/call_1.txt") == "full output\n"


def _root_of(workspace: Workspace) -> str:
    return workspace._storage.root


def test_a_parent_folder_holding_a_read_only_area_cannot_be_deleted(
    workspace: Workspace,
) -> None:
    workspace.write_text("/sdk/tool_results/r.txt", "kept")
    view = workspace.view(read_only=["/sdk/tool_results"])
    with pytest.raises(ReadOnlyPathError, match=r"/sdk contains a read-only area"):
        view.rm("/sdk", recursive=True)
    assert view.read_text("/sdk/tool_results/r.txt") == "kept"
    view = workspace.view(read_only=["/a"]).view(read_only=["/b"])
    assert view.read_only == ("/a", "/b")
    for path in ["/a/x", "/b/x"]:
        with pytest.raises(ReadOnlyPathError):
            view.write_text(path, "x")
    view.write_text("/c/x", "x")


# -- the sandbox in front of every backend ---------------------------------------------------


UNSAFE = ["../escape.txt", "/a/../../escape.txt", "~/x", "s3://bucket/x", "a\\b", "a\x00b"]


def _every_operation(workspace: Workspace, path: str) -> list[Callable[[], Any]]:
    return [
        lambda: workspace.read_text(path),
        lambda: workspace.read_lines(path),
        lambda: workspace.write_text(path, "x"),
        lambda: workspace.ls(path),
        lambda: workspace.exists(path),
        lambda: workspace.info(path),
        lambda: workspace.edit(path, "a", "b"),
        lambda: workspace.rm(path),
    ]


def test_unsafe_paths_are_refused_on_every_operation(workspace: Workspace) -> None:
    for path in UNSAFE:
        for call in _every_operation(workspace, path):
            with pytest.raises(UnsafePathError):
                call()
    with pytest.raises(WorkspaceError):
        workspace.read_text("/missing")
    assert workspace.ls("/") == []


# -- isolation ------------------------------------------------------------------------------


def test_two_memory_workspaces_with_the_same_url_never_share_files() -> None:
    first = Workspace("memory://shared-name")
    second = Workspace("memory://shared-name")
    other = Workspace("memory://")
    first.write_text("/secret.txt", "first's")
    assert not second.exists("/secret.txt")
    assert second.ls("/") == []
    assert other.ls("/") == []
    second.write_text("/secret.txt", "second's")
    assert first.read_text("/secret.txt") == "first's"
    assert first.fs is not second.fs


def test_memory_workspaces_sharing_a_filesystem_object_share_files() -> None:
    first = Workspace("memory://ws")
    second = Workspace(first.fs, root="/ws")
    first.write_text("/f.txt", "shared")
    assert second.read_text("/f.txt") == "shared"


def test_a_symlink_inside_the_root_does_not_open_a_read_only_area(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws", read_only=["/tool_results"])
    full = Workspace(tmp_path / "ws")
    full.write_text("/tool_results/t/c.txt", "precious")
    (tmp_path / "ws" / "notes").symlink_to(tmp_path / "ws" / "tool_results" / "t")
    with pytest.raises(
        ReadOnlyPathError, match=r"/notes/c.txt \(a link to /tool_results/t/c.txt\)"
    ):
        ws.write_text("/notes/c.txt", "overwritten")
    with pytest.raises(ReadOnlyPathError):
        ws.edit("/notes/c.txt", "precious", "x")
    with pytest.raises(ReadOnlyPathError):
        ws.write_text("/notes/new.txt", "x")  # a new file in the area, through the link
    assert full.read_text("/tool_results/t/c.txt") == "precious"
    assert ws.read_text("/notes/c.txt") == "precious"  # reading through it is fine


def test_exists_is_false_under_a_file_on_every_backend(workspace: Workspace) -> None:
    workspace.write_text("/a.txt", "x")
    assert workspace.exists("/a.txt/b") is False
