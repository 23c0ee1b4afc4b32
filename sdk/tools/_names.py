"""The names the tools' own texts use for each other (paging notes, next steps in errors).

A tool's output tells the model which tool to call next ("call read_file with offset=200").
Where the tools are served under other names (the MCP server follows the reference
filesystem server: ``read_text_file``, ``list_directory``, ``search_files``), the texts must
say those names, or the model is sent to a tool that does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_NAMES", "ToolNames"]


@dataclass(frozen=True, slots=True)
class ToolNames:
    """What each workspace tool is called where its texts are read.

    Attributes:
        ls: The tool that lists a folder.
        read_file: The tool that reads a page of a file (with ``offset``, ``limit`` and
            ``column`` arguments).
        glob: The tool that finds files by name pattern.
        grep: The tool that searches file contents (with an ``offset`` argument).
        edit_file: The tool that replaces exact text in a file.
    """

    ls: str = "ls"
    read_file: str = "read_file"
    glob: str = "glob"
    grep: str = "grep"
    edit_file: str = "edit_file"


DEFAULT_NAMES = ToolNames()
"""The names of :func:`~ctxfs.tools.tool_functions` and :func:`~ctxfs.tools.workspace_tools`."""
