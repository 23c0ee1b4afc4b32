"""The tools' surface that does not depend on the backend: schemas, argument validation,
error texts, descriptions, the LangChain wiring and the pure output formatting."""

from __future__ import annotations

import asyncio
import doctest
import importlib
import json
import logging

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

import ctxfs.tools
from ctxfs import (
    BackendError,
    GrepResult,
    IsADirectoryPathError,
    Limits,
    PathNotFoundError,
    Workspace,
)
from ctxfs._workspace._grep import FileResult, GrepLine
from ctxfs.tools import ToolFunction, tool_functions, workspace_tools
from ctxfs.tools._args import GrepArgs
from ctxfs.tools._format import format_grep
from ctxfs.tools._function import error_text

NAMES = ["ls", "read_file", "write_file", "edit_file", "glob", "grep"]


@pytest.fixture
def ws() -> Workspace:
    return Workspace("memory://tools-schema")


@pytest.fixture
def fns(ws: Workspace) -> dict[str, ToolFunction]:
    return {f.name: f for f in tool_functions(ws)}


def test_public_names_are_pinned() -> None:
    assert ctxfs.tools.__all__ == [
        "DEFAULT_MAX_OUTPUT_TOKENS",
        "MIN_OUTPUT_TOKENS",
        "SDK_AREAS",
        "ToolFunction",
        "as_langchain_tool",
        "tool_functions",
        "workspace_tools",
    ]


def test_tool_names_and_order(ws: Workspace) -> None:
    assert [f.name for f in tool_functions(ws)] == NAMES
    assert [t.name for t in workspace_tools(ws)] == NAMES


def test_json_schemas_name_required_fields_and_aliases(fns: dict[str, ToolFunction]) -> None:
    required = {name: fns[name].parameters.get("required", []) for name in NAMES}
    assert required == {
        "ls": [],
        "read_file": ["file_path"],
        "write_file": ["file_path", "content"],
        "edit_file": ["file_path", "old_string", "new_string"],
        "glob": ["pattern"],
        "grep": ["pattern"],
    }
    grep = fns["grep"].parameters
    properties = grep["properties"]
    assert isinstance(properties, dict)
    assert list(properties) == [
        "pattern",
        "path",
        "glob",
        "output_mode",
        "-B",
        "-A",
        "-C",
        "-n",
        "-i",
        "head_limit",
        "offset",
        "multiline",
        "fixed_strings",
    ]
    assert properties["-A"] == {
        "default": 0,
        "description": "Context lines after a match.",
        "minimum": 0,
        "type": "integer",
    }
    assert properties["glob"]["type"] == "string"  # no null branch for an optional string
    assert properties["output_mode"]["enum"] == ["files_with_matches", "content", "count"]
    assert properties["head_limit"]["default"] == 250
    assert grep["additionalProperties"] is False
    assert "title" not in json.dumps(grep)
    assert fns["read_file"].parameters["properties"] == {
        "file_path": {"description": "Absolute path, e.g. /notes/a.md.", "type": "string"},
        "offset": {
            "default": 0,
            "description": "0-based first line: offset=100 starts at line 101.",
            "minimum": 0,
            "type": "integer",
        },
        "limit": {
            "default": 2000,
            "description": "Most lines to read.",
            "minimum": 1,
            "type": "integer",
        },
        "column": {
            "default": 0,
            "description": "To read on in a clipped line: the column it gave.",
            "minimum": 0,
            "type": "integer",
        },
    }


def test_openai_spec(fns: dict[str, ToolFunction]) -> None:
    spec = fns["edit_file"].openai_spec()
    assert spec == {
        "type": "function",
        "function": {
            "name": "edit_file",
            "description": fns["edit_file"].description,
            "parameters": fns["edit_file"].parameters,
        },
    }
    json.dumps([f.openai_spec() for f in fns.values()])  # serialisable as is


def test_langchain_tools_show_the_same_schema_with_aliases(ws: Workspace) -> None:
    plain = {f.name: f for f in tool_functions(ws)}
    for tool in workspace_tools(ws):
        assert isinstance(tool, BaseTool)
        spec = convert_to_openai_tool(tool)
        assert spec["function"]["parameters"] == plain[tool.name].parameters
        assert spec["function"]["description"] == plain[tool.name].description


