"""ls and glob answers are bounded in tokens, and their paging notes lead to every entry."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxfs import Limits, TiktokenCounter, Workspace
from ctxfs.tools import MIN_OUTPUT_TOKENS, ToolFunction, tool_functions

_fresh = itertools.count()
_COUNTER = TiktokenCounter()
_NEXT = re.compile(
    r"^\.\.\. \d+ more .*; call (ls|glob) again with offset=(\d+) to see the next page"
)


def pages(tool: ToolFunction, budget: int, **arguments: object) -> list[str]:
    """Every entry, following the notes as a model would; each page within the budget."""
    seen: list[str] = []
    offset = 0
    while True:
        out = tool(**arguments, offset=offset)
        assert not out.startswith("Error"), out
        assert _COUNTER.count_text(out) <= budget
        *rows, last = out.split("\n")
        note = _NEXT.match(last)
        if note is None:
            rows.append(last)
        seen += rows
        if note is None:
            return seen
        assert int(note[2]) == offset + len(rows)  # the next page starts where this one ended
        offset = int(note[2])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    names=st.sets(st.text(alphabet="abcxyz-_é漢0123456789", min_size=1, max_size=40), max_size=120),
    folders=st.integers(0, 5),
    budget=st.integers(MIN_OUTPUT_TOKENS, 400),
    cap=st.integers(1, 50),
)
def test_following_the_notes_lists_every_entry_once_within_budget(
    names: set[str], folders: int, budget: int, cap: int
) -> None:
    ws = Workspace(f"memory://pages{next(_fresh)}", limits=Limits(max_glob_results=cap))
    for name in names:
        ws.write_text(f"/d/{name}.txt", "")
    for n in range(folders):
        ws.write_text(f"/d/sub{n}/x.txt", "")
    ws.write_text("/d/z.md", "")  # the folder exists, whatever was drawn
    tools = {f.name: f for f in tool_functions(ws, max_output_tokens=budget)}
    listed = pages(tools["ls"], budget, path="/d")
    expected = [f"{e.path}/" if e.is_dir else e.path for e in ws.ls("/d")]
    assert listed == expected
    found = pages(tools["glob"], budget, pattern="*.txt", path="/d")
    matches = list(ws.glob("*.txt", "/d", limit=10_000).paths)
    assert found == (matches or ["No files match '*.txt' under /d"])


@pytest.mark.slow
def test_thousands_of_offloaded_files_are_listed_in_bounded_pages(tmp_path: Path) -> None:
    # a local folder: the memory filesystem scans every file it holds on each lookup; each
    # page lists the whole folder again, so the files are as many as it takes for a dozen
    # pages or more
    ws = Workspace(tmp_path)
    folder = "/tool_results/thread-1-4b0a5fefc328e123"
    for n in range(3_000):
        ws.store.write(f"{folder}/call_{n:05d}-e61e4bcd995a72e6.txt", b"x")
    tools = {f.name: f for f in tool_functions(ws, max_output_tokens=4_000)}
    listed = pages(tools["ls"], 4_000, path=folder)
    assert len(listed) == 3_000 == len(set(listed))
    found = pages(tools["glob"], 4_000, pattern="*.txt", path="/tool_results")
    assert found == listed
