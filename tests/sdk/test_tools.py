"""The agent's tools, on every backend: the exact texts a model sees, and every failure as text.

Pure parts (schemas, argument validation, error texts, LangChain wiring) are in
``test_tools_schema.py``; this module drives the tools against real workspaces.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from ctxfs import Limits, Workspace
from ctxfs._layout import SDK_AREAS
from ctxfs.tools import ToolFunction, tool_functions, workspace_tools

WorkspaceFactory = Callable[..., Workspace]

NOT_FOUND_HINT = "; check the path with ls or glob (paths start at /)"


def tools(
    workspace: Workspace, read_only_areas: Iterable[str] = SDK_AREAS
) -> dict[str, ToolFunction]:
    return {f.name: f for f in tool_functions(workspace, read_only_areas=read_only_areas)}


@pytest.fixture
def t(workspace: Workspace) -> dict[str, ToolFunction]:
    return tools(workspace)


# -- read_file ---------------------------------------------------------------------------


def test_read_file_numbers_lines_like_cat_n_and_says_how_to_read_on(
    workspace: Workspace, t: dict[str, ToolFunction]
) -> None:
    workspace.write_text("/notes/a.md", "one\ntwo\nthree\nfour\nfive\n")
    assert t["read_file"](file_path="/notes/a.md", limit=2) == (
        "     1\tone\n     2\ttwo\n... 3 more lines; call read_file with offset=2 to read on"
    )
    assert t["read_file"](file_path="/notes/a.md", offset=2, limit=2) == (
        "     3\tthree\n     4\tfour\n... 1 more line; call read_file with offset=4 to read on"
    )
    assert t["read_file"](file_path="notes/a.md", offset=4) == "     5\tfive"
    assert t["read_file"](file_path="/notes/a.md") == (
        "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n     5\tfive"
    )


def test_read_file_line_numbers_stay_aligned_past_six_digits(
    workspace: Workspace, t: dict[str, ToolFunction]
) -> None:
    workspace.write_text("/n.txt", "x\n" * 12)
    assert t["read_file"](file_path="/n.txt", offset=9, limit=2).splitlines()[:2] == [
        "    10\tx",
        "    11\tx",
    ]


def test_read_file_default_limit_and_caps_come_from_the_workspace_limits(
    make_workspace: WorkspaceFactory,
) -> None:
    ws = make_workspace(limits=Limits(default_read_lines=2, max_read_chars=10, max_line_chars=6))
    read = tools(ws)["read_file"]
    ws.write_text("/a.txt", "aaaa\nbbbb\ncccc\n")
    assert read(file_path="/a.txt") == (
        "     1\taaaa\n     2\tbbbb\n... 1 more line; call read_file with offset=2 to read on"
    )
    assert read.parameters["properties"]["limit"]["default"] == 2  # type: ignore[index]
    assert "Reads 2 lines" in read.description
    # the character cap ends the page early, and the note says why
    assert read(file_path="/a.txt", limit=50) == (
        "     1\taaaa\n     2\tbbbb\n"
        "... 1 more line (this page stopped at the 10-character limit); "
        "call read_file with offset=2 to read on"
    )
    ws.write_text("/long.txt", "abcdefghij\nok\n")
    assert read(file_path="/long.txt") == (
        "     1\tabcdef … [line clipped: 10 chars; call read_file with offset=0, limit=1, "
        "column=6 to read on in this line]\n     2\tok"
    )
    # the clipped line reads on from the column the marker gave, so nothing is out of reach
    assert read(file_path="/long.txt", offset=0, limit=1, column=6) == (
        "     1\t[from character 6] ghij\n... 1 more line; call read_file with offset=1 to read on"
    )
    assert read(file_path="/long.txt", limit=1, column=40) == (
        "     1\t[this line has only 10 characters; column 40 is past its end]\n"
        "... 1 more line; call read_file with offset=1 to read on"
    )


def test_read_file_empty_file_is_a_note_not_an_error(
    workspace: Workspace, t: dict[str, ToolFunction]
) -> None:
    workspace.write_text("/empty.txt", "")
    assert t["read_file"](file_path="/empty.txt") == "(file /empty.txt is empty: 0 lines)"
    assert t["read_file"](file_path="/empty.txt", offset=5) == "(file /empty.txt is empty: 0 lines)"


def test_read_file_offset_past_the_end_says_how_many_lines(
    workspace: Workspace, t: dict[str, ToolFunction]
) -> None:
    workspace.write_text("/a.txt", "1\n2\n3\n")
    assert t["read_file"](file_path="/a.txt", offset=3) == (
        "Error: offset 3 is past the end of /a.txt, which has 3 lines; use an offset from 0 to 2"
    )


def test_read_file_refuses_binary_and_invalid_utf8_with_a_next_step(
    workspace: Workspace, t: dict[str, ToolFunction]
) -> None:
    workspace.write_bytes("/img.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    workspace.write_bytes("/latin1.txt", b"caf\xe9\n")
    assert t["read_file"](file_path="/img.png") == (
        "Error: /img.png is a binary file (it contains NUL bytes); it cannot be shown as text; "
        "read_file and edit_file work only on UTF-8 text files"
    )
    assert t["read_file"](file_path="/latin1.txt").startswith(
        "Error: /latin1.txt is not valid UTF-8 text ("
    )
    assert t["read_file"](file_path="/latin1.txt").endswith(
        "read_file and edit_file work only on UTF-8 text files"
    )


def test_read_file_of_a_directory_or_a_missing_path(
    workspace: Workspace, t: dict[str, ToolFunction]
) -> None:
    workspace.write_text("/d/x.txt", "x")
    assert t["read_file"](file_path="/d") == (
        "Error: /d is a directory, not a file; list it with ls"
    )
    assert t["read_file"](file_path="/nope.txt") == (
        "Error: /nope.txt: no such file or directory" + NOT_FOUND_HINT
    )


def test_tools_refuse_paths_outside_the_workspace(t: dict[str, ToolFunction]) -> None:
    assert t["read_file"](file_path="../../etc/passwd").startswith(
        "Error: path '../../etc/passwd' climbs above the workspace root with '..'"
    )
    assert t["write_file"](file_path="s3://other/x", content="x").startswith(
        "Error: path 's3://other/x' is a URL or drive path"
    )
    assert t["ls"](path="~").startswith("Error: path '~' starts with '~'")


@pytest.mark.parametrize("backend", ["memory", "local"])
def test_read_file_of_a_50_mb_single_line_is_bounded(backend: str, tmp_path: Path) -> None:
    # Not on S3: moto serves it from this very process, so tracemalloc would count the
    # server's copy of the object (bounded S3 reads are covered by the read-block size).
    ws = Workspace("memory://fifty-mb") if backend == "memory" else Workspace(tmp_path / "ws")
    ws.write_bytes("/one-line.json", b"[" + b"1," * (25 * 2**20 - 1) + b"1]")
    read = tools(ws)["read_file"]
    # tracemalloc counts every thread's allocations, and a collection may run finalizers of
    # what earlier tests left: collect first and not while measuring (a peak of 10 MB was
    # seen once in a full parallel run, never alone).
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        out = read(file_path="/one-line.json")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        gc.enable()
    assert (
        out
        == "     1\t[" + "1," * 999
        + "1 … [line clipped: 52428801 chars; call read_file with offset=0, limit=1, "
        "column=2000 to read on in this line]"
    )
    # the 50 MB line is streamed, never held: holding it, or any copy of it, is 50 MB; the
    # bound leaves room for another thread's allocations meanwhile
    assert peak < 16 * 2**20


# -- write_file / edit_file --------------------------------------------------------------


def test_write_file_creates_parents_and_says_created_or_overwrote(
    workspace: Workspace, t: dict[str, ToolFunction]
) -> None:
    assert t["write_file"](file_path="/deep/er/plan.md", content="héllo\n") == (
        "Created /deep/er/plan.md (7 bytes)"
    )
    assert t["write_file"](file_path="/deep/er/plan.md", content="x") == (
        "Overwrote /deep/er/plan.md (1 byte)"
    )
    assert workspace.read_text("/deep/er/plan.md") == "x"
    assert t["write_file"](file_path="/e.txt", content="") == "Created /e.txt (0 bytes)"


def test_write_file_onto_a_directory_writes_nothing(
    workspace: Workspace, t: dict[str, ToolFunction]
) -> None:
    workspace.write_text("/d/x.txt", "x")
    assert t["write_file"](file_path="/d", content="y") == (
        "Error: /d is a directory; give a file path inside it"
    )
    assert workspace.read_text("/d/x.txt") == "x"


def test_edit_file_says_how_many_replacements(
    workspace: Workspace, t: dict[str, ToolFunction]
) -> None:
    workspace.write_text("/a.py", "x = 1\ny = 1\n")
    assert t["edit_file"](file_path="/a.py", old_string="x = 1", new_string="x = 2") == (
        "Edited /a.py: replaced 1 occurrence"
    )
    assert t["edit_file"](
        file_path="/a.py", old_string="= ", new_string="= -", replace_all=True
    ) == ("Edited /a.py: replaced 2 occurrences")
    assert workspace.read_text("/a.py") == "x = -2\ny = -1\n"


def test_edit_file_absent_or_ambiguous_old_string_writes_nothing(
    workspace: Workspace, t: dict[str, ToolFunction]
) -> None:
    workspace.write_text("/a.py", "x = 1\nx = 1\n")
    assert t["edit_file"](file_path="/a.py", old_string="z", new_string="w") == (
        "Error: old_string was not found in /a.py; read the file again and copy the exact "
        "text, including whitespace and indentation"
    )
    assert t["edit_file"](file_path="/a.py", old_string="x = 1", new_string="x = 2") == (
        "Error: old_string occurs 2 times in /a.py; add surrounding lines to make it unique, "
        "or set replace_all to replace every occurrence"
    )
    assert t["edit_file"](file_path="/gone.py", old_string="a", new_string="b") == (
        "Error: /gone.py: no such file or directory" + NOT_FOUND_HINT
    )
    workspace.write_bytes("/b.bin", b"a\x00b")
    assert t["edit_file"](file_path="/b.bin", old_string="a", new_string="c").startswith(
        "Error: /b.bin is a binary file"
    )
    assert workspace.read_text("/a.py") == "x = 1\nx = 1\n"
    assert workspace.read_bytes("/b.bin") == b"a\x00b"
    assert not workspace.exists("/gone.py")


@pytest.mark.parametrize("area", SDK_AREAS)
def test_sdk_areas_are_readable_but_read_only_through_the_tools(
    workspace: Workspace, t: dict[str, ToolFunction], area: str
) -> None:
    workspace.write_text(f"{area}/thread-1/call_7.txt", "full result\n")  # the SDK's own write
    path = f"{area}/thread-1/call_7.txt"
    refusal = (
        f"Error: {path} is in the read-only area {area}/ (written by ctxfs itself); "
        "write your own files elsewhere, e.g. /notes/"
    )
    assert t["write_file"](file_path=path, content="x") == refusal
    assert t["edit_file"](file_path=path, old_string="full", new_string="x") == refusal
    assert t["write_file"](file_path=f"{area}/new.txt", content="x").startswith(
        f"Error: {area}/new.txt is in the read-only area"
    )
    assert workspace.read_text(path) == "full result\n"
    assert not workspace.exists(f"{area}/new.txt")
    assert t["read_file"](file_path=path) == "     1\tfull result"
    assert t["grep"](pattern="full") == path
    assert t["ls"]() == f"{area}/"


def test_read_only_areas_can_be_chosen(workspace: Workspace) -> None:
    mine = tools(workspace, read_only_areas=["/frozen"])
    assert mine["write_file"](file_path="/tool_results/x.txt", content="x") == (
        "Created /tool_results/x.txt (1 byte)"
    )
    assert mine["write_file"](file_path="/frozen/x.txt", content="x").startswith(
        "Error: /frozen/x.txt is in the read-only area /frozen/"
    )
    assert "- /frozen/\n" in mine["read_file"].description + "\n"


# -- ls / glob ---------------------------------------------------------------------------


def test_ls_marks_directories_and_says_when_empty(
    workspace: Workspace, t: dict[str, ToolFunction]
) -> None:
    assert t["ls"]() == "(directory / is empty)"
    workspace.write_text("/src/main.py", "")
    workspace.write_text("/README.md", "")
    workspace.write_text("/tool_results/t/1.txt", "")
    assert t["ls"]() == "/README.md\n/src/\n/tool_results/"
    assert t["ls"](path="/src") == "/src/main.py"
    assert t["ls"](path="/README.md") == (
        "Error: /README.md is a file, not a directory; read it with read_file"
    )
    assert t["ls"](path="/nowhere") == (
        "Error: /nowhere: no such file or directory" + NOT_FOUND_HINT
    )


def test_ls_caps_long_listings(make_workspace: WorkspaceFactory) -> None:
    ws = make_workspace(limits=Limits(max_glob_results=2))
    for name in "abc":
        ws.write_text(f"/{name}.txt", "")
    ls = tools(ws)["ls"]
    assert ls() == (
        "/a.txt\n/b.txt\n... 1 more entry; call ls again with offset=2 to see the next page, "
        "or list a subfolder or use glob with a pattern to find specific files"
    )
    assert ls(offset=2) == "/c.txt"
    assert ls(offset=3) == "Error: offset 3 is past the end (3 entries); use an offset from 0 to 2"


def test_glob_lists_sorted_files_and_says_when_capped(make_workspace: WorkspaceFactory) -> None:
    ws = make_workspace(limits=Limits(max_glob_results=2))
    for path in ["/src/b.py", "/src/a.py", "/src/pkg/c.py", "/docs/x.md", "/.hidden.py"]:
        ws.write_text(path, "")
    glob = tools(ws)["glob"]
    assert glob(pattern="*.md") == "/docs/x.md"
    assert glob(pattern="*.py") == (
        "/src/a.py\n/src/b.py\n... 1 more file matches; call glob again with offset=2 to see "
        "the next page, or narrow the pattern or the path"
    )
    assert glob(pattern="*.py", offset=2) == "/src/pkg/c.py"
    assert glob(pattern="*.py", offset=3) == (
        "Error: offset 3 is past the end (3 matches); use an offset from 0 to 2"
    )
    assert glob(pattern="pkg/*.py", path="/src") == "/src/pkg/c.py"
    assert glob(pattern="*.rs") == "No files match '*.rs' under /"
    assert glob(pattern="[z-a]").startswith("Error: ")
    assert glob(pattern="*.py", path="/missing") == (
        "Error: /missing: no such file or directory" + NOT_FOUND_HINT
    )


# -- grep --------------------------------------------------------------------------------

LOG = "alpha\nbeta\nmatch one\ngamma\ndelta\nepsilon\nmatch two\nzeta\n"


def test_grep_output_modes(workspace: Workspace, t: dict[str, ToolFunction]) -> None:
    workspace.write_text("/logs/a.log", LOG)
    workspace.write_text("/logs/b.log", "no\nmatch here\n")
    workspace.write_text("/notes.md", "nothing\n")
    assert t["grep"](pattern="match") == "/logs/a.log\n/logs/b.log"
    assert t["grep"](pattern="match", output_mode="count") == "/logs/a.log:2\n/logs/b.log:1"
    assert t["grep"](pattern="match", output_mode="content") == (
        "/logs/a.log:3:match one\n/logs/a.log:7:match two\n/logs/b.log:2:match here"
    )
    assert t["grep"](pattern="MATCH T", **{"-i": True}, output_mode="content") == (
        "/logs/a.log:7:match two"
    )
    assert t["grep"](
        pattern="match", path="/logs/b.log", output_mode="content", **{"-n": False}
    ) == ("/logs/b.log:match here")
    assert t["grep"](pattern="nothing|match", glob="*.md") == "/notes.md"
    assert t["grep"](pattern="m.tch (", fixed_strings=True) == (
        "No matches for 'm.tch (' in / (3 files searched)"
    )


def test_grep_content_with_context_separates_groups_like_rg(
    workspace: Workspace, t: dict[str, ToolFunction]
) -> None:
    workspace.write_text("/a.log", LOG)
    workspace.write_text("/b.log", "no\nmatch here\n")
    assert t["grep"](pattern="match", output_mode="content", **{"-C": 1}) == (
        "/a.log-2-beta\n"
        "/a.log:3:match one\n"
        "/a.log-4-gamma\n"
        "--\n"
        "/a.log-6-epsilon\n"
        "/a.log:7:match two\n"
        "/a.log-8-zeta\n"
        "--\n"
        "/b.log-1-no\n"
        "/b.log:2:match here"
    )
    # -A/-B override -C; adjacent groups merge without a separator
    assert t["grep"](pattern="match", path="/a.log", output_mode="content", **{"-A": 3}) == (
        "/a.log:3:match one\n/a.log-4-gamma\n/a.log-5-delta\n/a.log-6-epsilon\n"
        "/a.log:7:match two\n/a.log-8-zeta"
    )
    assert t["grep"](pattern="two", path="/a.log", output_mode="content", **{"-B": 1, "-C": 3}) == (
        "/a.log-6-epsilon\n/a.log:7:match two\n/a.log-8-zeta"
    )


def test_grep_pages_with_head_limit_and_offset(
    workspace: Workspace, t: dict[str, ToolFunction]
) -> None:
    for name in "abc":
        workspace.write_text(f"/{name}.txt", "hit\nhit\n")
    assert t["grep"](pattern="hit", head_limit=2) == (
        "/a.txt\n/b.txt\n... 1 more file; call grep again with offset=2 to see the next page"
    )
    assert t["grep"](pattern="hit", head_limit=2, offset=2) == "/c.txt"
    assert t["grep"](pattern="hit", output_mode="content", head_limit=4, offset=1) == (
        "/a.txt:2:hit\n/b.txt:1:hit\n/b.txt:2:hit\n/c.txt:1:hit\n"
        "... 1 more line; call grep again with offset=5 to see the next page"
    )
    assert t["grep"](pattern="hit", output_mode="count", head_limit=0) == (
        "/a.txt:2\n/b.txt:2\n/c.txt:2"
    )
    assert t["grep"](pattern="hit", offset=3) == (
        "Error: offset 3 is past the end of the results (3 files); use an offset from 0 to 2"
    )


def test_grep_names_skipped_binary_files_in_a_final_note(
    workspace: Workspace, t: dict[str, ToolFunction]
) -> None:
    workspace.write_text("/a.txt", "needle\n")
    workspace.write_bytes("/blob.bin", b"needle\x00\x01")
    workspace.write_bytes("/latin1.txt", b"needle caf\xe9\n")  # invalid UTF-8 is still searched
    assert t["grep"](pattern="needle", head_limit=1) == (
        "/a.txt\n"
        "(skipped 1 binary file: /blob.bin)\n"
        "... 1 more file; call grep again with offset=1 to see the next page"
    )
    assert t["grep"](pattern="nothing") == (
        "No matches for 'nothing' in / (3 files searched)\n(skipped 1 binary file: /blob.bin)"
    )


def test_grep_bad_patterns_are_errors_within_the_time_limit(
    make_workspace: WorkspaceFactory,
) -> None:
    ws = make_workspace(limits=Limits(regex_timeout=0.2))
    ws.write_text("/a.txt", "a" * 5000 + "!\n")
    grep = tools(ws)["grep"]
    started = time.monotonic()
    out = grep(pattern="(a|aa)+$", output_mode="content")
    assert time.monotonic() - started < 3.0
    assert out == (
        "Error: grep ran past its 0.2 s time limit while searching /a.txt for '(a|aa)+$'; "
        "the pattern may backtrack catastrophically or the search covers too much text: try "
        "a simpler pattern, fixed_strings, or a narrower path or glob"
    )
    assert grep(pattern="foo(") == (
        "Error: invalid regular expression 'foo(': missing ) at position 4; "
        "to search for the text literally, use fixed_strings"
    )
    assert grep(pattern="(a|aa)+$", path="/nope") == (
        "Error: /nope: no such file or directory" + NOT_FOUND_HINT
    )
    assert ws.ls("/")[0].path == "/a.txt" and len(ws.ls("/")) == 1  # nothing written


# -- the LangChain tools, against a real workspace ----------------------------------------


def test_langchain_tools_share_the_implementation(workspace: Workspace) -> None:
    workspace.write_text("/a.log", LOG)
    lc = {tool.name: tool for tool in workspace_tools(workspace)}
    plain = tools(workspace)
    args = {"pattern": "match", "output_mode": "content", "-C": 1, "-i": True}
    assert lc["grep"].invoke(args) == plain["grep"](**args)
    assert lc["grep"].invoke({"pattern": "two", "output_mode": "content", "-B": 1}) == (
        "/a.log-6-epsilon\n/a.log:7:match two"
    )
    assert lc["read_file"].invoke({"file_path": "/a.log", "offset": 7}) == "     8\tzeta"
    assert (
        lc["write_file"]
        .invoke({"file_path": "/tool_inputs/x", "content": "x"})
        .startswith("Error: /tool_inputs/x is in the read-only area /tool_inputs/")
    )


def test_glob_matching_is_time_limited_for_the_whole_call() -> None:
    ws = Workspace("memory://slow-glob", limits=Limits(regex_timeout=0.05))
    for n in range(300):
        ws.write_text(f"/{'abcd' * 50}{n}", "")
    pattern = "*a*b*c*d*a*b*c*d*" + "{*a,*b}" * 10  # 1,024 alternatives, many stars each
    started = time.monotonic()
    out = tools(ws)["glob"](pattern=pattern)
    assert time.monotonic() - started < 10
    assert out == (
        f"Error: matching the glob {pattern!r} ran past its 0.05 s time limit; use a pattern "
        "with fewer '{...}' alternatives, or a narrower path"
    )
    assert (
        tools(ws)["glob"](pattern="*a*a*a*a*a*a*a*b") == "No files match '*a*a*a*a*a*a*a*b' under /"
    )
