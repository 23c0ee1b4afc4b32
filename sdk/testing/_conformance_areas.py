"""The read-only areas and the sandbox of :class:`~ctxfs.testing.conformance.WorkspaceConformance`,
as a mixin of its tests (the ``workspace`` and ``make_workspace`` fixtures come from it)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

import pytest

from ctxfs._errors import ReadOnlyPathError, UnsafePathError, WorkspaceError
from ctxfs._workspace._workspace import Workspace
from ctxfs.sandbox import Limits

__all__ = ["ReadOnlyAreaConformance", "WorkspaceFactory"]


class WorkspaceFactory(Protocol):
    """Makes a fresh, empty workspace on the storage under test, each time it is called."""

    def __call__(
        self, *, read_only: Iterable[str] = ..., limits: Limits | None = ...
    ) -> Workspace: ...


UNSAFE = ["../escape.txt", "/a/../../escape.txt", "~/x", "s3://bucket/x", "a\\b", "a\x00b"]


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
        lambda: workspace.glob("*", path),
        lambda: workspace.grep("x", path),
    ]


class ReadOnlyAreaConformance:
    """Read-only areas refuse every change; unsafe paths are refused on every operation."""

    # -- read-only areas --------------------------------------------------------------------

    def test_read_only_areas_given_at_construction_refuse_the_first_write(
        self, make_workspace: WorkspaceFactory
    ) -> None:
        workspace = make_workspace(read_only=["/tool_results/", "transcripts"])
        assert workspace.read_only == ("/tool_results", "/transcripts")
        with pytest.raises(ReadOnlyPathError):
            workspace.write_text("/tool_results/t1/call_1.txt", "x")
        with pytest.raises(ReadOnlyPathError):
            workspace.write_text("/transcripts/seg.jsonl", "x", create_only=True)
        assert workspace.ls("/") == []

    def test_read_only_view_refuses_changes_but_the_original_can_write(
        self, workspace: Workspace
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
        self, make_workspace: WorkspaceFactory
    ) -> None:
        full = make_workspace()
        _seed_results(full)
        restricted = Workspace(full.store, read_only=["/tool_results"])
        _assert_area_refuses_changes(restricted)
        assert full.read_text("/tool_results/t1/call_1.txt") == "full output\n"

    def test_a_parent_folder_holding_a_read_only_area_cannot_be_deleted(
        self, workspace: Workspace
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

    # -- the sandbox in front of every backend ------------------------------------------------

    def test_unsafe_paths_are_refused_on_every_operation(self, workspace: Workspace) -> None:
        for path in UNSAFE:
            for call in _every_operation(workspace, path):
                with pytest.raises(UnsafePathError):
                    call()
        with pytest.raises(WorkspaceError):
            workspace.read_text("/missing")
        assert workspace.ls("/") == []
