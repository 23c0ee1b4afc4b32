"""Recoverability, followed literally: whatever ctxfs tells the model about where content went
(an offload pointer, a search hit, a paging note), followed with the tools the model has,
gives that very content back.

Invariant 1 says the workspace holds every byte; these tests check the way back to it as the
model walks it: the paths, line numbers, message numbers and offsets named in the texts it
sees, given to the tool functions as they are named.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxfs import ContextEngine, ContextPolicy, Limits, TiktokenCounter, Workspace
from ctxfs._pointers._pointer import result_pointer
from ctxfs.tools import tool_functions
from ctxfs.tools._budget import OutputBudget
from ctxfs.tools._history import history_functions

_fresh = itertools.count()
_counter = TiktokenCounter()


def _workspace() -> Workspace:
    return Workspace(f"memory://recovery-{next(_fresh)}")


def _tools(ws: Workspace, tokens: int = 4_000) -> dict[str, Callable[..., str]]:
    tools = tool_functions(ws, max_output_tokens=tokens, token_counter=_counter)
    history = history_functions(ws, OutputBudget(tokens, _counter), thread_id=None)
    return {t.name: t for t in [*tools, *history]}


def _history(ws: Workspace, thread_id: str, tokens: int = 4_000) -> dict[str, Callable[..., str]]:
    found = history_functions(ws, OutputBudget(tokens, _counter), thread_id=thread_id)
    return {t.name: t for t in found}


# -- history_search ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "thread_id", ["t", "main", "3f2a6c1e-8d4b-4c1a-9e2f-0b7d5a9c1e23", "odd id/ü", ""]
)
def test_history_search_of_a_thread_finds_its_offloaded_results(thread_id: str) -> None:
    """The search scoped to a thread looks where that thread's results were saved: a plain
    thread id names its results folder as it is (``/tool_results/main``), while its
    transcript folder is hashed (``/transcripts/main-<16 hex>``)."""
    ws = _workspace()
    engine = ContextEngine(ws, ContextPolicy(max_input_tokens=20_000))
    text = "\n".join(f"row {i} zebraword" for i in range(2_000))
    pointer = engine.offload_tool_result(
        ToolMessage(text, tool_call_id="c1", name="bash"), thread_id=thread_id
    )
    path = re.search(r"saved to (\S+)\.\n", str(pointer.content))
    assert path is not None
    found = _history(ws, thread_id)["history_search"](query="zebraword")
    assert found.startswith(f"{path.group(1)}:1: row 0 zebraword"), found


_line_breaks = st.sampled_from(["\n", "\r\n", "\r", "\u2028", "\u2029", "\x0b", "\x0c", "\x85"])
_words = st.sampled_from(["alpha", "beta", "é", "e\u0301", "👩‍💻", "\t", " ", "x" * 30])


@st.composite
def _odd_text(draw: st.DrawFn) -> tuple[str, int]:
    """A text of words and line breaks of every kind, and the position of its one 'zebra'."""
    pieces = draw(st.lists(st.one_of(_words, _line_breaks), max_size=40))
    where = draw(st.integers(0, len(pieces)))
    pieces.insert(where, " zebra ")
    if draw(st.booleans()):
        pieces.append("\n")
    return "".join(pieces), where


@settings(max_examples=60, deadline=None)
@given(_odd_text())
def test_a_file_hit_names_the_line_read_file_and_grep_show(drawn: tuple[str, int]) -> None:
    """history_search's ``path:line`` is the line read_file shows at ``offset=line-1`` and
    grep numbers the same: lines end at ``\\n`` only, whatever other breaks they hold."""
    text, _ = drawn
    ws = _workspace()
    ws.write_text("/tool_results/t/c1.txt", text)
    tools = _tools(ws)
    found = tools["history_search"](query="zebra")
    hit = re.match(r"(/tool_results/t/c1\.txt):(\d+): ", found)
    assert hit is not None, found
    line = int(hit.group(2))
    page = tools["read_file"](file_path=hit.group(1), offset=line - 1, limit=1)
    assert re.match(rf" *{line}\t", page), page
    assert "zebra" in page.split("\n", 1)[0]
    grep = tools["grep"](pattern="zebra", path=hit.group(1), output_mode="content")
    assert grep.startswith(f"{hit.group(1)}:{line}:"), grep


# -- history_read -----------------------------------------------------------------------------

_ENTRY = re.compile(r" *(\d+)\t(.*)", re.S)
_FROM = re.compile(r"\[from character (\d+)\] ", re.S)
_CLIPPED = re.compile(
    r"(.*) … \[line clipped: [\d,]+ chars; call (\w+) with offset=(\d+),(?: limit=1,)? "
    r"column=(\d+) to read on in this line\]",
    re.S,
)


def _entry(raw: str) -> tuple[int, str, int | None, int]:
    """An output line ``n<TAB>text``: its number, its text, the column to read on from when
    the line was clipped, and the column the text starts at."""
    found = _ENTRY.fullmatch(raw)
    assert found is not None, raw
    number, text = int(found.group(1)), found.group(2)
    clipped = _CLIPPED.fullmatch(text)
    column = None
    if clipped is not None:
        text, column = clipped.group(1), int(clipped.group(4))
    start = _FROM.match(text)
    if start is None:
        return number, text, column, 0
    return number, text[start.end() :], column, int(start.group(1))


class _Lines:
    """Pieces of lines as pages showed them, each from a column; put together at the end."""

    def __init__(self) -> None:
        self.pieces: dict[int, dict[int, str]] = {}

    def put(self, number: int, text: str, start: int) -> None:
        self.pieces.setdefault(number, {})[start] = text

    def whole(self) -> list[str]:
        numbers = sorted(self.pieces)
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers))) if numbers else True
        out = []
        for number in numbers:
            pieces, line, at = self.pieces[number], "", 0
            while at in pieces:
                line += pieces[at]
                if not pieces[at]:
                    break
                at += len(pieces[at])
            out.append(line)
        return out


def _read_message(read: Callable[..., str], segment: str, message: int) -> list[str]:
    """Every line of an archived message, read with history_read from the first page on,
    each next call as the last page said."""
    lines = _Lines()
    kwargs: dict[str, int] = {}
    for _ in range(10_000):
        page = read(segment=segment, message=message, **kwargs).split("\n")
        assert page[0].startswith(f"[{segment} message {message} "), page[0]
        body, note = page[1:], ""
        if body and body[-1].startswith("[call history_read"):
            body, note = body[:-1], body[-1]
        for raw in body:
            number, text, column, start = _entry(raw)
            lines.put(number, text, start)
            if column is not None:
                note = f"[call history_read with offset={number - 1}, column={column}]"
        if not note:
            break
        found = re.fullmatch(r"\[call history_read with offset=(\d+)(?:, column=(\d+))?.*\]", note)
        assert found is not None, note
        kwargs = {"offset": int(found.group(1))}
        if found.group(2):
            kwargs["column"] = int(found.group(2))
        assert body, f"no progress: {page}"
    else:
        raise AssertionError("history_read never got to the end")
    return lines.whole()


def _archive(ws: Workspace, messages: list[BaseMessage], thread_id: str = "t") -> str:
    """Archives ``messages`` (after a system message) as a thread's first segment; its path."""
    engine = ContextEngine(ws, ContextPolicy(max_input_tokens=4_000))
    history: list[BaseMessage] = [SystemMessage("sys", id="s"), *messages]
    for n in range(8):
        history += [HumanMessage(f"go {n} " * 100, id=f"g{n}"), AIMessage("ok " * 300, id=f"k{n}")]
    engine.compact(history, thread_id=thread_id, force=True)
    return next(p for p in ws.glob("**/*.jsonl", "/transcripts").paths if "0001" in p)


