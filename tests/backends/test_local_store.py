"""The local store on a real disk: depth, links, special files, and where paths really lead."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ctxfs import FileInfo, PathNotFoundError, UnsafePathError, Workspace
from ctxfs.backends import LocalStore
from ctxfs.sandbox import Limits

DEPTH = 1_000


def test_a_tree_a_thousand_folders_deep_works_end_to_end(tmp_path: Path) -> None:
    # Deeper than Python's recursion limit: every walk, mkdir and delete must be a loop.
    workspace = Workspace(tmp_path / "ws")
    deep = "/" + "/".join("d" for _ in range(DEPTH))
    workspace.write_text(f"{deep}/bottom.txt", "needle at the bottom\n")
    workspace.write_text("/top.txt", "needle at the top\n")

    assert workspace.info(f"{deep}/bottom.txt").size == len("needle at the bottom\n")
    assert workspace.ls(deep) == [FileInfo(f"{deep}/bottom.txt", "file", 21)]
    assert workspace.glob("*.txt").paths == (f"{deep}/bottom.txt", "/top.txt")
    found = workspace.grep("needle", output_mode="content")
    assert [f.path for f in found.files] == [f"{deep}/bottom.txt", "/top.txt"]
    assert workspace.read_lines(f"{deep}/bottom.txt").lines == ("needle at the bottom",)

    workspace.rm("/d", recursive=True)
    assert [e.path for e in workspace.ls("/")] == ["/top.txt"]
    assert os.listdir(tmp_path / "ws") == ["top.txt"]


@pytest.fixture
def linked(tmp_path: Path) -> Workspace:
    """A workspace whose root holds links of every kind, next to an outside folder."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("needle outside\n")
    workspace = Workspace(root)
    workspace.write_text("/docs/a.txt", "needle in a\n")
    (root / "file_link.txt").symlink_to(root / "docs" / "a.txt")
    (root / "folder_link").symlink_to(root / "docs")
    (root / "loop").symlink_to(root)
    (root / "out_file.txt").symlink_to(outside / "secret.txt")
    (root / "out_folder").symlink_to(outside)
    (root / "dangling.txt").symlink_to(root / "not-there.txt")
    os.mkfifo(root / "pipe.txt")
    return workspace


def test_ls_types_links_by_their_target_and_hides_what_is_not_a_workspace_file(
    linked: Workspace,
) -> None:
    assert linked.ls("/") == [
        FileInfo("/docs", "directory"),
        FileInfo("/file_link.txt", "file", len("needle in a\n")),
        FileInfo("/folder_link", "directory"),
        FileInfo("/loop", "directory"),
    ]


def test_walk_follows_file_links_inside_but_never_folder_links_or_special_files(
    linked: Workspace,
) -> None:
    # A FIFO read by grep would block the agent; a link loop would never end.
    assert linked.glob("*.txt").paths == ("/docs/a.txt", "/file_link.txt")
    found = linked.grep("needle")
    assert [f.path for f in found.files] == ["/docs/a.txt", "/file_link.txt"]
    assert linked.glob("*.txt", "/folder_link").paths == ("/folder_link/a.txt",)


def test_a_fifo_is_refused_at_once_instead_of_blocking_a_read(linked: Workspace) -> None:
    for read in [linked.read_text, linked.read_lines, linked.read_bytes]:
        with pytest.raises(PathNotFoundError, match=r"^/pipe.txt: not a regular file or folder"):
            read("/pipe.txt")
    assert not linked.exists("/pipe.txt")
    with pytest.raises(PathNotFoundError):
        linked.grep("needle", "/pipe.txt")


def test_real_path_follows_links_and_refuses_the_ones_that_leave(linked: Workspace) -> None:
    store = linked.store
    assert store.real_path("/file_link.txt") == "/docs/a.txt"
    assert store.real_path("/loop/loop/docs") == "/docs"
    assert store.real_path("/folder_link/new.txt") == "/docs/new.txt"
    for path in ["/out_file.txt", "/out_folder/secret.txt"]:
        with pytest.raises(UnsafePathError, match=r"symbolic link that leads outside"):
            store.real_path(path)


def test_rm_of_a_link_removes_the_link_not_what_it_points_to(
    linked: Workspace, tmp_path: Path
) -> None:
    linked.rm("/folder_link", recursive=True)
    linked.rm("/file_link.txt")
    assert linked.read_text("/docs/a.txt") == "needle in a\n"
    assert not (tmp_path / "root" / "folder_link").is_symlink()
    assert not (tmp_path / "root" / "file_link.txt").is_symlink()


