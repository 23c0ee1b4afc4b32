"""The workspace tools as an MCP server serves them: names and arguments of the reference
filesystem server where they overlap, plus content ``grep`` and paged reads.

Framework-neutral: :class:`McpToolbox` takes a tool name and its arguments and gives back an
:class:`McpAnswer` (text, whether it is an error, the file a large output was saved to), so
everything here is tested without a protocol. :mod:`ctxfs.integrations.mcp` wraps it.

Every answer fits the output budget. The reading tools (``list_directory``,
``read_text_file``, ``read_multiple_files``, ``search_files``, ``grep``) page: their output is
cut at a line or entry boundary and ends with how to go on. The others (an ``edit_file``
diff) are saved in full under ``/tool_results/<thread>/`` when they are over the budget, and
the answer names the file (also an MCP resource) with a preview.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final
from urllib.parse import quote as url_quote

from ctxfs._errors import (
    IsADirectoryPathError,
    NotADirectoryPathError,
    PathNotFoundError,
    SearchTimeoutError,
)
from ctxfs._layout import (
    INPUTS_DIR,
    MEMORIES_DIR,
    RESULTS_DIR,
    SDK_AREAS,
    TRANSCRIPTS_DIR,
    result_path,
)
from ctxfs._tokens import TokenCounter, as_token_counter
from ctxfs._workspace._glob import GlobMatcher, compile_glob
from ctxfs._workspace._quote import quote, shown_path
from ctxfs._workspace._results import GlobResult
from ctxfs._workspace._saving import Unsaved, save_text
from ctxfs._workspace._workspace import Workspace
from ctxfs.integrations import _mcp_args as about
from ctxfs.integrations._mcp_args import (
    EditFileArgs,
    EditOperation,
    ListDirectoryArgs,
    NoArgs,
    PathArgs,
    ReadMultipleFilesArgs,
    ReadTextFileArgs,
    SearchFilesArgs,
    WriteFileArgs,
)
from ctxfs.integrations._mcp_edits import apply_edits, text_of, unified_diff
from ctxfs.integrations._mcp_run import SerializedCounter
from ctxfs.sandbox import MAX_PATH_BYTES, TimeBudget, relative_to
from ctxfs.tools import DEFAULT_MAX_OUTPUT_TOKENS, MIN_OUTPUT_TOKENS, ToolFunction
from ctxfs.tools._args import GrepArgs
from ctxfs.tools._budget import OutputBudget
from ctxfs.tools._format import format_glob, plural
from ctxfs.tools._function import error_text
from ctxfs.tools._functions import ToolSet
from ctxfs.tools._history import history_functions
from ctxfs.tools._names import ToolNames

__all__ = [
    "MCP_NAMES",
    "URI_PREFIX",
    "McpAnswer",
    "McpTool",
    "McpToolbox",
    "apply_edits",
    "resource_uri",
]

MCP_NAMES: Final = ToolNames(
    ls="list_directory", read_file="read_text_file", glob="search_files", grep="grep"
)
"""The tool names the server's texts use (paging notes, next steps in errors)."""

URI_PREFIX: Final = "ctxfs://"
"""Resource URIs are ``ctxfs://`` plus the workspace path: ``ctxfs:///transcripts/...``."""

_TITLES: Final = {"history_search": "Search past messages", "history_read": "Read a past message"}
_PREVIEW_LINES: Final = 20
_PREVIEW_LINE_CHARS: Final = 200
_SEPARATOR: Final = "\n---\n"

_AREA_CONTENTS: Final = {
    RESULTS_DIR: "the full text of long tool results that were shortened in a conversation",
    INPUTS_DIR: "the full arguments of earlier tool calls that were shortened",
    TRANSCRIPTS_DIR: "archived earlier parts of conversations (JSONL and Markdown)",
    MEMORIES_DIR: "long-term memory: what was learned in earlier sessions (JSON and Markdown)",
}


def resource_uri(path: str) -> str:
    """The MCP resource URI of a workspace path: ``ctxfs:///tool_results/t/a.txt``."""
    return URI_PREFIX + url_quote(path, safe="/")


