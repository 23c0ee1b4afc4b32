"""Invariant 7, confinement: no agent-supplied path reaches outside the workspace root.

On local storage this is checked against the real disk: the workspace root is a folder next
to an "outside" folder holding a canary, and the root contains symbolic links (file and
directory, relative and absolute, dangling) that point out. Every generated path is thrown at
every operation; afterwards the outside must be byte-identical and every successful write must
have landed under the real root.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from fsspec.implementations.memory import MemoryFileSystem
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ctxfs import FileInfo, UnsafePathError, Workspace, WorkspaceError
from ctxfs.sandbox import host_path, normalize_path

SECRET = "SECRET-canary-content"
OUTSIDE_MARK = "<OUTSIDE>"  # replaced by the real host path of the outside folder

# Segments a path may be built from. Structural ones and the names of the links inside the root
# are accepted by the sandbox, so they reach the disk; the refused ones test the refusals.
WALKING = [
    "..",
    ".",
    "",
    "...",
    "....",
    "..a",
    "a..",
    "%2e%2e",
    "%2E%2E",
    "%2f",
    "..%2f..",
    "%00",
    "é",
    "文件",
    "🧪",
    "\u202e",
    "\ufeff",
    "n" * 255,
    "a",
    "new",
]
LINKS = [
    "abs_file",
    "rel_file",
    "abs_dir",
    "rel_dir",
    "dangling",
    "up",
    "self",
    "deep",
    "er",
    "link",
    "inside_link",
    "inside.txt",
    "canary",
    "outside",
    "sub",
    "c2",
    "root",
    OUTSIDE_MARK,
]
REFUSED = [
    "~",
    "~root",
    "s3:",
    "file:",
    "C:",
    "\\",
    "..\\..",
    "a\\..\\..",
    "\x00",
    "\n",
    "\x7f",
    "\ud800",
    "n" * 256,
    "文" * 86,
]
PREFIXES = ["", "/", "./", "//", "/./"]
REFUSED_PREFIXES = ["../", "~/", "s3://", "file://", "file:///", "memory://"]

segments = st.one_of(
    st.sampled_from(WALKING),
    st.sampled_from(LINKS),
    st.text(alphabet=".%2eE/\\", max_size=8),
    st.sampled_from(WALKING + LINKS),
    st.sampled_from(REFUSED),
    st.text(max_size=6),
)
paths = st.builds(
    lambda prefix, parts, tail: prefix + "/".join(parts) + tail,
    st.sampled_from(PREFIXES * 3 + REFUSED_PREFIXES),
    st.lists(segments, max_size=6),
    st.sampled_from(["", "/", "/.", "/.."]),
)


# -- the pure rule ---------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(raw=st.one_of(paths, st.text(max_size=40)))
def test_every_accepted_path_is_normal_and_idempotent(raw: str) -> None:
    try:
        virtual = normalize_path(raw)
    except UnsafePathError as exc:
        assert str(exc)  # refused, with a reason
        return
    assert virtual.startswith("/")
    assert "//" not in virtual
    assert virtual == "/" or not virtual.endswith("/")
    segments_ = virtual.split("/")[1:]
    assert ".." not in segments_ and "." not in segments_
    assert "\\" not in virtual and "\x00" not in virtual
    assert normalize_path(virtual) == virtual


# -- against the real disk ---------------------------------------------------------------------


@dataclass
class Sandbox:
    top: str
    root: str
    outside: str


@contextmanager
def disk_sandbox() -> Iterator[Sandbox]:
    top = os.path.realpath(tempfile.mkdtemp(prefix="ctxfs-confine-"))
    root, outside = os.path.join(top, "root"), os.path.join(top, "outside")
    try:
        os.makedirs(os.path.join(outside, "sub"))
        with open(os.path.join(outside, "canary"), "w") as handle:
            handle.write(SECRET)
        with open(os.path.join(outside, "sub", "c2"), "w") as handle:
            handle.write(SECRET + "-2")
        os.makedirs(os.path.join(root, "deep", "er"))
        with open(os.path.join(root, "deep", "inside.txt"), "w") as handle:
            handle.write("inside canary here\n")
        links = {
            "abs_file": os.path.join(outside, "canary"),
            "rel_file": "../outside/canary",
            "abs_dir": os.path.join(outside, "sub"),
            "rel_dir": "../outside/sub",
            "dangling": os.path.join(outside, "not-yet"),
            "up": "..",
            "self": ".",
            "inside_link": "deep/inside.txt",
            "deep/link": "../../outside",
            "deep/er/link": "../../../outside/sub/c2",
        }
        for name, target in links.items():
            os.symlink(target, os.path.join(root, name))
        yield Sandbox(top, root, outside)
    finally:
        shutil.rmtree(top)


def snapshot(folder: str) -> dict[str, Any]:
    """Everything under ``folder``, without following links: file bytes, link targets, dirs."""
    found: dict[str, Any] = {}
    for here, dirs, files in os.walk(folder, followlinks=False):
        for name in dirs + files:
            full = os.path.join(here, name)
            rel = os.path.relpath(full, folder)
            if os.path.islink(full):
                found[rel] = ("link", os.readlink(full))
            elif os.path.isdir(full):
                found[rel] = ("dir",)
            else:
                with open(full, "rb") as handle:
                    found[rel] = ("file", handle.read())
    return found


def attempts(ws: Workspace, path: str) -> list[tuple[str, Callable[[], Any]]]:
    return [
        ("write", lambda: ws.write_text(path, "PWNED")),
        ("create", lambda: ws.write_text(path, "PWNED", create_only=True)),
        ("read", lambda: ws.read_text(path)),
        ("read_bytes", lambda: ws.read_bytes(path)),
        ("read_lines", lambda: ws.read_lines(path)),
        ("ls", lambda: ws.ls(path)),
        ("info", lambda: ws.info(path)),
        ("exists", lambda: ws.exists(path)),
        ("edit", lambda: ws.edit(path, "canary", "PWNED", replace_all=True)),
        ("rm", lambda: ws.rm(path)),
        ("rm_recursive", lambda: ws.rm(path, recursive=True)),
    ]


def assert_result_stays_inside(name: str, result: Any) -> None:
    text = repr(result)
    assert SECRET not in text, f"{name} returned content from outside the root: {text[:200]}"


def assert_listing_stays_inside(entries: list[FileInfo], root: str) -> None:
    real_root = os.path.realpath(root)
    for entry in entries:
        host = os.path.realpath(host_path(root, entry.path))
        assert host == real_root or host.startswith(real_root + os.sep), (entry, host)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(raw_paths=st.lists(paths, min_size=1, max_size=4))
def test_no_path_reads_or_writes_outside_the_local_root(raw_paths: list[str]) -> None:
    with disk_sandbox() as box:
        before_outside = snapshot(box.outside)
        ws = Workspace(box.root)
        real_root = os.path.realpath(box.root)
        for raw in raw_paths:
            path = raw.replace(OUTSIDE_MARK, box.outside)
            for name, call in attempts(ws, path):
                try:
                    result = call()
                except WorkspaceError as exc:
                    event(f"{name}: {type(exc).__name__}")
                    continue
                event(f"{name}: ok")
                assert_result_stays_inside(name, result)
                if name == "ls":
                    assert_listing_stays_inside(result, box.root)
                if name in ("write", "create", "edit"):
                    host = os.path.realpath(host_path(box.root, normalize_path(path)))
                    assert host.startswith(real_root + os.sep), (path, host)
                    assert os.path.isfile(host)
        assert snapshot(box.outside) == before_outside
        assert sorted(os.listdir(box.top)) == ["outside", "root"]


@settings(max_examples=200, deadline=None)
@given(raw_paths=st.lists(paths, min_size=1, max_size=4))
def test_no_path_reads_or_writes_outside_the_root_of_a_shared_memory_filesystem(
    raw_paths: list[str],
) -> None:
    fs = MemoryFileSystem(global_store=False, skip_instance_cache=True)
    fs.pipe_file("/outside/canary", SECRET.encode())
    fs.pipe_file("/rootx/c2", SECRET.encode())  # a sibling whose name extends the root's
    fs.pipe_file("/root/deep/inside.txt", b"inside canary\n")
    ws = Workspace(fs, root="/root")
    for raw in raw_paths:
        for name, call in attempts(ws, raw.replace(OUTSIDE_MARK, "/outside")):
            try:
                result = call()
            except WorkspaceError:
                continue
            assert_result_stays_inside(name, result)
    outside = {k: v.getvalue() for k, v in fs.store.items() if not k.startswith("/root/")}
    assert outside == {"/outside/canary": SECRET.encode(), "/rootx/c2": SECRET.encode()}
    assert all(d == "/root" or d.startswith("/root/") for d in fs.pseudo_dirs if d)


# -- symlinks inside the root, example by example ------------------------------------------------


def test_links_leading_outside_are_refused_and_hidden_from_ls() -> None:
    with disk_sandbox() as box:
        ws = Workspace(box.root)
        listed = {e.name: e for e in ws.ls("/")}
        assert set(listed) == {"deep", "inside_link", "self"}
        for path in [
            "abs_file",
            "rel_file",
            "abs_dir/c2",
            "rel_dir/c2",
            "dangling",
            "up",
            "deep/link/canary",
            "deep/er/link",
            "self/up/outside/canary",
        ]:
            with pytest.raises(UnsafePathError, match=r"symbolic link that leads outside"):
                ws.read_text(path)
            with pytest.raises(UnsafePathError, match=r"symbolic link that leads outside"):
                ws.write_text(path, "PWNED")
        assert not os.path.exists(os.path.join(box.outside, "not-yet"))


def test_links_that_stay_inside_work_and_are_typed_like_their_target() -> None:
    with disk_sandbox() as box:
        ws = Workspace(box.root)
        assert ws.read_text("/inside_link") == "inside canary here\n"
        assert ws.read_text("/self/deep/inside.txt") == "inside canary here\n"
        listed = {e.name: e for e in ws.ls("/")}
        assert listed["self"].is_dir, "a link to a folder is listed as a folder"
        assert ws.info("/self").is_dir
        assert listed["inside_link"].type == "file"
        assert listed["deep"].is_dir
