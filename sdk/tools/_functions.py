"""The six workspace tools, once, as :class:`ToolFunction` objects bound to a workspace view.

The descriptions are written for the model: when to use the tool, how paths and paging work,
and which folders hold what the conversation shed (read-only).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ctxfs._layout import (
    INPUTS_DIR,
    MEMORIES_DIR,
    RESULTS_DIR,
    SDK_AREAS,
    SESSIONS_DIR,
    TRANSCRIPTS_DIR,
)
from ctxfs._tokens import TokenCounter, as_token_counter
from ctxfs._workspace._results import OutputMode
from ctxfs._workspace._workspace import Workspace
from ctxfs.sandbox import Limits
from ctxfs.tools._args import (
    EditFileArgs,
    GlobArgs,
    GrepArgs,
    LsArgs,
    ToolArgs,
    WriteFileArgs,
    read_file_args,
)
from ctxfs.tools._budget import DEFAULT_MAX_OUTPUT_TOKENS, OutputBudget
from ctxfs.tools._format import format_glob, format_grep, format_ls, format_read, plural
from ctxfs.tools._function import ToolFunction
from ctxfs.tools._names import DEFAULT_NAMES, ToolNames

__all__ = ["ToolSet", "tool_functions"]

_AREA_CONTENTS = {
    RESULTS_DIR: "full text of long tool results shortened in the conversation",
    INPUTS_DIR: "full arguments of shortened tool calls",
    TRANSCRIPTS_DIR: "archived earlier parts of this conversation",
    MEMORIES_DIR: "long-term memory from earlier sessions",
    SESSIONS_DIR: "staged workflows' state and stage outputs",
}


def tool_functions(
    workspace: Workspace,
    *,
    read_only_areas: Iterable[str] = SDK_AREAS,
    max_output_tokens: int | Callable[[], int] | None = None,
    token_counter: TokenCounter | Callable[[str], int] | None = None,
) -> list[ToolFunction]:
    """The agent's file tools as plain callables with JSON schemas.

    The tools are ``ls``, ``read_file``, ``write_file``, ``edit_file``, ``glob`` and ``grep``,
    in that order. They act on ``workspace.view(read_only=read_only_areas)``, so the areas
    the SDK writes (offloaded results and inputs, transcripts) can be read but not changed.
    Each returns a string; failures return a string starting with ``Error:`` instead of
    raising.

    Every answer is at most ``max_output_tokens`` tokens, errors included. ``read_file``,
    ``grep`` (in every output mode), ``glob`` and ``ls`` cut a long page at a line or entry
    boundary and end it with how to go on: the ``offset`` to read or grep from next, or how
    many entries were left out and how to narrow the search.

    Args:
        workspace: The workspace the tools work in.
        read_only_areas: Folders the tools must not write, edit or delete in, on top of the
            workspace's own read-only areas. Defaults to the SDK's areas.
        max_output_tokens: Most tokens one call returns, or a function returning it (asked
            at every call); ``None`` for :data:`~ctxfs.tools.DEFAULT_MAX_OUTPUT_TOKENS`. At least
            :data:`~ctxfs.tools.MIN_OUTPUT_TOKENS`. An integration sets it from the model's
            window, so that reading back what was offloaded never overflows it.
        token_counter: What counts those tokens: a :class:`~ctxfs.TokenCounter` or a
            callable ``str -> int``; ``None`` for a :class:`~ctxfs.TiktokenCounter`.

    Returns:
        The six tools. Use ``[f.openai_spec() for f in tools]`` for an OpenAI-style request.

    Raises:
        ValueError: ``max_output_tokens`` is under the minimum.
    """
    budget = OutputBudget(
        DEFAULT_MAX_OUTPUT_TOKENS if max_output_tokens is None else max_output_tokens,
        as_token_counter(token_counter),
    )
    view = workspace.view(read_only=read_only_areas)
    return ToolSet(view, budget).functions()


class ToolSet:
    """The implementations, closed over one workspace view and one output budget.

    Each method takes the validated arguments (Python field names) and returns the text the
    model sees, or raises; :class:`ToolFunction` turns what it raises into ``Error:`` text.
    ``names`` are the tool names the texts send the model to (paging notes), for a server
    that serves the tools under other names.
    """

    def __init__(
        self, workspace: Workspace, budget: OutputBudget, names: ToolNames = DEFAULT_NAMES
    ) -> None:
        self.ws = workspace
        self.limits: Limits = workspace.limits
        self.budget = budget
        self.names = names

    def functions(self) -> list[ToolFunction]:
        limits = self.limits
        areas = _areas_note(self.ws.read_only)
        tokens = self.budget.described
        read_text = _READ_FILE.format(
            lines=limits.default_read_lines,
            line_chars=limits.max_line_chars,
            chars=limits.max_read_chars,
            tokens=tokens,
        )
        grep_text = _GREP.format(timeout=f"{limits.regex_timeout:g}", tokens=tokens)
        specs: list[tuple[str, str, type[ToolArgs], Callable[..., str]]] = [
            ("ls", _LS.format(cap=limits.max_glob_results, tokens=tokens), LsArgs, self.ls),
            (
                "read_file",
                read_text + areas,
                read_file_args(limits.default_read_lines),
                self.read_file,
            ),
            ("write_file", _WRITE_FILE, WriteFileArgs, self.write_file),
            ("edit_file", _EDIT_FILE, EditFileArgs, self.edit_file),
            (
                "glob",
                _GLOB.format(cap=limits.max_glob_results, tokens=tokens),
                GlobArgs,
                self.glob,
            ),
            ("grep", grep_text, GrepArgs, self.grep),
        ]

        def clip(text: str) -> str:
            return self.budget.fixed().clip(text)

        return [
            ToolFunction(name, _unwrap(text), args, run, clip_output=clip)
            for name, text, args, run in specs
        ]

    def ls(self, path: str, offset: int = 0) -> str:
        entries = self.ws.ls(path)
        cap = self.limits.max_glob_results
        budget = self.budget.fixed()
        return format_ls(self.ws.resolve(path), entries, cap, budget, self.names, offset)

    def read_file(self, file_path: str, offset: int, limit: int, column: int = 0) -> str:
        budget = self.budget.fixed()
        page = self.ws.read_lines(
            file_path, offset, limit, column=column, max_chars=budget.max_chars
        )
        return format_read(
            page, max_read_chars=self.limits.max_read_chars, budget=budget, names=self.names
        )

    def write_file(self, file_path: str, content: str) -> str:
        existed = self.ws.exists(file_path)
        info = self.ws.write_text(file_path, content)
        verb = "Overwrote" if existed else "Created"
        return f"{verb} {info.path} ({plural(info.size or 0, 'byte')})"

    def edit_file(self, file_path: str, old_string: str, new_string: str, replace_all: bool) -> str:
        result = self.ws.edit(file_path, old_string, new_string, replace_all=replace_all)
        return f"Edited {result.path}: replaced {plural(result.replacements, 'occurrence')}"

    def glob(self, pattern: str, path: str, offset: int = 0) -> str:
        result = self.ws.glob(pattern, path, limit=offset + self.limits.max_glob_results)
        path = self.ws.resolve(path)
        budget = self.budget.fixed()
        return format_glob(
            result, pattern=pattern, path=path, budget=budget, names=self.names, offset=offset
        )

    def grep(
        self,
        pattern: str,
        path: str,
        glob: str | None,
        output_mode: OutputMode,
        before: int,
        after: int,
        context: int,
        line_numbers: bool,
        ignore_case: bool,
        head_limit: int,
        offset: int,
        multiline: bool,
        fixed_strings: bool,
    ) -> str:
        # -A/-B override -C, as in rg; 0 is their default, so a given 0 does not override.
        before, after = before or context, after or context
        result = self.ws.grep(
            pattern,
            path,
            glob=glob,
            fixed_strings=fixed_strings,
            ignore_case=ignore_case,
            multiline=multiline,
            output_mode=output_mode,
            before=before,
            after=after,
        )
        return format_grep(
            result,
            pattern=pattern,
            path=self.ws.resolve(path),
            head_limit=head_limit,
            offset=offset,
            line_numbers=line_numbers,
            separators=before > 0 or after > 0,
            budget=self.budget.fixed(),
            names=self.names,
        )


def _unwrap(text: str) -> str:
    """Join the hard-wrapped lines of each paragraph; keep ``- `` list items on their own."""
    paragraphs = []
    for paragraph in text.split("\n\n"):
        items: list[str] = []
        for line in paragraph.splitlines():
            if items and not line.startswith("- "):
                items[-1] += " " + line.strip()
            else:
                items.append(line)
        paragraphs.append("\n".join(items))
    return "\n\n".join(paragraphs)


def _areas_note(read_only: Iterable[str]) -> str:
    lines = []
    for area in read_only:
        what = _AREA_CONTENTS.get(area)
        lines.append(f"- {area}/: {what}" if what else f"- {area}/")
    if not lines:
        return ""
    return "\n\nRead-only folders kept by the system:\n" + "\n".join(lines)


# Every request pays these texts (issue 26: the six cost at most 1,400 tokens with their
# schemas; tests/sdk/test_tools_cost.py measures them). What stays is what the recorded runs'
# tool use shows models need: paging (offset is given in about a quarter of the reads), the
# edit rules (most failed edits there are an old_string not found, often copied with the
# line-number prefix, or found several times), grep's output modes and context lines, and
# where the shortened text of the conversation is read back from.

_LS = """\
List a folder: one absolute path per line, folders end with '/'. Start with ls('/'); glob
finds files by name, grep searches their contents. Paged: at most {cap} entries and {tokens}
from offset; the last line gives the next offset."""

_READ_FILE = """\
Read a text file. Lines are numbered like `cat -n` (number, tab, line; the prefix is not part
of the file). Reads {lines} lines from offset (0-based) unless limit says otherwise; a page
stops before {tokens}, and lines over {line_chars} characters are clipped with the column to
go on from, a page at a time. When more remains, the last line gives the offset to read from
next.

