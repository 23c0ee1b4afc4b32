"""Editing lines of a CRLF file with text copied from what the read tools show.

Every read surface shows a line without the ``\r`` that ends it, so text copied across lines
of a CRLF file has ``\n`` where the file has ``\r\n``. Every edit surface (ctxfs's
``edit_file``, the MCP server's ``edit_file``, the Deep Agents backend) finds it, and the file
keeps its endings: ctxfs's tool and the MCP server answered 'not found' while the Deep Agents
backend edited.
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import assume, given
from hypothesis import strategies as st

from ctxfs import Workspace
from ctxfs.integrations.deepagents import WorkspaceBackend
from ctxfs.integrations.mcp import McpToolbox
from ctxfs.tools import tool_functions

Edit = Callable[[Workspace, str, str], str]


def _with_tools(ws: Workspace, old: str, new: str) -> str:
    (edit,) = [f for f in tool_functions(ws) if f.name == "edit_file"]
    return edit(file_path="/f.txt", old_string=old, new_string=new, replace_all=True)


def _with_mcp(ws: Workspace, old: str, new: str) -> str:
    edits = [{"oldText": old, "newText": new, "replaceAll": True}]
    return McpToolbox(ws).call("edit_file", {"path": "/f.txt", "edits": edits}).text


def _with_deep_agents(ws: Workspace, old: str, new: str) -> str:
    result = WorkspaceBackend(ws).edit("/f.txt", old, new, replace_all=True)
    return result.error or "Edited"


SURFACES: list[Edit] = [_with_tools, _with_mcp, _with_deep_agents]

_LINE = st.text(st.sampled_from("ab \t\r\u2028é"), max_size=4).filter(
    lambda line: not line.endswith("\r")
)


def _crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


@given(
    lines=st.lists(_LINE, min_size=2, max_size=6),
    span=st.tuples(st.integers(0, 5), st.integers(2, 4)),
    new=st.text(st.sampled_from("xy\n"), min_size=1, max_size=5),
)
def test_lines_copied_as_shown_are_edited_and_keep_their_endings(
    lines: list[str], span: tuple[int, int], new: str
) -> None:
    start, size = span
    assume(start + size <= len(lines))
    text = "\r\n".join(lines) + "\r\n"
    old = "\n".join(lines[start : start + size])  # as read_file shows them
    # text found as given is edited as given (a span starting at an empty line, "\na", is)
    assume(old.strip("\n") and old != new and old not in text)
    expected = text.replace(_crlf(old), _crlf(new))
    for edit in SURFACES:
        ws = Workspace("memory://crlf-edit")
        ws.write_text("/f.txt", text)
        answer = edit(ws, old, new)
        assert answer.startswith("Edited"), (edit.__name__, answer)
        assert ws.read_text("/f.txt") == expected, edit.__name__


def test_text_that_is_in_the_file_as_given_is_edited_as_given() -> None:
    """A file with both endings: ``a\nb`` present as given is the one replaced."""
    for edit in SURFACES:
        ws = Workspace("memory://crlf-exact")
        ws.write_text("/f.txt", "a\r\nb\r\na\nb\n")
        assert edit(ws, "a\nb", "X").startswith("Edited"), edit.__name__
        assert ws.read_text("/f.txt") == "a\r\nb\r\nX\n", edit.__name__
