"""What the model reads about each MCP tool: its arguments (pydantic models, the single source
of the JSON schemas) and its description.

Argument names follow the reference filesystem server (``path``, ``head``/``tail``,
``edits`` of ``oldText``/``newText``, ``dryRun``, ``excludePatterns``); where ctxfs adds
something (paging with ``offset``/``limit``/``column``, ``replaceAll``), it is optional.
Unknown arguments are refused rather than ignored.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.json_schema import SkipJsonSchema

__all__ = [
    "ALLOWED",
    "EDIT",
    "GREP",
    "INFO",
    "LIST",
    "READ",
    "READ_MANY",
    "SEARCH",
    "WRITE",
    "EditFileArgs",
    "EditOperation",
    "ListDirectoryArgs",
    "NoArgs",
    "PathArgs",
    "ReadMultipleFilesArgs",
    "ReadTextFileArgs",
    "SearchFilesArgs",
    "WriteFileArgs",
]

# -- arguments --------------------------------------------------------------------------------


# The bound sits on the int arm: on the whole union pydantic applies it to an explicit null
# too and raises TypeError instead of a validation error.
_Lines = Annotated[int, Field(ge=1)] | SkipJsonSchema[None]


def _no_default(schema: dict[str, JsonValue]) -> None:
    """Show an optional argument without a ``null`` default."""
    schema.pop("default", None)


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class ListDirectoryArgs(_Args):
    """Arguments of ``list_directory``."""

    path: str = Field(default="/", description="Folder to list, e.g. / or /notes.")


class ReadTextFileArgs(_Args):
    """Arguments of ``read_text_file``."""

    path: str = Field(description="Workspace path of the file, e.g. /notes/a.md.")
    head: _Lines = Field(
        default=None,
        description="Only the first N lines (from offset).",
        json_schema_extra=_no_default,
    )
    tail: _Lines = Field(
        default=None,
        description="Only the last N lines of the file (not with head, offset or column).",
        json_schema_extra=_no_default,
    )
    offset: int = Field(
        default=0,
        ge=0,
        description=(
            "0-based index of the first line: offset=100 starts at line 101. Use the offset "
            "the previous page told you."
        ),
    )
    limit: _Lines = Field(
        default=None,
        description="Most lines to return from offset on (the same as head).",
        json_schema_extra=_no_default,
    )
    column: int = Field(
        default=0,
        ge=0,
        description="0-based character of the first line to start at, to read on in a clipped "
        "long line (use the column the clipped line told you).",
    )


class ReadMultipleFilesArgs(_Args):
    """Arguments of ``read_multiple_files``."""

    paths: list[str] = Field(min_length=1, description="Workspace paths of the files to read.")


class WriteFileArgs(_Args):
    """Arguments of ``write_file``."""

    path: str = Field(description="Workspace path of the file to write, e.g. /notes/plan.md.")
    content: str = Field(description="The complete new content of the file.")


class EditOperation(_Args):
    """One replacement of ``edit_file``."""

    old_text: str = Field(
        alias="oldText",
        description="Text to replace; must match the file exactly, whitespace included.",
    )
    new_text: str = Field(alias="newText", description="Text to put in its place.")
    replace_all: bool = Field(
        default=False,
        alias="replaceAll",
        description="Replace every occurrence; otherwise oldText must occur exactly once.",
    )


class EditFileArgs(_Args):
    """Arguments of ``edit_file``."""

    path: str = Field(description="Workspace path of the file to edit.")
    edits: list[EditOperation] = Field(
        min_length=1, description="Replacements, applied in order, all or none."
    )
    dry_run: bool = Field(
        default=False, alias="dryRun", description="Show the diff without writing the file."
    )


class SearchFilesArgs(_Args):
    """Arguments of ``search_files``."""

    path: str = Field(default="/", description="Folder to search in; the pattern is relative.")
    pattern: str = Field(description="Glob pattern, e.g. '**/*.py', '*.md', 'src/*.{ts,tsx}'.")
    exclude_patterns: list[str] = Field(
        default_factory=list,
        alias="excludePatterns",
        description="Glob patterns of files or folders to leave out, e.g. 'node_modules'.",
    )


class PathArgs(_Args):
    """Arguments of a tool that takes one path."""

    path: str = Field(description="Workspace path, e.g. /notes/a.md.")


class NoArgs(_Args):
    """A tool without arguments."""


# -- descriptions --------------------------------------------------------------------------

LIST = (
    "List a folder of the workspace: one path per line, folders end with '/'. Paths are "
    "workspace paths starting at '/'. Start with list_directory('/'); use search_files to find "
    "files by name at any depth and grep to search their contents."
)

READ = (
    "Read a text file of the workspace, in pages. Lines are numbered like `cat -n` (the "
    "number and the tab are not part of the file). Without arguments the first {lines} lines "
    "are read; head=N reads the first N lines, tail=N the last N. For a long file pass offset "
    "(0-based) and limit: when more remains, the output ends with the exact offset to call "
    "read_text_file with next. Lines longer than {line_chars} characters are clipped and say "
    "the column to read on from. One answer holds at most {tokens}.\n\n"
    "When a conversation says a tool result or earlier messages were saved to a file "
    "(/tool_results, /transcripts), read that file here to get the full text back."
)

READ_MANY = (
    "Read several text files in one call: each file's first page, after a line with its path, "
    "separated by '---'. The {tokens} of one answer are shared between the files, so each "
    "page ends with the offset to read on with read_text_file. A file that cannot be read "
    "shows its error and does not stop the others."
)

WRITE = (
    "Write a text file of the workspace with the given content, replacing the whole file; "
    "missing parent folders are created. The answer says 'Created' or 'Overwrote', with the "
    "size. To change part of a file, use edit_file."
)

EDIT = (
    "Replace exact text in a text file. Each edit's oldText must match the file exactly, "
    "whitespace and indentation included (copy it from read_text_file without the number and "
    "tab), and occur once unless replaceAll is set. The edits apply in order, all or none. "
    "Returns a git-style diff; dryRun=true shows the diff without writing."
)

SEARCH = (
    "Find files by name pattern, e.g. '**/*.py', '*.md', 'src/**/*.{{ts,tsx}}'; returns "
    "matching file paths (files only), sorted. A pattern without '/' matches file names at any "
    "depth; one with '/' is matched against the path relative to the path argument. "
    "excludePatterns leave out files or whole folders ('node_modules', 'build/**'). At most "
    "{cap} paths and {tokens}; the output says how many more matched. To search file "
    "contents, use grep."
)

GREP = (
    "Search the contents of the workspace's text files with a regular expression, like "
    "ripgrep (Python `regex` syntax; fixed_strings=true for literal text). path is a folder "
    "(searched recursively) or one file; glob filters the files ('*.py').\n\n"
    "output_mode: 'files_with_matches' (default) lists matching files; 'content' shows "
    "matching lines as path:line:text, with context lines (-A after, -B before, -C both); "
    "'count' shows matches per file. -i ignores case; multiline=true lets a match span "
    "lines. Lines over {line_chars} characters are clipped.\n\n"
    "Output is paged: at most head_limit entries (default 250, 0 for no limit) from offset, "
    "and never more than {tokens}; the last line gives the offset for the next call. The "
    "search runs under a {timeout}-second time limit. grep also searches the folders where "
    "offloaded tool results and archived conversations are kept (/tool_results, "
    "/transcripts): use it to find what was said or returned earlier."
)

INFO = (
    "Metadata of a file or folder of the workspace: its type, its size in bytes, and "
    "whether it is read-only."
)

ALLOWED = (
    "The folders this server may access: the whole workspace, from '/', and which folders "
    "in it are read-only."
)