@pytest.mark.parametrize("tokens", [500, 2_000])
def test_history_read_reads_a_line_longer_than_a_page_piece_by_piece(tokens: int) -> None:
    """A message holding one line over the page budget (a one-line JSON result) is read to
    its last character by following history_read's notes: the page shows the line in part
    and says from which column to go on, instead of only the header, again and again."""
    ws = _workspace()
    big = '{"rows": [' + ", ".join(f'{{"id": {i}, "name": "né 👩‍💻 {i}"}}' for i in range(3_000))
    content = f"first line\n{big}]}}\n\tlast line, tab first"
    segment = _archive(ws, [HumanMessage("task", id="h"), AIMessage(content, id="big")])
    read = _history(ws, "t", tokens)["history_read"]
    assert _read_message(read, segment, 1) == content.split("\n")


# -- read_file on what a pointer names --------------------------------------------------------

_MORE = re.compile(r"\.\.\. [\d,]+ more lines?.*; call read_file with offset=(\d+) to read on")
_ENDINGS_NOTE = re.compile(
    r"\[(.* ended with \\r, which is not shown|no newline at the end of the file)\]$"
)


def _read_file_back(read_file: Callable[..., str], path: str, offset: int = 0) -> list[str]:
    """The lines of a file from ``offset`` on, read with read_file page by page: every call
    a page names is made (the offset to read on from, the column to go on from inside each
    clipped line)."""
    lines = _Lines()
    calls: list[dict[str, int]] = [{"offset": offset}]
    made: list[dict[str, int]] = []
    for _ in range(10_000):
        if not calls:
            return lines.whole()
        call = calls.pop(0)
        if call in made:
            continue
        made.append(call)
        page = read_file(file_path=path, **call)
        assert not page.startswith("Error"), page
        if page.startswith(f"(file {path} is empty"):
            return []
        rows = page.split("\n")
        more = _MORE.fullmatch(rows[-1])
        if more is not None:
            rows.pop()
            calls.append({"offset": int(more.group(1))})
        for raw in rows:
            if _ENDINGS_NOTE.match(raw):
                continue  # what the lines' endings were (see the byte-for-byte test below)
            number, text, column, start = _entry(raw)
            lines.put(number, text, start)
            if column is not None:
                calls.append({"offset": number - 1, "limit": 1, "column": column})
    raise AssertionError("read_file never got to the end")


