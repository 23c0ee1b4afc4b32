"""ctxfs.testing for storage: the recording store, and the conformance suite as a user runs it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ctxfs.testing
from ctxfs import UnsafePathError, Workspace
from ctxfs.testing import RecordingStore, StoreCall
from ctxfs.testing.conformance import WorkspaceConformance


def test_every_name_ctxfs_testing_exported_still_resolves() -> None:
    for name in [
        "Reply",
        "ScriptExhaustedError",
        "ScriptedChatModel",
        "long_history",
        "tool_call",
        "tool_exchange",
        "RecordingStore",
        "StoreCall",
    ]:
        assert name in ctxfs.testing.__all__
        assert getattr(ctxfs.testing, name).__doc__


def test_the_recording_store_records_each_call_and_forwards_it() -> None:
    store = RecordingStore(Workspace("memory://recorded").store)
    workspace = Workspace(store)
    workspace.write_text("/a/b.txt", "needle\n")
    workspace.write_text("/c.txt", "hay\n")
    store.clear()

    assert workspace.read_lines("/a/b.txt").lines == ("needle",)
    assert store.calls == [
        StoreCall("real_path", "/a/b.txt"),
        StoreCall("info", "/a/b.txt"),
        StoreCall("open_read", "/a/b.txt"),
    ]
    store.clear()
    assert [f.path for f in workspace.grep("needle").files] == ["/a/b.txt"]
    assert store.calls == [
        ("real_path", "/"),
        ("walk", "/"),
        ("fetch", "/a/b.txt"),
        ("fetch", "/c.txt"),
    ]
    store.clear()
    workspace.rm("/a", recursive=True)
    assert store.methods() == ["real_path", "info", "remove"]
    assert store.url == "memory://recorded"
    assert repr(store) == "RecordingStore(FsspecStore('memory://recorded'))"


def test_a_path_refused_by_the_sandbox_never_reaches_the_store() -> None:
    store = RecordingStore(Workspace("memory://guarded").store)
    workspace = Workspace(store)
    assert store.methods() == ["info"]  # the one check of opening, on the root
    store.clear()
    for path in ["../up.txt", "s3://bucket/x", "~/x"]:
        with pytest.raises(UnsafePathError):
            workspace.write_text(path, "x")
        with pytest.raises(UnsafePathError):
            workspace.grep("x", path)
    assert store.calls == []


def _run_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "error", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
        timeout=240,
    )


def test_importing_ctxfs_testing_does_not_need_pytest() -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.modules["pytest"] = None  # as if pytest were not installed
        import ctxfs.testing
        assert "pytest" not in [m for m in sys.modules if sys.modules[m] is not None]
        try:
            import ctxfs.testing.conformance
        except ImportError:
            print("conformance needs pytest")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "conformance needs pytest\n"


USER_SUITE = """
import itertools

import pytest
from fsspec.implementations.memory import MemoryFileSystem

from ctxfs import Workspace
from ctxfs.testing import RecordingStore
from ctxfs.testing.conformance import WorkspaceConformance


class TestMyFilesystem(WorkspaceConformance):
    @pytest.fixture
    def make_workspace(self):
        fs = MemoryFileSystem(global_store=False, skip_instance_cache=True)
        numbers = itertools.count()

        def make(**options):
            return Workspace(fs, root=f"/conformance/ws{next(numbers)}", **options)

        return make


class TestMyStore(WorkspaceConformance):
    @pytest.fixture
    def make_workspace(self):
        def make(**options):
            store = Workspace("memory://inner").store
            return Workspace(RecordingStore(store), **options)

        return make


class TestForgotTheFixture(WorkspaceConformance):
    pass
"""


@pytest.mark.slow
def test_a_user_runs_the_shipped_suite_on_their_own_filesystem_and_store(tmp_path: Path) -> None:
    (tmp_path / "test_mine.py").write_text(USER_SUITE)
    tests = [name for name in dir(WorkspaceConformance) if name.startswith("test_")]
    assert len(tests) >= 30

    done = _run_pytest(tmp_path, "-k", "TestMy or (TestForgot and test_read_text_and_read_bytes)")

    summary = done.stdout.strip().splitlines()[-1]
    assert f"{2 * len(tests)} passed" in summary and "1 error" in summary, done.stdout
    assert "define a make_workspace fixture" in done.stdout
