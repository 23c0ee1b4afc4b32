"""Local-disk races: a folder swapped for a link while an operation runs cannot take it out.

The store walks relative to folder descriptors (:mod:`ctxfs.backends._descriptors`); these
tests swap a folder for a link to an outside folder at the worst moments, deterministically,
through hooks: between the workspace's confinement check and the store's work, and inside the
walk, between looking at a folder and opening it. Whatever is swapped, nothing outside the
root is read, written or deleted.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from ctxfs import UnsafePathError, Workspace, WorkspaceError
from ctxfs.backends import LocalStore, _descriptors
from ctxfs.sandbox import real_virtual_path

SECRET = "SECRET outside the root"


@dataclass
class Box:
    top: str
    root: str
    outside: str

    def swap(self, folder: str) -> None:
        """Replace folder ``folder`` (relative to the root) with a link to the outside."""
        host = os.path.join(self.root, folder)
        os.rename(host, host + ".moved")
        os.symlink(self.outside, host)


@contextmanager
def box() -> Iterator[Box]:
    top = os.path.realpath(tempfile.mkdtemp(prefix="ctxfs-race-"))
    root, outside = os.path.join(top, "root"), os.path.join(top, "outside")
    try:
        os.makedirs(os.path.join(outside, "deeper"))
        for name in ("a.txt", "deeper/a.txt"):
            with open(os.path.join(outside, name), "w") as handle:
                handle.write(SECRET)
        os.makedirs(os.path.join(root, "sub", "deeper"))
        for name in ("a.txt", "deeper/a.txt"):
            with open(os.path.join(root, "sub", name), "w") as handle:
                handle.write("inside\n")
        yield Box(top, root, outside)
    finally:
        shutil.rmtree(top)


def outside_state(folder: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for here, dirs, files in os.walk(folder, followlinks=False):
        for name in dirs + files:
            full = os.path.join(here, name)
            if os.path.isfile(full) and not os.path.islink(full):
                with open(full, "rb") as handle:
                    found[os.path.relpath(full, folder)] = handle.read()
            else:
                found[os.path.relpath(full, folder)] = "dir"
    return found


def operations(ws: Workspace, path: str) -> list[tuple[str, Callable[[], Any]]]:
    return [
        ("write", lambda: ws.write_text(path, "PWNED")),
        ("create", lambda: ws.write_text(path + ".new", "PWNED", create_only=True)),
        ("edit", lambda: ws.edit(path, "inside", "PWNED")),
        ("read", lambda: ws.read_text(path)),
        ("read_lines", lambda: ws.read_lines(path)),
        ("info", lambda: ws.info(path)),
        ("ls", lambda: ws.ls(path.rsplit("/", 1)[0])),
        ("grep", lambda: ws.grep("SECRET", path.rsplit("/", 1)[0])),
        ("rm", lambda: ws.rm(path)),
        ("rm_folder", lambda: ws.rm(path.rsplit("/", 1)[0], recursive=True)),
    ]


def assert_stays_inside(result: Any) -> None:
    assert SECRET not in repr(result)


@pytest.mark.parametrize("path", ["/sub/a.txt", "/sub/deeper/a.txt"])
def test_a_folder_swapped_after_the_workspace_check_is_refused(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The workspace checks where a path leads (real_path), then the store works on it: the
    # swap comes exactly in between.
    for name, _ in operations(Workspace(tempfile.gettempdir(), check=False), path):
        with box() as b:
            before = outside_state(b.outside)
            ws = Workspace(b.root)

            def check_then_swap(
                store: LocalStore, virtual: str, checked: Any = LocalStore.real_path
            ) -> str:
                answer = checked(store, virtual)
                if not os.path.islink(os.path.join(b.root, "sub")):
                    b.swap("sub")
                return answer

            monkeypatch.setattr(LocalStore, "real_path", check_then_swap)
            call = dict(operations(ws, path))[name]
            try:
                assert_stays_inside(call())
            except UnsafePathError:
                pass
            except WorkspaceError as exc:  # e.g. nothing there once swapped; never outside
                event(type(exc).__name__)
            monkeypatch.undo()
            assert outside_state(b.outside) == before, name
            assert sorted(os.listdir(b.top)) == ["outside", "root"]


def test_a_folder_swapped_between_its_lstat_and_its_open_is_looked_at_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with box() as b:
        before = outside_state(b.outside)
        store = LocalStore(b.root)
        look = _descriptors.lstat_at
        seen: list[str] = []

        def look_then_swap(name: str, folder: int) -> os.stat_result:
            found = look(name, folder)
            seen.append(name)
            if name == "sub" and not os.path.islink(os.path.join(b.root, "sub")):
                b.swap("sub")  # after the walk saw a folder, before it opens it
            return found

        monkeypatch.setattr(_descriptors, "lstat_at", look_then_swap)
        with pytest.raises(UnsafePathError, match="leads outside the workspace"):
            store.write("/sub/a.txt", b"PWNED")
        assert seen.count("sub") == 2  # looked at again, and seen to be a link
        assert outside_state(b.outside) == before


# -- generated trees and paths ----------------------------------------------------------------

NAMES = ["a", "b", "c"]
link_targets = st.one_of(
    st.sampled_from(["..", ".", "../..", "a", "b/c", "../outside", "../outside/a.txt"]),
    st.lists(st.sampled_from([*NAMES, "..", "."]), min_size=1, max_size=4).map("/".join),
    st.sampled_from(["<root>", "<root>/a", "<root>/../outside", "<outside>", "<outside>/a.txt"]),
)
entries = st.lists(
    st.tuples(
        st.lists(st.sampled_from(NAMES), min_size=1, max_size=3).map("/".join),
        st.one_of(st.just("dir"), st.just("file"), link_targets),
    ),
    max_size=8,
)
virtual_paths = st.lists(st.sampled_from([*NAMES, "x.txt"]), max_size=5).map(
    lambda names: "/" + "/".join(names)
)


def build(b: Box, shape: list[tuple[str, str]]) -> None:
    real_root = os.path.realpath(b.root)
    for rel, kind in shape:
        host = os.path.join(b.root, rel)
        if os.path.lexists(host):
            continue
        parent = os.path.realpath(os.path.dirname(host))
        if os.path.commonpath([parent, real_root]) != real_root:
            continue  # a link on the way leads out of the root: building there would not
            # make the tree, it would change what the tests check is left alone outside
        try:
            os.makedirs(os.path.dirname(host), exist_ok=True)
            if kind == "dir":
                os.mkdir(host)
            elif kind == "file":
                with open(host, "w") as handle:
                    handle.write("inside\n")
            else:
                target = kind.replace("<root>", b.root).replace("<outside>", b.outside)
                os.symlink(target, host)
        except OSError:
            continue  # a file or link on the way: that shape is not built


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=entries, path=virtual_paths)
@example(shape=[("a", "b/../..")], path="/a")  # a link climbing out past a missing name
@example(shape=[("a/a", "c/../b"), ("a/b", "..")], path="/a/a")  # and back onto a link
def test_where_a_path_leads_is_what_realpath_says_when_nothing_moves(
    shape: list[tuple[str, str]], path: str
) -> None:
    with box() as b:
        build(b, shape)
        store = LocalStore(b.root)
        host = b.root if path == "/" else os.path.join(b.root, path[1:])
        try:
            expected: str | None = real_virtual_path(os.path.realpath(b.root), host, path)
        except UnsafePathError:
            expected = None
        try:
            found: str | None = store.real_path(path)
        except UnsafePathError as exc:
            if "loop" in str(exc):
                event("a loop of links")
                return  # realpath gives up silently on loops; the store refuses them
            found = None
        assert found == expected


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    shape=entries,
    path=virtual_paths,
    operation=st.sampled_from([name for name, _ in operations(Workspace("memory://x"), "/a")]),
    swap_at=st.integers(min_value=0, max_value=12),
)
def test_a_folder_swapped_at_any_step_of_any_walk_never_lets_work_out(
    shape: list[tuple[str, str]],
    path: str,
    operation: str,
    swap_at: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with box() as b:
        build(b, shape)
        before = outside_state(b.outside)
        ws = Workspace(b.root)
        look = _descriptors.lstat_at
        calls: list[str] = []

        def look_then_swap(name: str, folder: int) -> os.stat_result:
            found = look(name, folder)
            calls.append(name)
            if len(calls) == swap_at + 1 and os.path.isdir(f"/proc/self/fd/{folder}"):
                here = os.readlink(f"/proc/self/fd/{folder}")
                target = os.path.join(here, name)
                real_root = os.path.realpath(b.root)
                inside = target.startswith(real_root + os.sep)
                if inside and os.path.isdir(target) and not os.path.islink(target):
                    os.rename(target, target + ".moved")
                    os.symlink(b.outside, target)
                    event("swapped")
            return found

        with monkeypatch.context() as patch:
            patch.setattr(_descriptors, "lstat_at", look_then_swap)
            with suppress(WorkspaceError):
                assert_stays_inside(dict(operations(ws, path))[operation]())
        assert outside_state(b.outside) == before
        assert sorted(os.listdir(b.top)) == ["outside", "root"]