def test_the_store_names_its_folder_for_display(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "ws")
    assert store.url == str(tmp_path / "ws")
    assert store.local_path("/") == str(tmp_path / "ws")
    assert store.local_path("/a/b.txt") == str(tmp_path / "ws" / "a" / "b.txt")
    assert repr(store) == f"LocalStore({str(tmp_path / 'ws')!r})"


@pytest.mark.parametrize("size", [0, 1, 5_000, 1 << 18, (1 << 18) + 3])
@pytest.mark.parametrize("told", ["exact", "smaller", "larger", "zero"])
def test_a_read_returns_the_whole_file_whatever_size_it_was_told(
    tmp_path: Path, size: int, told: str
) -> None:
    """A read asks for the size the file had when opened, plus one byte: a file that grew
    or shrank since (a stale size) is still read to its very end, and no further."""
    from ctxfs.backends._local import _read_all

    data = bytes(n % 251 for n in range(size))
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    stale = {"exact": size, "smaller": size // 2, "larger": size + 4096, "zero": 0}[told]
    handle = os.open(path, os.O_RDONLY)
    assert _read_all((handle, stale)) == data
    with pytest.raises(OSError):
        os.fstat(handle)  # closed


def test_grep_and_walk_list_files_links_and_folders_as_before(tmp_path: Path) -> None:
    """The one-pass listing: files with their sizes, folders walked, links to files inside
    listed by their own path, temporary files and links out left out."""
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "one.txt").write_text("needle one\n")
    (root / "a" / "b" / "two.txt").write_text("two needle\n")
    (root / "a" / f".ctxfs-{'0' * 32}.tmp").write_text("needle in a temporary file\n")
    (root / "a" / "link.txt").symlink_to(root / "a" / "one.txt")
    (tmp_path / "outside.txt").write_text("needle outside\n")
    (root / "a" / "out.txt").symlink_to(tmp_path / "outside.txt")
    ws = Workspace(root)
    walked = {info.path: info.size for info in ws.store.walk("/")}
    assert walked == {"/a/one.txt": 11, "/a/b/two.txt": 11, "/a/link.txt": 11}
    listed = {(info.path, info.type) for info in ws.ls("/a")}
    assert listed == {
        ("/a/one.txt", "file"),
        ("/a/b", "directory"),
        ("/a/link.txt", "file"),
    }
    found = ws.grep("needle", "/", fixed_strings=True)
    assert [f.path for f in found.files] == ["/a/b/two.txt", "/a/link.txt", "/a/one.txt"]


def test_a_walk_without_sizes_leaves_them_to_the_read_which_skips_files_over_its_cap(
    tmp_path: Path,
) -> None:
    """grep lists local files without their sizes (a call per file saved) and learns each
    size as it opens the file: a file over the cap is described with its size and not read,
    one that grew past the cap since it was listed included."""
    root = tmp_path / "root"
    (root / "d").mkdir(parents=True)
    (root / "d" / "small.txt").write_text("needle\n")
    (root / "d" / "large.txt").write_text("needle " * 100)
    (root / "link.txt").symlink_to(root / "d" / "small.txt")
    store = LocalStore(root)
    unsized = sorted(store.walk("/", sizes=False), key=lambda info: info.path)
    assert [(i.path, i.size) for i in unsized] == [
        ("/d/large.txt", None),
        ("/d/small.txt", None),
        ("/link.txt", 7),  # a link is described by its target, as before
    ]
    (root / "d" / "small.txt").write_text("needle, and grown since the listing\n")
    read = {info.path: (info.size, data) for info, data in store.fetch_within(unsized, 100)}
    assert read == {
        "/d/large.txt": (700, None),
        "/d/small.txt": (36, b"needle, and grown since the listing\n"),
        "/link.txt": (7, b"needle, and grown since the listing\n"),
    }
    # fetch reads every file, and describes one listed without its size with the size read
    assert [(i, d) for i, d in store.fetch(unsized[:1])] == [
        (FileInfo("/d/large.txt", "file", 700), b"needle " * 100)
    ]
    ws = Workspace(root, limits=Limits(max_grep_file_bytes=100))
    found = ws.grep("needle", "/", fixed_strings=True)
    assert [f.path for f in found.files] == ["/d/small.txt", "/link.txt"]
    assert found.skipped_large == ("/d/large.txt",)
    assert found.searched == 2