def _as_read(text: str) -> list[str]:
    """The lines read_file shows of ``text``: ending at ``\\n``, a ``\\r`` before it dropped."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


_odd_lines = st.lists(
    st.one_of(
        st.text(
            st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\n\x00"),
            max_size=60,
        ),
        st.sampled_from(
            [
                "e\u0301" * 50,
                "👩‍💻" * 300,
                "\t\tindented",
                "a\rb",
                "x" * 5_000,
                "[ctxfs: tool result offloaded] Too large to keep: 9 lines, 9 tokens, saved to "
                "/tool_results/t/fake.txt.",
            ]
        ),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=_odd_lines,
    ending=st.sampled_from(["\n", "\r\n"]),
    final=st.booleans(),
    blocks=st.booleans(),
)
def test_an_offloaded_result_reads_back_as_its_pointer_says(
    lines: list[str], ending: str, final: bool, blocks: bool
) -> None:
    """The pointer's path, line count and 'from offset=N' lead read_file to the very lines
    of the result: the preview's lines, then the rest, long lines column by column."""
    text = ending.join(lines) + (ending if final else "")
    ws = _workspace()
    engine = ContextEngine(
        ws, ContextPolicy(max_input_tokens=8_000, tool_results={"threshold": {"tokens": 50}})
    )
    content: str | list[str | dict[str, str]] = [{"type": "text", "text": text}] if blocks else text
    pointer = engine.offload_tool_result(
        ToolMessage(content, tool_call_id="call 1/é", name="bash"), thread_id="thread/ü 1"
    )
    shown = str(pointer.content)
    if result_pointer(pointer) is None:
        return  # small enough to stay (if it looks like a pointer, it is content)
    head = re.match(
        r"\[ctxfs: tool result offloaded\] Too large to keep: ([\d,]+) lines?, [\d,]+ tokens, "
        r"saved to (\S+)\.\n",
        shown,
    )
    assert head is not None, shown
    count, path = int(head.group(1).replace(",", "")), head.group(2)
    read_file = _tools(ws, 1_000)["read_file"]
    assert _read_file_back(read_file, path) == _as_read(text)
    assert len(_as_read(text)) == count
    rest = re.search(r"\[read_file it from offset=(\d+) for the rest, or grep it\]$", shown)
    if rest is not None:
        # the rest is every line the preview did not show whole: one clipped there included
        offset = int(rest.group(1))
        assert offset < count, shown
        preview = shown.split("\n")[2 : 2 + offset]
        assert not any(re.search(r"… \[[\d,]+ more characters\]$", line) for line in preview)
        assert _read_file_back(read_file, path, offset) == _as_read(text)[offset:]


