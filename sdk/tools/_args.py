"""The arguments of each tool, as pydantic models: the single source of their JSON schemas.

Field names are Python identifiers; where the name models know is not one (grep's ``-A``,
``-B``, ``-C``, ``-i``, ``-n``, as in Claude Code's Grep tool) the field has that name as its
alias. Validation accepts both, and the JSON schema shows the alias. Unknown arguments are
refused rather than ignored, so a misspelt option cannot silently fall back to its default.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, create_model
from pydantic.json_schema import SkipJsonSchema

__all__ = [
    "EditFileArgs",
    "GlobArgs",
    "GrepArgs",
    "LsArgs",
    "ReadFileArgs",
    "ToolArgs",
    "WriteFileArgs",
    "read_file_args",
]

DEFAULT_READ_LINES = 2000
"""The ``limit`` default of :class:`ReadFileArgs` (a workspace may set another)."""

DEFAULT_HEAD_LIMIT = 250
"""How many grep entries one call returns by default."""


def _optional_string(schema: dict[str, JsonValue]) -> None:
    """Show an optional string as a plain string: no ``null`` branch, no ``null`` default."""
    schema.pop("default", None)


class ToolArgs(BaseModel):
    """Base of every tool's arguments: unknown keys refused, aliases and names both accepted."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class LsArgs(ToolArgs):
    """Arguments of ``ls``."""

    path: str = Field(
        default="/", description="Folder to list, an absolute workspace path such as /notes."
    )
    offset: int = Field(
        default=0, ge=0, description="Skip this many entries first, to see the next page."
    )


class ReadFileArgs(ToolArgs):
    """Arguments of ``read_file``."""

    file_path: str = Field(description="Absolute workspace path of the file, e.g. /notes/a.md.")
    offset: int = Field(
        default=0,
        ge=0,
        description=(
            "0-based index of the first line to read: offset=0 starts at line 1, offset=100 "
            "at line 101. Use the offset the previous page told you."
        ),
    )
    limit: int = Field(
        default=DEFAULT_READ_LINES, ge=1, description="Most lines to return from offset on."
    )
    column: int = Field(
        default=0,
        ge=0,
        description=(
            "0-based character of the first line to start at. Only for reading on in a very "
            "long line that was clipped: use the column the clipped line told you."
        ),
    )


def read_file_args(default_limit: int) -> type[ReadFileArgs]:
    """:class:`ReadFileArgs` whose ``limit`` defaults to a workspace's ``default_read_lines``."""
    if default_limit == DEFAULT_READ_LINES:
        return ReadFileArgs
    return create_model(
        "ReadFileArgs",
        __base__=ReadFileArgs,
        __doc__=ReadFileArgs.__doc__,
        limit=(
            int,
            Field(default=default_limit, ge=1, description="Most lines to return from offset on."),
        ),
    )


class WriteFileArgs(ToolArgs):
    """Arguments of ``write_file``."""

    file_path: str = Field(
        description="Absolute workspace path of the file to write, e.g. /notes/plan.md."
    )
    content: str = Field(description="The complete new content of the file.")


class EditFileArgs(ToolArgs):
    """Arguments of ``edit_file``."""

    file_path: str = Field(description="Absolute workspace path of the file to edit.")
    old_string: str = Field(
        description=(
            "The exact text to replace, including whitespace and indentation, without the "
            "line-number prefix that read_file shows."
        )
    )
    new_string: str = Field(description="The text to put in its place (must differ).")
    replace_all: bool = Field(
        default=False,
        description="Replace every occurrence; otherwise old_string must occur exactly once.",
    )


class GlobArgs(ToolArgs):
    """Arguments of ``glob``."""

    pattern: str = Field(description="Glob pattern, e.g. '**/*.py', '*.md', 'src/**/*.{ts,tsx}'.")
    path: str = Field(
        default="/", description="Folder to search in; the pattern is relative to it."
    )
    offset: int = Field(
        default=0, ge=0, description="Skip this many matches first, to see the next page."
    )


class GrepArgs(ToolArgs):
    """Arguments of ``grep``."""

    pattern: str = Field(
        description="Regular expression to search for (or literal text with fixed_strings)."
    )
    path: str = Field(default="/", description="Folder to search recursively, or one file.")
    glob: str | SkipJsonSchema[None] = Field(
        default=None,
        description="Only search files matching this glob, e.g. '*.py' or '**/*.{ts,tsx}'.",
        json_schema_extra=_optional_string,
    )
    output_mode: Literal["files_with_matches", "content", "count"] = Field(
        default="files_with_matches",
        description=(
            "'files_with_matches' lists matching files; 'content' shows matching lines; "
            "'count' shows the number of matching lines per file."
        ),
    )
    before: int = Field(
        default=0, ge=0, alias="-B", description="Lines of context before each match (content)."
    )
    after: int = Field(
        default=0, ge=0, alias="-A", description="Lines of context after each match (content)."
    )
    context: int = Field(
        default=0,
        ge=0,
        alias="-C",
        description="Lines of context before and after each match (content); -A/-B override it.",
    )
    line_numbers: bool = Field(
        default=True, alias="-n", description="Show line numbers in content mode."
    )
    ignore_case: bool = Field(default=False, alias="-i", description="Ignore case.")
    head_limit: int = Field(
        default=DEFAULT_HEAD_LIMIT,
        ge=0,
        description="Most entries (files or lines) to return; 0 means no limit.",
    )
    offset: int = Field(
        default=0, ge=0, description="Skip this many entries first, to see the next page."
    )
    multiline: bool = Field(
        default=False,
        description="Let a match span lines; '.' then also matches newlines.",
    )
    fixed_strings: bool = Field(
        default=False, description="Treat pattern as literal text, not a regular expression."
    )
