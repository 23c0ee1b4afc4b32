"""Every tool answer is within its token budget, and paging with the notes recovers everything.

The recovery tools are exempt from result offloading, so they bound their own output: the
exact texts of the notes that end a page cut by the budget, a property over random files,
trees and budgets (every answer within budget, counted exactly; ``read_file`` paging gives
the file back byte-exact; ``grep`` paging gives back every entry), and the cost of cutting.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxfs import Limits, TiktokenCounter, Workspace, WorkspaceError
from ctxfs._workspace._grep import FileResult, GrepLine
from ctxfs._workspace._results import GrepResult
from ctxfs.tools import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    MIN_OUTPUT_TOKENS,
    ToolFunction,
    tool_functions,
    workspace_tools,
)
from ctxfs.tools._budget import OutputBudget
from ctxfs.tools._format import format_grep

COUNTER = TiktokenCounter()


def tools(workspace: Workspace, max_output_tokens: int | None = None) -> dict[str, ToolFunction]:
    functions = tool_functions(workspace, max_output_tokens=max_output_tokens)
    return {f.name: f for f in functions}


def tokens(text: str) -> int:
    return COUNTER.count_text(text)


@dataclass
class RecordingCounter:
    """Counts like tiktoken, and remembers how many characters it was asked to count."""

    inner: TiktokenCounter = field(default_factory=TiktokenCounter)
    chars: int = 0

    def __call__(self, text: str) -> int:
        self.chars += len(text)
        return self.inner.count_text(text)


# -- the notes that end a page cut by the budget ---------------------------------------------


def test_read_file_stops_at_the_budget_and_gives_the_offset() -> None:
    ws = Workspace("memory://budget-read")
    ws.write_text("/log.txt", "".join(f"line {n}: all systems nominal\n" for n in range(500)))
    out = tools(ws, 100)["read_file"](file_path="/log.txt")
    assert tokens(out) <= 100
    *lines, note = out.split("\n")
    assert lines == [f"{n + 1:>6}\tline {n}: all systems nominal" for n in range(len(lines))]
    assert note == (
        f"... {500 - len(lines)} more lines (this page stopped at the 100-token output limit); "
        f"call read_file with offset={len(lines)} to read on"
    )


def test_read_file_shows_part_of_a_line_too_long_for_the_budget() -> None:
    ws = Workspace("memory://budget-line")
    ws.write_text("/one.txt", "word " * 1000 + "\nnext\n")
    out = tools(ws, 100)["read_file"](file_path="/one.txt")
    assert tokens(out) <= 100
    first, note = out.split("\n")
    match = re.fullmatch(
        r"     1\t((?:word ?)+) … \[line clipped: 5000 chars; call read_file with offset=0, "
        r"limit=1, column=(\d+) to read on in this line\]",
        first,
    )
    assert match is not None and int(match[2]) == len(match[1])
    assert note == "... 1 more line; call read_file with offset=1 to read on"


def test_ls_and_glob_say_how_many_entries_were_left_out() -> None:
    ws = Workspace("memory://budget-ls")
    for n in range(200):
        ws.write_text(f"/data/part-{n:03}.csv", "")
    t = tools(ws, 100)
    listing = t["ls"](path="/data")
    assert tokens(listing) <= 100
    *entries, note = listing.split("\n")
    assert entries == [f"/data/part-{n:03}.csv" for n in range(len(entries))]
    assert note == (
        f"... {200 - len(entries)} more entries (this page stopped at the 100-token output "
        f"limit); call ls again with offset={len(entries)} to see the next page, or list a "
        "subfolder or use glob with a pattern to find specific files"
    )
    found = t["glob"](pattern="*.csv")
    assert tokens(found) <= 100
    *paths, note = found.split("\n")
    assert paths == [f"/data/part-{n:03}.csv" for n in range(len(paths))]
    assert note == (
        f"... {200 - len(paths)} more files match (this page stopped at the 100-token output "
        f"limit); call glob again with offset={len(paths)} to see the next page, or narrow "
        "the pattern or the path"
    )


@pytest.mark.parametrize("mode", ["content", "files_with_matches", "count"])
def test_grep_stops_at_the_budget_in_every_mode_and_head_limit_0_is_still_bounded(
    mode: str,
) -> None:
    ws = Workspace("memory://budget-grep")
    for n in range(100):
        ws.write_text(f"/logs/{n:03}.log", "ok\nERROR disk full\n" * 3)
    grep = tools(ws, 150)["grep"]
    out = grep(pattern="ERROR", output_mode=mode, head_limit=0, offset=2)
    assert tokens(out) <= 150
    *entries, note = out.split("\n")
    total = 300 if mode == "content" else 100
    unit = "lines" if mode == "content" else "files"
    assert note == (
        f"... {total - 2 - len(entries)} more {unit} (this page stopped at the 150-token "
        f"output limit); call grep again with offset={2 + len(entries)} to see the next page, "
        "or narrow the search with path or glob"
    )
    if mode == "content":
        assert entries[0] == "/logs/000.log:6:ERROR disk full"
        assert entries[1] == "/logs/001.log:2:ERROR disk full"


def test_a_head_limit_smaller_than_the_budget_keeps_its_own_note() -> None:
    ws = Workspace("memory://budget-head")
    for n in range(5):
        ws.write_text(f"/{n}.txt", "hit\n")
    assert tools(ws, 1000)["grep"](pattern="hit", head_limit=2) == (
        "/0.txt\n/1.txt\n... 3 more files; call grep again with offset=2 to see the next page"
    )


def test_an_entry_too_long_for_the_budget_is_cut_short_with_a_marker() -> None:
    ws = Workspace("memory://budget-entry", limits=Limits(max_line_chars=5000))
    ws.write_text("/a.txt", "needle " + "x y " * 1000 + "\n")
    ws.write_text("/b.txt", "needle\n")
    out = tools(ws, 100)["grep"](pattern="needle", output_mode="content")
    assert tokens(out) <= 100
    first, note = out.split("\n")
    assert first.startswith("/a.txt:1:needle x y")
    assert first.endswith(" … [cut short to fit the 100-token output limit]")
    assert note == (
        "... 1 more line (this page stopped at the 100-token output limit); call grep again "
        "with offset=1 to see the next page, or narrow the search with path or glob"
    )


def test_errors_are_within_the_budget_too() -> None:
    ws = Workspace("memory://budget-errors")
    t = tools(ws, 100)
    out = t["grep"](pattern="(" * 15_000)
    assert out == (
        f"Error: invalid regular expression {'(' * 100!r}… (15000 chars): groups nested too "
        "deeply; use a flatter pattern, or fixed_strings to search for the text literally"
    )
    assert tokens(out) <= 100
    out = t["grep"](pattern="(" * 50_000)
    assert out.startswith(f"Error: the pattern {'(' * 100!r}… (50000 chars) is longer than")
    assert tokens(out) <= 100
    out = t["ls"](**{f"argument_{n}": n for n in range(500)})  # type: ignore[arg-type]
    assert out.startswith("Error: invalid arguments for ls: unknown argument 'argument_0'")
    assert tokens(out) <= 100
    assert out.endswith("… [output clipped at the 100-token limit of one tool call]")


def test_the_budget_has_a_documented_default_and_minimum() -> None:
    ws = Workspace("memory://budget-default")
    read = tools(ws)["read_file"]
    assert f"a page stops before {DEFAULT_MAX_OUTPUT_TOKENS} tokens" in read.description
    assert DEFAULT_MAX_OUTPUT_TOKENS == 25_000
    with pytest.raises(ValueError, match=f"max_output_tokens must be at least {MIN_OUTPUT_TOKENS}"):
        tool_functions(ws, max_output_tokens=MIN_OUTPUT_TOKENS - 1)
    lc = {t.name: t for t in workspace_tools(ws, max_output_tokens=120, token_counter=len)}
    ws.write_text("/a.txt", "abc\n" * 100)
    out = lc["read_file"].invoke({"file_path": "/a.txt"})
    assert out == (  # counted with the given counter: one token per character
        "     1\tabc\n... 99 more lines (this page stopped at the 120-token output limit); "
        "call read_file with offset=1 to read on"
    )
    assert len(out) <= 120


# -- the floods the issues reported ------------------------------------------------------------


def test_a_default_content_grep_over_megabytes_is_bounded_and_cheap_to_cut() -> None:
    ws = Workspace("memory://budget-flood")
    line = "2024-01-01 12:00:00 INFO request served in 12 ms by worker 7\n"
    for n in range(8):
        ws.write_text(f"/logs/{n}.log", line * 17_000)  # 8 MB in all, every line matching
    counter = RecordingCounter()
    grep = {f.name: f for f in tool_functions(ws, max_output_tokens=2_000, token_counter=counter)}
    out = grep["grep"](pattern="INFO", output_mode="content", head_limit=0)
    assert tokens(out) <= 2_000
    assert out.endswith("or narrow the search with path or glob")
    assert counter.chars < 50_000  # the page was cut without tokenizing the 8 MB


@pytest.mark.slow
def test_a_listing_of_thousands_of_files_is_bounded(tmp_path: Path) -> None:
    # a local folder: the memory filesystem scans every file it holds on each lookup; 3,000
    # names are some 24,000 tokens, twelve times the page
    ws = Workspace(tmp_path, limits=Limits(max_glob_results=100_000))
    for n in range(3_000):
        ws.write_text(f"/many/file-{n:05}.txt", "")
    t = tools(ws, 2_000)
    for out in (t["ls"](path="/many"), t["glob"](pattern="*.txt")):
        assert tokens(out) <= 2_000
        assert "more" in out.rsplit("\n", 1)[-1]


# -- properties ----------------------------------------------------------------------------

_TEXT = st.lists(
    st.one_of(
        st.sampled_from(["a", "b", " ", " " * 60, "\t", "é", "漢字", "🧪", "=" * 40, "\n", "\n"]),
        st.characters(codec="utf-8", exclude_characters="\x00\r\n[…", exclude_categories=("Cs",)),
    ),
    max_size=600,
).map("".join)
_CLIPPED = re.compile(
    r" … \[line clipped: (\d+) chars; call read_file with offset=(\d+), limit=1, "
    r"column=(\d+) to read on in this line\]$"
)
_NEXT = re.compile(
    r"^\.\.\. \d+ more lines?( \(.*\))?; call read_file with offset=(\d+) to read on$"
)


_ENDINGS = re.compile(
    r"\[(.* ended with \\r, which is not shown|no newline at the end of the file)\]$"
)


def _read_back(read: ToolFunction, path: str, budget: int, limit: int) -> list[str]:
    """Read a whole file as a model would: follow every column and offset the notes give."""
    lines: dict[int, str] = {}
    complete: set[int] = set()
    todo = [(0, 0)]  # (offset, column) calls still to make
    done: set[tuple[int, int]] = set()
    while todo:
        offset, column = todo.pop()
        if (offset, column) in done:
            continue  # a column read ends with the same "read on" offset as its page
        done.add((offset, column))
        out = read(file_path=path, offset=offset, limit=limit, column=column)
        assert not out.startswith("Error"), out
        assert tokens(out) <= budget
        if out.startswith(f"(file {path} is empty"):
            return []
        next_offset: int | None = None
        for row in out.split("\n"):
            if (found := _NEXT.match(row)) is not None:
                next_offset = int(found[2])
                continue
            if _ENDINGS.match(row):
                continue  # what the lines' endings were: read back by the recovery tests
            number, text = row.split("\t", 1)
            index = int(number) - 1
            start = 0
            if (prefix := re.match(r"\[from character (\d+)\] ", text)) is not None:
                start = int(prefix[1])
                text = text[prefix.end() :]
            known = lines.get(index, "")
            if index in complete or start < len(known):
                continue  # shown again on a page that began in the line before it
            assert start == len(known), "pieces of a line arrive in order"
            if (clip := _CLIPPED.search(text)) is not None:
                text = text[: clip.start()]
                todo.append((int(clip[2]), int(clip[3])))
            else:
                complete.add(index)
            lines[index] = known + text
        if next_offset is not None:
            todo.insert(0, (next_offset, 0))  # after the pieces of clipped lines
    return [lines[n] for n in range(len(lines))]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=_TEXT,
    budget=st.integers(MIN_OUTPUT_TOKENS, 400),
    limit=st.integers(1, 60),
    line_chars=st.integers(1, 300),
)
def test_read_file_paging_recovers_the_file_byte_exact_within_budget(
    text: str, budget: int, limit: int, line_chars: int
) -> None:
    ws = Workspace("memory://budget-prop", limits=Limits(max_line_chars=line_chars))
    ws.write_text("/f.txt", text)
    lines = _read_back(tools(ws, budget)["read_file"], "/f.txt", budget, limit)
    assert "\n".join(lines) == (text[:-1] if text.endswith("\n") else text)


_NAME = st.text(alphabet="abcxyz.-_é漢", min_size=1, max_size=20).filter(
    lambda n: n not in (".", "..")
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    files=st.dictionaries(
        st.lists(_NAME, min_size=1, max_size=3).map(lambda parts: "/" + "/".join(parts)),
        _TEXT,
        max_size=25,
    ),
    budget=st.integers(MIN_OUTPUT_TOKENS, 600),
    mode=st.sampled_from(["content", "files_with_matches", "count"]),
    context=st.integers(0, 2),
)
def test_every_answer_is_within_budget_and_grep_pages_give_back_every_entry(
    files: dict[str, str], budget: int, mode: str, context: int
) -> None:
    ws = Workspace("memory://budget-tree", limits=Limits(max_line_chars=80))
    for path, content in files.items():
        with contextlib.suppress(WorkspaceError):  # a file where another path needs a folder
            ws.write_text(path, content)
    t = tools(ws, budget)
    for out in (t["ls"](path="/"), t["glob"](pattern="**"), t["glob"](pattern="*a*")):
        assert tokens(out) <= budget
    arguments = {"pattern": "a|漢| ", "output_mode": mode, "-C": context, "head_limit": 0}
    full = ws.grep("a|漢| ", output_mode=mode, before=context, after=context)  # type: ignore[arg-type]
    expected = format_grep(
        full, pattern="a|漢| ", path="/", head_limit=0, offset=0, separators=context > 0
    ).split("\n")
    seen: list[str] = []
    offset = 0
    while True:
        out = t["grep"](**arguments, offset=offset)
        assert tokens(out) <= budget
        rows = out.split("\n")
        note = re.match(r"^\.\.\. \d+ more .*offset=(\d+) to see the next page", rows[-1])
        body = rows[:-1] if note else rows
        seen += [row for row in body if not row.startswith("(skipped")]
        if note is None:
            break
        offset = int(note[1])
    kept = [row for row in expected if not row.startswith("(skipped")]
    if any("[cut short to fit" in row for row in seen):
        return  # an entry longer than the whole budget was shown in part
    if context:  # a page never starts with a group separator
        kept = [row for row in kept if row != "--"]
        seen = [row for row in seen if row != "--"]
    assert seen == kept


# -- the budget itself --------------------------------------------------------------------------


def test_fit_counts_nothing_when_the_byte_bound_proves_it_fits() -> None:
    counter = RecordingCounter()

    class Bounded:
        def count_text(self, text: str) -> int:
            return counter(text)

        def upper_bound(self, text: str) -> int:
            return len(text.encode())

        count_message = count_messages = None

    budget = OutputBudget(1_000, Bounded())  # type: ignore[arg-type]
    shown, text = budget.fit(["short", "lines"], lambda n: ["note"])
    assert (shown, text, counter.chars) == (2, "short\nlines\nnote", 0)


def test_grep_lines_keep_their_order_across_pages() -> None:
    lines = tuple(GrepLine(n, f"hit {n}", True) for n in range(1, 200))
    result = GrepResult(
        output_mode="content", files=(FileResult("/f", match_count=199, lines=lines),), searched=1
    )
    budget = OutputBudget(100, COUNTER)
    first = format_grep(result, pattern="hit", path="/", head_limit=0, offset=0, budget=budget)
    shown = len(first.split("\n")) - 1
    second = format_grep(result, pattern="hit", path="/", head_limit=0, offset=shown, budget=budget)
    assert second.split("\n")[0] == f"/f:{shown + 1}:hit {shown + 1}"