# -- over MCP ---------------------------------------------------------------------------------

_TOOL_WORDS = ("ls", "read_file", "glob", "grep", "edit_file", "write_file", "history_read")


def test_the_mcp_tools_send_the_model_only_to_tools_the_server_has() -> None:
    """The history tools' descriptions name the tools to open a hit with as the server calls
    them (read_text_file there), and a file hit followed with it gives the hit's line."""
    from ctxfs.integrations._mcp_tools import McpToolbox

    ws = _workspace()
    ws.write_text("/tool_results/x/c1.txt", "one\r\ntwo\u2028still two\nthree zebra\n")
    box = McpToolbox(ws)
    names = {tool.name for tool in box.tools}
    for tool in box.tools:
        for word in _TOOL_WORDS:
            sent = rf"\b(?:with|call|use|read|open it with) {word}\b"
            if re.search(sent, tool.function.description):
                assert word in names, (tool.name, word)
    hit = box.call("history_search", {"query": "zebra"}).text
    found = re.match(r"(\S+):(\d+): three zebra$", hit)
    assert found is not None, hit
    page = box.call("read_text_file", {"path": found.group(1), "offset": int(found.group(2)) - 1})
    assert page.text == f"{found.group(2):>6}\tthree zebra"


_PAGE_LINE = re.compile(r"^ *(\d+)\t(.*)$")
_ENDED = re.compile(r"^\[(.*) ended with \\r, which is not shown\]$")
_NEXT = re.compile(r"call read_file with offset=(\d+) to read on$")


def _numbers(which: str, page: list[int]) -> set[int]:
    if which == "every line shown":
        return set(page)
    found: set[int] = set()
    for run in which.split(" ", 1)[1].split(", "):
        first, _, last = run.partition("-")
        found.update(range(int(first), int(last or first) + 1))
    return found


def _bytes_back(read_file: Callable[..., str], path: str, limit: int) -> bytes:
    """The file as read_file's pages show it, followed page by page, rebuilt with what their
    notes say about line endings."""
    lines: dict[int, str] = {}
    carriage: set[int] = set()
    final = True
    offset: int | None = 0
    while offset is not None:
        page = read_file(file_path=path, offset=offset, limit=limit).split("\n")
        numbers = []
        offset = None
        for row in page:
            if (line := _PAGE_LINE.match(row)) is not None:
                numbers.append(int(line.group(1)))
                lines[int(line.group(1))] = line.group(2)
            elif (ended := _ENDED.match(row)) is not None:
                carriage |= _numbers(ended.group(1), numbers)
            elif row == "[no newline at the end of the file]":
                final = False
            elif (more := _NEXT.search(row)) is not None:
                offset = int(more.group(1))
    text = ""
    for number in sorted(lines):
        last = number == max(lines)
        text += lines[number] + ("\r" if number in carriage else "")
        text += "" if last and not final else "\n"
    return text.encode()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(
        st.tuples(
            st.text(
                st.characters(
                    codec="utf-8", exclude_categories=("Cs",), exclude_characters="\n\r\x00"
                ),
                max_size=12,
            ),
            st.sampled_from(["\n", "\r\n"]),
        ),
        min_size=1,
        max_size=30,
    ),
    last=st.sampled_from(["", "\r", "ends"]),
    limit=st.integers(1, 12),
)
def test_read_file_pages_and_their_notes_give_the_file_back_byte_for_byte(
    lines: list[tuple[str, str]], last: str, limit: int
) -> None:
    """read_file shows lines without their endings; its notes say which ended with \\r and
    whether the last one has a newline, so the pages give back every byte (CRLF, a lone \\r
    at the end, no final newline), not a normalised copy."""
    text = "".join(line + ending for line, ending in lines)
    if last == "ends":
        text = text.removesuffix("\n")  # no newline at the end (a \r may stay)
    elif last == "\r":
        text += "tail\r"
    ws = _workspace()
    ws.write_text("/f.txt", text)
    read_file = _tools(ws, 4_000)["read_file"]
    assert _bytes_back(read_file, "/f.txt", limit) == text.encode()


