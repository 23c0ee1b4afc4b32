"""A refusal names what the caller sent cut short: a path, an argument name, a pattern or a
run of broken text of a megabyte must not fill the answer (the output budget would then cut
away what the message says to do), whichever surface the call came through."""

from __future__ import annotations

import pytest

from ctxfs import Workspace
from ctxfs.integrations.mcp import McpToolbox
from ctxfs.tools import tool_functions

HUGE = 100_000

# (what is sent, how its refusal ends)
_PATHS = [
    ("/" + "a" * HUGE, "has a name longer than 255 bytes; shorten it"),
    ("~" + "a" * HUGE, "use a path from the workspace root such as '/notes.md'"),
    ("/../" + "a" * HUGE, "climbs above the workspace root with '..'; paths are rooted at '/'"),
    ("/a\\" + "b" * HUGE, "contains a backslash; separate folders with '/'"),
    ("/a\x00" + "b" * HUGE, "contains a NUL or control character; use a plain name"),
    ("s3://" + "b" * HUGE, "is a URL or drive path; give a workspace path such as '/data/x.txt'"),
]


@pytest.mark.parametrize(("path", "ending"), _PATHS, ids=range(len(_PATHS)))
def test_a_refused_path_is_named_cut_short(path: str, ending: str) -> None:
    workspace = Workspace("memory://refusals")
    tools = {f.name: f for f in tool_functions(workspace)}
    box = McpToolbox(workspace)
    answers = [
        tools["read_file"](file_path=path),
        tools["ls"](path=path),
        box.call("read_text_file", {"path": path}).text,
        box.call("get_file_info", {"path": path}).text,
    ]
    for answer in answers:
        assert answer.startswith("Error: path ") and answer.endswith(ending), answer[-300:]
        assert f"… ({len(path)} chars)" in answer and len(answer) < 400


def test_an_unknown_argument_is_named_cut_short() -> None:
    workspace = Workspace("memory://refusals-args")
    tools = {f.name: f for f in tool_functions(workspace)}
    box = McpToolbox(workspace)
    name = "k" * HUGE
    edits = [{"oldText": "a", "newText": "b", name: 1}]
    answers = [
        tools["read_file"](file_path="/a.txt", **{name: 1}),
        box.call("read_text_file", {"path": "/a.txt", name: 1}).text,
        box.call("edit_file", {"path": "/a.txt", "edits": edits}).text,
    ]
    for answer in answers:
        assert "unknown argument '" in answer and " chars). Call " in answer, answer[-300:]
        assert "again with valid arguments: " in answer and len(answer) < 500


def test_broken_text_and_a_glob_class_are_named_cut_short() -> None:
    workspace = Workspace("memory://refusals-text")
    workspace.write_text("/a.txt", "a\n")
    box = McpToolbox(workspace)
    written = box.call("write_file", {"path": "/b.txt", "content": "a" + "\udc80" * HUGE})
    assert written.text.endswith("send the text without it") and len(written.text) < 1_000
    reversed_class = "[" + "z-a" * (HUGE // 10) + "]"
    for answer in (
        box.call("search_files", {"pattern": reversed_class}).text,
        box.call("grep", {"pattern": "a", "glob": reversed_class}).text,
    ):
        assert answer.startswith("Error: reversed range 'z-a' in glob class '[z-az-a")
        assert answer.endswith("; write 'a-z'") and len(answer) < 400, answer[-200:]


def test_read_multiple_files_names_an_overlong_path_cut_short() -> None:
    workspace = Workspace("memory://refusals-many")
    workspace.write_text("/a.txt", "hi\n")
    path = "/" + "a" * HUGE
    answer = McpToolbox(workspace).call("read_multiple_files", {"paths": [path, "/a.txt"]})
    first, second = answer.text.split("\n---\n")
    assert first.startswith(f"'/{'a' * 99}'… ({HUGE + 1} chars):\nError: path '/aaa")
    assert first.endswith("has a name longer than 255 bytes; shorten it")
    assert second == "/a.txt:\n     1\thi"
    # one path that leaves no room for a page: said so, not "read at most 1 file per call"
    small = McpToolbox(workspace, max_output_tokens=100)
    alone = small.call("read_multiple_files", {"paths": ["/" + "a/" * 1_000]})
    assert alone.is_error and alone.text.startswith("Error: the path '/a/a/a")
    assert alone.text.endswith(
        "(2001 chars) leaves no room for a page of the file in one answer of 100 tokens; "
        "read it with read_text_file"
    )
