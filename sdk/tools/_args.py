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

# Field descriptions are sent with every request: short, and only what the tool's own
# description does not already say.
_SKIP = "Entries to skip (paging)."
_LIMIT = "Most lines to read."


def _optional_string(schema: dict[str, JsonValue]) -> None:
    """Show an optional string as a plain string: no ``null`` branch, no ``null`` default."""
    schema.pop("default", None)


class ToolArgs(BaseModel):
    """Base of every tool's arguments: unknown keys refused, aliases and names both accepted."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class LsArgs(ToolArgs):
    """Arguments of ``ls``."""

    path: str = Field(default="/", description="Folder, e.g. /notes.")
    offset: int = Field(default=0, ge=0, description=_SKIP)


class ReadFileArgs(ToolArgs):
    """Arguments of ``read_file``."""

    file_path: str = Field(description="Absolute path, e.g. /notes/a.md.")
    offset: int = Field(
        default=0, ge=0, description="0-based first line: offset=100 starts at line 101."
    )
    limit: int = Field(default=DEFAULT_READ_LINES, ge=1, description=_LIMIT)
    column: int = Field(
        default=0, ge=0, description="To read on in a clipped line: the column it gave."
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
            Field(default=default_limit, ge=1, description=_LIMIT),
        ),
    )


class WriteFileArgs(ToolArgs):
    """Arguments of ``write_file``."""

    file_path: str = Field(description="Absolute path, e.g. /notes/plan.md.")
    content: str = Field(description="The whole new content.")


class EditFileArgs(ToolArgs):
    """Arguments of ``edit_file``."""

    file_path: str = Field(description="Absolute path.")
    old_string: str = Field(description="Exact text to replace.")
    new_string: str = Field(description="Text to put in its place (must differ).")
    replace_all: bool = Field(default=False, description="Replace every occurrence.")


class GlobArgs(ToolArgs):
    """Arguments of ``glob``."""

    pattern: str = Field(description="Glob pattern, e.g. '**/*.py'.")
    path: str = Field(default="/", description="Folder to search in.")
    offset: int = Field(default=0, ge=0, description=_SKIP)


class GrepArgs(ToolArgs):
    """Arguments of ``grep``."""

    pattern: str = Field(description="Regular expression, or literal text with fixed_strings.")
    path: str = Field(default="/", description="Folder (recursive) or file.")
    glob: str | SkipJsonSchema[None] = Field(
        default=None,
        description="Only files matching it, e.g. '*.py'.",
        json_schema_extra=_optional_string,
    )
    output_mode: Literal["files_with_matches", "content", "count"] = "files_with_matches"
    before: int = Field(default=0, ge=0, alias="-B", description="Context lines before a match.")
    after: int = Field(default=0, ge=0, alias="-A", description="Context lines after a match.")
    context: int = Field(default=0, ge=0, alias="-C", description="Context lines around a match.")
    line_numbers: bool = Field(default=True, alias="-n", description="Line numbers (content).")
    ignore_case: bool = Field(default=False, alias="-i", description="Ignore case.")
    head_limit: int = Field(
        default=DEFAULT_HEAD_LIMIT, ge=0, description="Most entries (files or lines); 0: all."
    )
    offset: int = Field(default=0, ge=0, description=_SKIP)
    multiline: bool = Field(default=False, description="Matches may span lines.")
    fixed_strings: bool = Field(default=False, description="pattern is literal text.")