# -- the toolbox ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class McpTool:
    """One tool as the server lists it.

    Attributes:
        function: Name, description, argument schema and implementation.
        title: A short human-readable name.
        read_only: The tool never changes the workspace.
        destructive: The tool may overwrite what is there.
        idempotent: Calling it twice with the same arguments does no more than once.
        paged: Its output is cut to the budget with a note saying how to go on; otherwise
            an output over the budget is saved to a file and the answer points to it.
    """

    function: ToolFunction
    title: str
    read_only: bool
    destructive: bool = False
    idempotent: bool = False
    paged: bool = True

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.function.name


@dataclass(frozen=True, slots=True)
class McpAnswer:
    """What one tool call gives back.

    Attributes:
        text: The text the model sees, within the output budget.
        is_error: The call failed; ``text`` starts with ``Error:`` and says what to do.
        saved_path: Where the whole output was saved, when it was over the budget.
    """

    text: str
    is_error: bool = False
    saved_path: str | None = None


class McpToolbox:
    """The tools an MCP client gets for one workspace, with their budget and read-only areas.

    Example:
        >>> from ctxfs import Workspace
        >>> box = McpToolbox(Workspace("memory://doc"))
        >>> box.call("write_file", {"path": "/a.txt", "content": "one\\ntwo\\n"}).text
        'Created /a.txt (8 bytes)'
        >>> box.call("read_text_file", {"path": "/a.txt", "tail": 1}).text
        '     2\\ttwo'

    Args:
        workspace: The workspace, writable where ctxfs keeps what it saves.
        read_only_areas: Folders the tools must not change, on top of ctxfs's own areas
            (``/tool_results``, ``/tool_inputs``, ``/transcripts``, ``/memories``,
            ``/sessions``); ``"/"`` makes every tool read-only and the writing tools are not
            offered.
        max_output_tokens: Most tokens one answer holds; ``None`` for
            :data:`~ctxfs.tools.DEFAULT_MAX_OUTPUT_TOKENS`.
        token_counter: What counts them; ``None`` for a :class:`~ctxfs.TiktokenCounter`.
        thread_id: Names the folder under ``/tool_results`` where large outputs are saved.

    Raises:
        ValueError: ``max_output_tokens`` is under :data:`~ctxfs.tools.MIN_OUTPUT_TOKENS`.
    """

    def __init__(
        self,
        workspace: Workspace,
        *,
        read_only_areas: Iterable[str] = (),
        max_output_tokens: int | None = None,
        token_counter: TokenCounter | Callable[[str], int] | None = None,
        thread_id: str = "mcp",
    ) -> None:
        self._workspace = workspace
        self._view = workspace.view(read_only=(*SDK_AREAS, *read_only_areas))
        self._counter = SerializedCounter(as_token_counter(token_counter))
        self._budget = OutputBudget(
            DEFAULT_MAX_OUTPUT_TOKENS if max_output_tokens is None else max_output_tokens,
            self._counter,
        )
        self._thread_id = thread_id
        self._set = ToolSet(self._view, self._budget, MCP_NAMES)
        self._history = history_functions(self._view, self._budget, names=MCP_NAMES)
        self._tools = {tool.name: tool for tool in self._build()}

    @property
    def workspace(self) -> Workspace:
        """The view the tools act on (with the read-only areas)."""
        return self._view

    @property
    def max_output_tokens(self) -> int:
        """Most tokens one answer holds."""
        return self._budget.max_tokens

    @property
    def tools(self) -> list[McpTool]:
        """The tools offered, in a fixed order."""
        return list(self._tools.values())

    def call(self, name: str, arguments: Mapping[str, object] | None) -> McpAnswer:
        """Runs one tool; never raises.

        Returns:
            The answer: failures (an unknown tool, bad arguments, a workspace error) are
            answers with ``is_error`` set and a text that says what to do next. Calls from
            several threads run side by side (the token counter guards itself).
        """
        budget = self._budget.fixed()
        tool = self._tools.get(name)
        if tool is None:
            names = ", ".join(self._tools)
            return McpAnswer(
                budget.clip(f"Error: there is no tool {quote(name)}; the tools are: {names}"),
                is_error=True,
            )
        function = tool.function
        validated = function.validate(arguments or {})
        if isinstance(validated, str):
            return McpAnswer(budget.clip(validated), is_error=True)
        try:
            text = function.function(**dict(validated))
        except Exception as exc:  # the client must never see a crash
            return McpAnswer(budget.clip(error_text(exc, names=MCP_NAMES)), is_error=True)
        if tool.paged or budget.fits(text):
            return McpAnswer(budget.clip(text))
        return self._save(tool.name, text, budget)

    # -- the tools --------------------------------------------------------------------------

    def _build(self) -> list[McpTool]:
        limits = self._view.limits
        tokens = self._budget.described
        areas = _areas_note(self._view.read_only)
        tools = [
            McpTool(
                ToolFunction(
                    "list_directory", about.LIST + areas, ListDirectoryArgs, self._list_directory
                ),
                "List directory",
                read_only=True,
            ),
            McpTool(
                ToolFunction(
                    "read_text_file",
                    about.READ.format(
                        lines=limits.default_read_lines,
                        line_chars=limits.max_line_chars,
                        tokens=tokens,
                    ),
                    ReadTextFileArgs,
                    self._read_text_file,
                ),
                "Read text file",
                read_only=True,
            ),
            McpTool(
                ToolFunction(
                    "read_multiple_files",
                    about.READ_MANY.format(tokens=tokens),
                    ReadMultipleFilesArgs,
                    self._read_multiple_files,
                ),
                "Read multiple files",
                read_only=True,
            ),
            McpTool(
                ToolFunction("write_file", about.WRITE + areas, WriteFileArgs, self._write_file),
                "Write file",
                read_only=False,
                destructive=True,
                idempotent=True,
                paged=False,
            ),
            McpTool(
                ToolFunction("edit_file", about.EDIT + areas, EditFileArgs, self._edit_file),
                "Edit file",
                read_only=False,
                destructive=True,
                paged=False,
            ),
            McpTool(
                ToolFunction(
                    "search_files",
                    about.SEARCH.format(cap=limits.max_glob_results, tokens=tokens),
                    SearchFilesArgs,
                    self._search_files,
                ),
                "Search files by name",
                read_only=True,
            ),
            McpTool(
                ToolFunction(
                    "grep",
                    about.GREP.format(
                        timeout=f"{limits.regex_timeout:g}",
                        line_chars=limits.max_line_chars,
                        tokens=tokens,
                    ),
                    GrepArgs,
                    self._set.grep,
                ),
                "Search file contents",
                read_only=True,
            ),
            McpTool(
                ToolFunction("get_file_info", about.INFO, PathArgs, self._get_file_info),
                "Get file info",
                read_only=True,
                paged=False,
            ),
            McpTool(
                ToolFunction(
                    "list_allowed_directories",
                    about.ALLOWED,
                    NoArgs,
                    self._list_allowed_directories,
                ),
                "List allowed directories",
                read_only=True,
                paged=False,
            ),
            # the archive of every thread: an MCP session does not name the conversation
            *(McpTool(f, _TITLES[f.name], read_only=True) for f in self._history),
        ]
        if self._view.is_read_only("/"):
            return [tool for tool in tools if tool.read_only]
        return tools

    def _read_text_file(
        self,
        path: str,
        head: int | None,
        tail: int | None,
        offset: int,
        limit: int | None,
        column: int,
    ) -> str:
        if head is not None and tail is not None:
            raise ValueError("give head or tail, not both")
        if head is not None and limit is not None:
            raise ValueError("head and limit both give the number of lines; give one of them")
        if tail is not None:
            if offset or column or limit is not None:
                raise ValueError(
                    "tail reads the last lines of the file; it cannot be combined with offset, "
                    "limit or column (use offset and limit to read a page from a given line)"
                )
            total = self._view.read_lines(path, 0, 1).total_lines
            offset, limit = max(0, total - tail), tail
        count = head if head is not None else limit
        try:
            return self._set.read_file(
                path, offset, count or self._view.limits.default_read_lines, column
            )
        except IsADirectoryPathError as exc:  # the workspace's message names ctxfs's own ls
            where = exc.path or path
            raise IsADirectoryPathError(
                f"{where} is a directory, not a file; list it with {MCP_NAMES.ls}", path=where
            ) from None

    def _list_directory(self, path: str) -> str:
        try:
            return self._set.ls(path)
        except NotADirectoryPathError as exc:  # the message names ctxfs's own read_file
            where = exc.path or path
            raise NotADirectoryPathError(
                f"{where} is a file, not a directory; read it with {MCP_NAMES.read_file}",
                path=where,
            ) from None

    def _write_file(self, path: str, content: str) -> str:
        return self._set.write_file(path, content)

    def _read_multiple_files(self, paths: list[str]) -> str:
        budget = self._budget.fixed()
        # as asked, but one line (a path with a line break must not forge a file's header),
        # and cut short when no path can be that long
        headers = [
            f"{shown_path(path) if len(path) <= MAX_PATH_BYTES else quote(path)}:" for path in paths
        ]
        overhead = budget.count(_SEPARATOR.join(headers)) + len(paths)
        share = (budget.max_tokens - overhead) // len(paths)
        if share < MIN_OUTPUT_TOKENS and len(paths) == 1:
            raise ValueError(
                f"the path {quote(paths[0])} leaves no room for a page of the file in one "
                f"answer of {budget.max_tokens} tokens; read it with {MCP_NAMES.read_file}"
            )
        if share < MIN_OUTPUT_TOKENS:
            most = max(1, budget.max_tokens // (MIN_OUTPUT_TOKENS + overhead // len(paths) + 1))
            raise ValueError(
                f"{plural(len(paths), 'file')} do not fit one answer of {budget.max_tokens} "
                f"tokens (each needs at least {MIN_OUTPUT_TOKENS}); read at most "
                f"{plural(most, 'file')} per call, or read them one by one with read_text_file"
            )
        reader = ToolSet(self._view, OutputBudget(share, self._counter), MCP_NAMES)
        default_lines = self._view.limits.default_read_lines
        parts = []
        for header, path in zip(headers, paths, strict=True):
            try:
                body = reader.read_file(path, 0, default_lines)
            except Exception as exc:  # one failed file does not stop the others
                body = error_text(exc, names=MCP_NAMES)
            parts.append(f"{header}\n{body}")
        return _SEPARATOR.join(parts)

    def _edit_file(self, path: str, edits: list[EditOperation], dry_run: bool) -> str:
        virtual = self._view.resolve(path)
        if dry_run:
            before = self._view.read_text(virtual)
            after, replaced = apply_edits(virtual, before, edits)
        else:
            applied: list[tuple[str, str, int]] = []

            def change(data: bytes | None) -> bytes:
                if data is None:
                    raise PathNotFoundError(f"{virtual}: no such file or directory", path=virtual)
                text = text_of(virtual, data)
                new, count = apply_edits(virtual, text, edits)
                applied.append((text, new, count))
                return new.encode("utf-8")

            # Applied to exactly the content read: if another writer changed the file in
            # between, the write is refused and the edits are checked again on what it holds.
            self._view.update(virtual, change)
            before, after, replaced = applied[-1]
        diff = unified_diff(virtual, before, after)
        count = plural(replaced, "occurrence")
        if dry_run:
            head = f"Dry run, nothing written: the edits would replace {count} in {virtual}"
        else:
            head = f"Edited {virtual}: replaced {count}"
        return f"{head}\n```diff\n{diff}```"

    def _search_files(self, path: str, pattern: str, exclude_patterns: list[str]) -> str:
        if not exclude_patterns:
            return self._set.glob(pattern, path)
        excluded = [compile_glob(p) for p in exclude_patterns]
        base = self._view.resolve(path)
        found = self._view.glob(pattern, base, limit=sys.maxsize)
        kept = _without(found.paths, base, excluded, TimeBudget(self._view.limits.regex_timeout))
        cap = self._view.limits.max_glob_results
        result = GlobResult(tuple(kept[:cap]), len(kept) > cap, len(kept))
        return format_glob(result, pattern=pattern, path=base, budget=self._budget.fixed())

    def _get_file_info(self, path: str) -> str:
        info = self._view.info(path)
        lines = [f"path: {info.path}", f"type: {info.type}"]
        if info.size is not None and not info.is_dir:
            lines.append(f"size: {plural(info.size, 'byte')}")
        lines.append(f"read-only: {'yes' if self._view.is_read_only(info.path) else 'no'}")
        return "\n".join(lines)

    def _list_allowed_directories(self) -> str:
        lines = ["Allowed directories:", "/ (the workspace root; every path starts at /)"]
        areas = self._view.read_only
        if areas:
            lines.append("Read-only (read, grep and search them; writing there is refused):")
            for area in areas:
                what = _AREA_CONTENTS.get(area)
                lines.append(f"{area.rstrip('/')}/" + (f": {what}" if what else ""))
        return "\n".join(lines)

    # -- large outputs ----------------------------------------------------------------------

    def _save(self, tool: str, text: str, budget: OutputBudget) -> McpAnswer:
        """An output over the budget: saved in full, answered with where and a preview."""
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        first = result_path(self._thread_id, f"{tool}-{digest}", text)
        try:
            path = save_text(self._workspace, first, text)
        except Unsaved as failure:
            note = (
                f"[ctxfs: output cut] The output of {tool} is over the {budget.max_tokens}-token "
                f"limit of one answer and could not be saved in full ({failure.reason}); "
                "it is cut here."
            )
            return McpAnswer(budget.clip(f"{note}\n{text}"))
        lines = text.split("\n")
        header = (
            f"[ctxfs: output saved] The output of {tool} ({plural(len(text), 'character')}, "
            f"{plural(len(lines), 'line')}) is over the {budget.max_tokens}-token limit of one "
            f"answer; it is saved in full to {path} (resource {resource_uri(path)})."
        )
        preview = [_clip(line) for line in lines[:_PREVIEW_LINES]]

        def notes(shown: int) -> list[str]:
            return [
                f"[{MCP_NAMES.read_file} {path} from offset={max(0, shown - 1)} for the rest, "
                f"or {MCP_NAMES.grep} it]"
            ]

        shown, answer = budget.fit([header, *preview], notes)
        if shown == 0:
            answer = budget.clip(header)
        return McpAnswer(answer, saved_path=path)


def _without(
    paths: Sequence[str], base: str, excluded: Sequence[GlobMatcher], budget: TimeBudget
) -> list[str]:
    """The paths none of whose relative path or parent folders an exclude pattern matches."""
    kept = []
    with budget.spend() as deadline:
        for path in paths:
            relative = relative_to(path, base) or path.rsplit("/", 1)[-1]
            parts = relative.split("/")
            candidates = ["/".join(parts[:n]) for n in range(len(parts), 0, -1)]
            try:
                hit = any(m.matches(c, deadline) for m in excluded for c in candidates)
            except TimeoutError:
                raise SearchTimeoutError(
                    f"matching the exclude patterns ran past the {budget.seconds:g} s time "
                    "limit; use fewer or simpler patterns, or a narrower path",
                    path=base,
                ) from None
            if not hit:
                kept.append(path)
    return kept


def _clip(line: str) -> str:
    if len(line) <= _PREVIEW_LINE_CHARS:
        return line
    return line[:_PREVIEW_LINE_CHARS] + f"… [{len(line):,} chars]"


def _areas_note(read_only: Iterable[str]) -> str:
    lines = []
    for area in read_only:
        if area == "/":
            return "\n\nThe whole workspace is read-only."
        what = _AREA_CONTENTS.get(area)
        lines.append(f"- {area}/: {what}" if what else f"- {area}/")
    if not lines:
        return ""
    return (
        "\n\nRead-only folders (read, grep and search them, but do not write or edit there):\n"
        + "\n".join(lines)
    )
