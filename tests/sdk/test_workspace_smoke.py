"""The Workspace end to end, as a user first meets it: the docstring example and one session."""

from __future__ import annotations

import doctest

import pytest

import ctxfs._workspace._workspace
from ctxfs import FileInfo, Workspace


def test_the_workspace_docstring_example_runs() -> None:
    finder = doctest.DocTestFinder()
    tests = [t for t in finder.find(ctxfs.Workspace, "Workspace") if t.examples]
    assert tests, "the Workspace docstring lost its example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in tests:
        runner.run(test)
    assert runner.failures == 0


def test_a_short_session_on_every_backend(workspace: Workspace) -> None:
    workspace.write_text("/notes/todo.md", "- fix the parser\n- write tests\n")
    workspace.edit("/notes/todo.md", "- write tests", "- write more tests")
    workspace.write_text("/tool_results/t1/call_1.txt", "big output\n" * 3, create_only=True)
    agent_view = workspace.view(read_only=["/tool_results"])

    assert [e.path for e in agent_view.ls("/")] == ["/notes", "/tool_results"]
    page = agent_view.read_lines("/notes/todo.md", limit=1)
    assert page.lines == ("- fix the parser",)
    assert page.next_offset == 1
    assert agent_view.read_lines("/tool_results/t1/call_1.txt").total_lines == 3
    assert agent_view.info("/notes/todo.md") == FileInfo(
        "/notes/todo.md", "file", len("- fix the parser\n- write more tests\n")
    )
    assert repr(workspace).startswith("Workspace(")


def test_data_of_the_wrong_type_is_refused_before_anything_is_written(
    workspace: Workspace,
) -> None:
    # A store handed a str or None created an empty file, then failed as if the storage
    # could not be reached.

    for data in (None, "text", 5, ["x"]):
        with pytest.raises(TypeError, match="data must be bytes"):
            workspace.write_bytes("/a.bin", data)  # type: ignore[arg-type]
    for text in (None, b"x", 5):
        with pytest.raises(TypeError, match="text must be a string"):
            workspace.write_text("/a.txt", text)  # type: ignore[arg-type]
    assert not workspace.exists("/a.bin") and not workspace.exists("/a.txt")
    assert workspace.write_bytes("/a.bin", bytearray(b"ok")).size == 2
    assert workspace.read_bytes("/a.bin") == b"ok"


def test_a_write_to_a_path_ending_with_a_slash_is_refused() -> None:
    """'/new/' names a folder: it was written as the file /new."""
    from ctxfs import IsADirectoryPathError

    ws = Workspace("memory://trailing-slash")
    for path in ("/new/", "notes//", "/a/b.txt/"):
        with pytest.raises(IsADirectoryPathError, match="ends with '/'"):
            ws.write_text(path, "x")
    assert not ws.exists("/new") and not ws.exists("/a/b.txt")