def test_a_line_shown_in_part_leaves_its_ending_to_the_page_that_shows_its_end() -> None:
    """Read on from a column, a long line comes in pieces as large as a page: only the piece
    that shows its end says how it ended."""
    ws = Workspace("memory://ending-of-a-long-line", limits=Limits(max_line_chars=100))
    ws.write_text("/f.txt", "short\r\n" + "x" * 60_000 + "\r")
    read_file = _tools(ws, 4_000)["read_file"]
    first = read_file(file_path="/f.txt")
    assert "[line 1 ended with \\r, which is not shown]" in first
    assert "no newline" not in first and "line 2 ended" not in first
    pages, column = [], 100
    while column is not None:
        page = read_file(file_path="/f.txt", offset=1, limit=1, column=column)
        pages.append(page)
        found = re.search(r"column=(\d+) to read on in this line", page)
        column = int(found.group(1)) if found else None
    assert len(pages) > 1  # the line is longer than a page
    assert all(x.count("x") > 100 for x in pages)  # each piece is larger than a clipped line
    for middle in pages[:-1]:
        assert "ended with" not in middle and "no newline" not in middle
    assert pages[-1].endswith(
        "[every line shown ended with \\r, which is not shown]\n[no newline at the end of the file]"
    )


def test_a_long_line_is_read_through_in_pieces_as_large_as_a_page() -> None:
    """A 500,000-character line (minified JSON, a base64 blob) comes back byte-exact in a
    handful of calls, not in 2,000-character pieces (250 calls)."""
    ws = Workspace("memory://one-long-line")
    line = "".join(chr(97 + i % 26) + ("," if i % 7 == 0 else "") for i in range(500_000))
    ws.write_text("/blob.json", line + "\n")
    read_file = _tools(ws, 25_000)["read_file"]
    got, calls, column = "", 0, 0
    while True:
        page = read_file(file_path="/blob.json", offset=0, limit=1, column=column)
        calls += 1
        body = page.split("\t", 1)[1].removeprefix(f"[from character {column}] ")
        found = re.search(
            r" … \[line clipped: \d+ chars; call read_file with offset=0, limit=1, "
            r"column=(\d+) to read on in this line\]",
            body,
        )
        if found is None:
            got += body.split("\n", 1)[0]
            break
        got += body[: found.start()]
        column = int(found.group(1))
    assert got == line
    assert calls <= 12, calls


# -- the Markdown twin and history_read ---------------------------------------------------------

_HEADING = re.compile(
    r"## Message (\d+) \(#(\d+) in this segment\): (\w+)[^\n]*\n\n(`{3,})\n([^\n]*)"
)


def test_each_markdown_heading_names_the_number_history_read_takes() -> None:
    """A segment's .md numbers its messages as the thread does (the summary's 'messages
    17-32 are in segment-0002.md' too), and history_read takes a message's number in the
    segment: each heading gives both, and history_read on the second reads that message.
    The headings gave only the thread's number; read with history_read it named the next
    message of the segment, or none."""
    ws = _workspace()
    engine = ContextEngine(ws, ContextPolicy(max_input_tokens=4_000))
    history: list[BaseMessage] = [SystemMessage("sys", id="s"), HumanMessage("task", id="h")]
    for n in range(16):
        history += [HumanMessage(f"ask {n} " * 80, id=f"g{n}"), AIMessage(f"ok {n} " * 200)]
        if n in (7, 15):
            history = engine.compact(history, thread_id="t", force=True).messages
    tools = _tools(ws)
    segments = sorted(p for p in ws.glob("**/*.md", "/transcripts").paths)
    assert len(segments) == 2
    seen = 0
    for md in segments:
        jsonl = md.removesuffix(".md") + ".jsonl"
        for found in _HEADING.finditer(ws.read_text(md)):
            thread_number, number, role = (int(found.group(1)), int(found.group(2)), found[3])
            page = tools["history_read"](segment=jsonl, message=number)
            assert page.startswith(f"[{jsonl} message {number} ({role})"), page
            first = re.search(r"\n *1\t(.*)", page)
            assert first is not None, page
            assert first.group(1) == found.group(5), page
            seen += 1
            assert thread_number >= number
    assert seen >= 16
