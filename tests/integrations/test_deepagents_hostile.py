"""WorkspaceBackend under hostile arguments: every method answers with Deep Agents' result type.

Whatever the model sends (a lone UTF-16 surrogate from a JSON ``"\\ud800"``, control
characters, paths that climb out or name ctxfs's own areas), and whatever a caller passes
that is not a string, the backend answers with its result type and an error string, never an
exception into the agent's loop; nothing is written outside the workspace or into a
read-only area.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deepagents import create_deep_agent
from deepagents.backends.protocol import (
    DeleteResult,
    EditResult,
    FileDownloadResponse,
    FileUploadResponse,
    GlobResult,
    GrepResult,
    LsResult,
    ReadResult,
    WriteResult,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import ToolMessage

from ctxfs import Workspace
from ctxfs.integrations.deepagents import WorkspaceBackend
from ctxfs.testing import ScriptedChatModel, tool_call

LONE = "\ud800"
SECRET = "/tool_results/t/r.txt"


def _backend(url: str = "memory://") -> tuple[Workspace, WorkspaceBackend]:
    workspace = Workspace(url)
    workspace.write_text(SECRET, "kept\n")
    workspace.write_text("/a.txt", "alpha\nbeta\n")
    return workspace, WorkspaceBackend(workspace)


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda b: b.write("/new.txt", f"x{LONE}y"), WriteResult),
        (lambda b: b.edit("/a.txt", "alpha", f"a{LONE}"), EditResult),
        (lambda b: b.edit("/a.txt", "alpha", LONE, replace_all=True), EditResult),
        (lambda b: b.grep(LONE), GrepResult),
        (lambda b: b.grep(f"al{LONE}", "/a.txt"), GrepResult),
    ],
)
def test_a_lone_surrogate_in_the_text_is_an_error_result(call: Any, expected: type) -> None:
    workspace, backend = _backend()
    result = call(backend)
    assert isinstance(result, expected)
    assert result.error is not None
    assert "lone surrogate" in result.error and "send the text without it" in result.error
    assert not workspace.exists("/new.txt")
    assert workspace.read_text("/a.txt") == "alpha\nbeta\n"


def test_a_deep_agent_whose_model_sends_a_lone_surrogate_goes_on() -> None:
    workspace = Workspace("memory://")
    script = [
        tool_call("write_file", {"file_path": "/a.txt", "content": f"x{LONE}"}),
        tool_call("grep", {"pattern": LONE}),
        tool_call("write_file", {"file_path": "/a.txt", "content": "x"}),
        "Done.",
    ]
    agent = create_deep_agent(
        ScriptedChatModel(responses=script), backend=WorkspaceBackend(workspace)
    )
    out = agent.invoke({"messages": [("user", "write it")]})
    results = [m.text for m in out["messages"] if isinstance(m, ToolMessage)]
    assert "lone surrogate" in results[0] and "lone surrogate" in results[1]
    assert results[2] == "Updated file /a.txt"
    assert out["messages"][-1].text == "Done."
    assert workspace.read_bytes("/a.txt") == b"x"


_NOT_STRINGS: list[Any] = [None, 5, b"/a.txt", ["/a.txt"]]


@pytest.mark.parametrize("bad", _NOT_STRINGS)
def test_arguments_that_are_not_strings_are_error_results(bad: Any) -> None:
    workspace, backend = _backend()
    answers = [
        backend.ls(bad),
        backend.read(bad),
        backend.read("/a.txt", bad, bad),
        backend.write(bad, "x"),
        backend.write("/n.txt", bad),
        backend.edit(bad, "a", "b"),
        backend.edit("/a.txt", bad, "b"),
        backend.edit("/a.txt", "alpha", bad),
        backend.delete(bad),
        backend.glob(bad),
        backend.grep(bad),
    ]
    if bad is not None:  # None is the default search root and include glob
        answers += [backend.glob("*", bad), backend.grep("a", bad), backend.grep("a", "/", bad)]
    assert all(answer.error for answer in answers), answers
    (upload,) = backend.upload_files([(bad, b"x")])
    assert isinstance(upload, FileUploadResponse) and upload.error
    if not isinstance(bad, bytes):  # and no empty file left where the data was refused
        (upload,) = backend.upload_files([("/u.bin", bad)])
        assert isinstance(upload, FileUploadResponse) and upload.error
    (download,) = backend.download_files([bad])
    assert isinstance(download, FileDownloadResponse) and download.error
    assert sorted(workspace.glob("**/*").paths) == ["/a.txt", SECRET]
    assert workspace.read_text("/a.txt") == "alpha\nbeta\n"


_ANY_TEXT = st.text(st.characters(codec=None, categories=None), max_size=12) | st.sampled_from(
    ["..", "../x", "~/x", "s3://b/x", "file:///etc/passwd", "/tool_results", SECRET, "/", ""]
)


@settings(max_examples=150, deadline=None)
@given(a=_ANY_TEXT, b=_ANY_TEXT, c=_ANY_TEXT, offset=st.integers(), limit=st.integers())
def test_any_strings_give_result_types_and_never_touch_what_is_read_only(
    tmp_path_factory: pytest.TempPathFactory, a: str, b: str, c: str, offset: int, limit: int
) -> None:
    root = tmp_path_factory.mktemp("ws")
    workspace, backend = _backend(str(root / "ws"))
    answers = [
        (backend.ls(a), LsResult),
        (backend.read(a, offset, limit), ReadResult),
        (backend.read("/a.txt", offset, limit), ReadResult),
        (backend.glob(a, b or None), GlobResult),
        (backend.grep(a, b or None, c or None), GrepResult),
        (backend.write(a, b), WriteResult),
        (backend.edit(a, b, c), EditResult),
        (backend.edit("/a.txt", b, c, replace_all=True), EditResult),
        (backend.delete(a), DeleteResult),
    ]
    for answer, kind in answers:
        assert isinstance(answer, kind)
    assert all(isinstance(r, FileUploadResponse) for r in backend.upload_files([(a, b"\0")]))
    assert all(isinstance(r, FileDownloadResponse) for r in backend.download_files([a]))
    assert workspace.read_text(SECRET) == "kept\n"
    assert sorted(p.name for p in root.iterdir()) == ["ws"]  # nothing beside the root


def test_nothing_leaves_the_root_on_disk(tmp_path: Path) -> None:
    _, backend = _backend(str(tmp_path / "ws"))
    for path in ("../out.txt", "/../out.txt", "~/out.txt", "a/../../out", "file:///out"):
        assert backend.write(path, "x").error
        assert backend.upload_files([(path, b"x")])[0].error
    # a host path is a virtual one like any other: it names a file inside the root
    assert backend.write(f"{tmp_path}/out.txt", "x").error is None
    assert (tmp_path / "ws" / str(tmp_path).lstrip("/") / "out.txt").read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ws"]