def test_langchain_tools_accept_aliases_names_and_tool_calls(ws: Workspace) -> None:
    ws.write_text("/a.txt", "x\nneedle\ny\n")
    grep = {t.name: t for t in workspace_tools(ws)}["grep"]
    expected = "/a.txt-1-x\n/a.txt:2:needle\n/a.txt-3-y"
    assert grep.invoke({"pattern": "NEEDLE", "output_mode": "content", "-C": 1, "-i": True}) == (
        expected
    )
    assert grep.invoke(
        {"pattern": "NEEDLE", "output_mode": "content", "context": 1, "ignore_case": True}
    ) == (expected)
    message = grep.invoke(
        {
            "type": "tool_call",
            "id": "call_1",
            "name": "grep",
            "args": {"pattern": "needle", "output_mode": "content", "-B": 1},
        }
    )
    assert isinstance(message, ToolMessage)
    assert message.content == "/a.txt-1-x\n/a.txt:2:needle"
    assert message.tool_call_id == "call_1"
    assert asyncio.run(grep.ainvoke({"pattern": "needle"})) == "/a.txt"


def test_langchain_tools_answer_bad_arguments_with_error_text(ws: Workspace) -> None:
    read = {t.name: t for t in workspace_tools(ws)}["read_file"]
    assert read.invoke({"file_path": "/a.txt", "offset": -1}) == (
        "Error: invalid arguments for read_file: offset: Input should be greater than or "
        "equal to 0 (got -1). Call read_file again with valid arguments: "
        "file_path (required), offset, limit, column"
    )
    message = read.invoke({"type": "tool_call", "id": "c", "name": "read_file", "args": {}})
    assert isinstance(message, ToolMessage)
    assert message.content == (
        "Error: invalid arguments for read_file: file_path is required. "
        "Call read_file again with valid arguments: file_path (required), offset, limit, column"
    )


def test_invalid_arguments_are_error_text(fns: dict[str, ToolFunction]) -> None:
    assert fns["grep"](pattern="x", **{"-A": -2, "type": "py"}) == (
        "Error: invalid arguments for grep: -A: Input should be greater than or equal to 0 "
        "(got -2); unknown argument 'type'. Call grep again with valid arguments: "
        "pattern (required), path, glob, output_mode, -B, -A, -C, -n, -i, head_limit, offset, "
        "multiline, fixed_strings"
    )
    assert fns["grep"](pattern="x", output_mode="lines").startswith(
        "Error: invalid arguments for grep: output_mode: Input should be 'files_with_matches', "
        "'content' or 'count' (got 'lines')."
    )
    assert fns["write_file"](file_path="/a.txt", content=42).startswith(
        "Error: invalid arguments for write_file: content: Input should be a valid string (got 42)."
    )
    long_value = fns["read_file"](file_path="/a", limit="x" * 500)
    assert long_value.startswith("Error: invalid arguments for read_file: limit: ")
    assert len(long_value) < 300  # the bad value is shown shortened


def test_invoke_takes_a_json_string_or_a_mapping(fns: dict[str, ToolFunction]) -> None:
    assert fns["write_file"].invoke('{"file_path": "/a.txt", "content": "hi"}') == (
        "Created /a.txt (2 bytes)"
    )
    assert fns["ls"].invoke("") == "/a.txt"
    assert fns["ls"].invoke({"path": "/"}) == "/a.txt"
    assert fns["ls"].invoke('{"path": "/"') == (
        "Error: the arguments of ls are not valid JSON (Expecting ',' delimiter at position "
        "12); send a JSON object of arguments"
    )
    assert fns["ls"].invoke("[1, 2]") == (
        "Error: the arguments of ls must be a JSON object, not list; valid arguments: path, offset"
    )


def test_unexpected_exceptions_become_internal_error_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(path: str, offset: int) -> str:
        raise RuntimeError("boom")

    tool = ToolFunction("ls", "List.", ctxfs.tools._args.LsArgs, broken)
    with caplog.at_level(logging.ERROR, logger="ctxfs.tools"):
        assert tool(path="/") == "Error: internal error (RuntimeError: boom)"
    assert "boom" in caplog.text  # the developer gets the traceback in the log


def test_error_text_adds_a_next_step_only_where_missing() -> None:
    assert error_text(BackendError("/a: storage could not be reached or failed (X: y)")) == (
        "Error: /a: storage could not be reached or failed (X: y); the storage could not be "
        "asked, try again, and if it keeps failing, stop"
    )
    assert error_text(PathNotFoundError("/a: no such file or directory")) == (
        "Error: /a: no such file or directory; check the path with ls or glob (paths start at /)"
    )
    assert error_text(IsADirectoryPathError("/d: is a directory, not a file")) == (
        "Error: /d: is a directory, not a file; list it with ls, or give a file path"
    )
    assert error_text(IsADirectoryPathError("/d is a directory; give a file path inside it")) == (
        "Error: /d is a directory; give a file path inside it"
    )
    assert error_text(ValueError("offset must be >= 0")) == "Error: offset must be >= 0"