When the conversation says a tool result, a tool argument or earlier messages were saved to
a file, read it (or grep it) to get the full text back."""

_WRITE_FILE = """\
Write a whole text file, creating missing folders; an existing file is overwritten. The answer
says 'Created' or 'Overwrote'. To change part of a file, use edit_file."""

_EDIT_FILE = """\
Replace exact text in a file. old_string must match exactly, whitespace included: copy it
from read_file output without the line-number prefix. It must occur once: add surrounding
lines to make it unique, or set replace_all=true. The answer says how many were replaced."""

_GLOB = """\
Find files by name pattern ('**/*.py', '*.md', 'src/**/*.{{ts,tsx}}'): matching paths, one per
line, sorted. A pattern without '/' matches names at any depth; one with '/' matches paths
relative to path. Names starting with '.' match only if the pattern has the dot. Paged: at
most {cap} paths and {tokens} from offset; the last line gives the next offset."""

_GREP = """\
Search file contents with a regular expression (Python `regex` syntax; escape special
characters, or set fixed_strings=true for literal text), like ripgrep. path is a folder
(recursive) or a file; glob filters the files.

output_mode:
- 'files_with_matches' (default): matching paths
- 'content': path:line:text; context lines as path-line-text, '--' between groups
- 'count': path:count

Paged: head_limit entries (default 250) from offset, at most {tokens}; the last line gives
the next offset. Binary and too large files are skipped with a note; long lines are
clipped. Under a {timeout}-second time limit: if it is hit, simplify the pattern or narrow the
path. Grep /tool_results and /transcripts to find what earlier tools returned or was said."""
