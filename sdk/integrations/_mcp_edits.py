"""``edit_file`` as the MCP server applies it: the edits in order, all or none, and the diff."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from ctxfs._errors import EditError, NotTextError
from ctxfs._workspace._writes import in_file_endings
from ctxfs.integrations._mcp_args import EditOperation

__all__ = ["apply_edits", "text_of", "unified_diff"]


def apply_edits(path: str, text: str, edits: Sequence[EditOperation]) -> tuple[str, int]:
    """Applies the edits in order to ``text``, all or none.

    An ``oldText`` with ``\n`` line ends matches the lines of a CRLF file, as
    :meth:`~ctxfs.Workspace.edit` matches it (``read_text_file`` shows them without ``\r``).

    Returns:
        The new text and the number of occurrences replaced.

    Raises:
        EditError: An edit's ``oldText`` is empty, equal to its ``newText``, absent or
            ambiguous (the message names the edit, and says that nothing was changed).
    """
    replaced = 0
    for number, edit in enumerate(edits, start=1):
        which = f"edit {number} of {len(edits)}" if len(edits) > 1 else "the edit"
        after = " (after the edits before it)" if number > 1 else ""
        old, new = edit.old_text, edit.new_text
        if old == "":
            problem = "oldText is empty; give the exact text to replace, or use write_file"
        elif old == new:
            problem = "oldText and newText are identical"
        else:
            old, new = in_file_endings(text, old, new)
            count = text.count(old)
            if count == 0:
                problem = (
                    f"oldText was not found in {path}{after}; read the file again and copy the "
                    "exact text, including whitespace and indentation"
                )
            elif count > 1 and not edit.replace_all:
                problem = (
                    f"oldText occurs {count} times in {path}{after}; add surrounding lines to "
                    "make it unique, or set replaceAll to replace every occurrence"
                )
            else:
                text = text.replace(old, new) if edit.replace_all else text.replace(old, new, 1)
                replaced += count if edit.replace_all else 1
                continue
        raise EditError(f"{which}: {problem}; nothing was changed", path=path)
    return text, replaced


def text_of(path: str, data: bytes) -> str:
    """The text of a file to edit, or :class:`~ctxfs._errors.NotTextError`."""
    if b"\x00" not in data:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    raise NotTextError(f"{path} is not a UTF-8 text file; it cannot be edited", path=path)


def unified_diff(path: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=path,
        tofile=path,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