def test_descriptions_are_written_for_the_model() -> None:
    ws = Workspace("memory://desc", limits=Limits(regex_timeout=0.5, max_glob_results=300))
    fns = {f.name: f for f in tool_functions(ws)}
    # The read-only folders are named once, where their text is read back.
    assert fns["read_file"].description.endswith(
        "Read-only folders kept by the system:\n"
        "- /memories/: long-term memory from earlier sessions\n"
        "- /sessions/: staged workflows' state and stage outputs\n"
        "- /tool_inputs/: full arguments of shortened tool calls\n"
        "- /tool_results/: full text of long tool results shortened in the conversation\n"
        "- /transcripts/: archived earlier parts of this conversation"
    )
    for name in ["ls", "write_file", "edit_file", "glob", "grep"]:
        assert "Read-only folders" not in fns[name].description
    assert "the offset to read from next" in fns["read_file"].description
    assert "offset (0-based)" in fns["read_file"].description
    assert "saved to a file, read it" in fns["read_file"].description
    assert "without the line-number prefix" in fns["edit_file"].description
    assert "'Created' or 'Overwrote'" in fns["write_file"].description
    assert "replace_all=true" in fns["edit_file"].description
    assert "at most 300 paths" in fns["glob"].description
    assert "Under a 0.5-second time limit" in fns["grep"].description
    assert "at most 300 entries" in fns["ls"].description
    assert "\n- 'content': path:line:text;" in fns["grep"].description
    for function in fns.values():  # paragraphs are unwrapped: no hard line breaks mid-sentence
        for paragraph in function.description.split("\n\n"):
            assert all(line.startswith("- ") for line in paragraph.splitlines()[1:]), paragraph


# -- pure formatting of grep pages -------------------------------------------------------


def _result(mode: str = "content", **kwargs: object) -> GrepResult:
    lines = (
        GrepLine(1, "a", False),
        GrepLine(2, "hit", True),
        GrepLine(5, "b", False, gap_before=True),
        GrepLine(6, "hit", True),
    )
    files = (FileResult("/f.txt", match_count=2, lines=lines),)
    return GrepResult(output_mode=mode, files=files, searched=1, **kwargs)  # type: ignore[arg-type]


def test_grep_page_starting_inside_a_group_has_no_leading_separator() -> None:
    out = format_grep(_result(), pattern="hit", path="/", head_limit=2, offset=1, separators=True)
    assert out == (
        "/f.txt:2:hit\n--\n/f.txt-5-b\n"
        "... 1 more line; call grep again with offset=3 to see the next page"
    )


def test_grep_without_line_numbers_keeps_rg_separators() -> None:
    out = format_grep(
        _result(),
        pattern="hit",
        path="/",
        head_limit=0,
        offset=0,
        line_numbers=False,
        separators=True,
    )
    assert out == "/f.txt-a\n/f.txt:hit\n--\n/f.txt-b\n/f.txt:hit"


def test_grep_notes_for_skipped_files_name_at_most_ten() -> None:
    binary = tuple(f"/b{i}.bin" for i in range(12))
    out = format_grep(
        _result("count", skipped_binary=binary, skipped_large=("/huge.log",)),
        pattern="hit",
        path="/",
        head_limit=250,
        offset=0,
    )
    assert out == (
        "/f.txt:2\n"
        "(skipped 12 binary files: /b0.bin, /b1.bin, /b2.bin, /b3.bin, /b4.bin, /b5.bin, "
        "/b6.bin, /b7.bin, /b8.bin, /b9.bin and 2 more)\n"
        "(skipped 1 file too large to search: /huge.log; read it in pages with read_file)"
    )


def test_grep_args_accept_aliases_and_python_names() -> None:
    assert GrepArgs.model_validate({"pattern": "x", "-A": 1}).after == 1
    assert GrepArgs(pattern="x", after=2).after == 2


@pytest.mark.parametrize("module", ["ctxfs.tools._function", "ctxfs.tools._langchain"])
def test_docstring_examples_run(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0
    assert result.failed == 0
