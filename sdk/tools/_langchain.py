"""The workspace tools as LangChain tools, built from the same :class:`ToolFunction` objects.

Each LangChain tool gets the function's JSON schema as its ``args_schema`` (a dict), so the
model sees the aliases (grep's ``-A``...) and LangChain passes the raw arguments through;
validation and error texts stay in one place, :class:`ToolFunction`.
(LangChain rebuilds a pydantic ``args_schema`` under field names, which would hide aliases.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ctxfs._layout import SDK_AREAS
from ctxfs._tokens import TokenCounter
from ctxfs._workspace._workspace import Workspace
from ctxfs.tools._function import ToolFunction
from ctxfs.tools._functions import tool_functions
from ctxfs.tools._identity import FUNCTION_ATTRIBUTE

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

__all__ = ["as_langchain_tool", "workspace_tools"]


def workspace_tools(
    workspace: Workspace,
    *,
    read_only_areas: Iterable[str] = SDK_AREAS,
    max_output_tokens: int | Callable[[], int] | None = None,
    token_counter: TokenCounter | Callable[[str], int] | None = None,
) -> list[BaseTool]:
    """The agent's file tools as LangChain tools, ready for ``create_agent`` or a ``ToolNode``.

    The tools are ``ls``, ``read_file``, ``write_file``, ``edit_file``, ``glob`` and ``grep``
    (see :func:`tool_functions`, which they are built from). They act on
    ``workspace.view(read_only=read_only_areas)``; every failure comes back as a tool result
    starting with ``Error:``, never as an exception.

    Example:
        >>> from ctxfs import Workspace
        >>> tools = workspace_tools(Workspace("memory://doc"))
        >>> [t.name for t in tools]
        ['ls', 'read_file', 'write_file', 'edit_file', 'glob', 'grep']
        >>> tools[1].invoke({"file_path": "/missing.txt"})[:46]
        'Error: /missing.txt: no such file or directory'

    Args:
        workspace: The workspace the tools work in.
        read_only_areas: Folders the tools must not write, edit or delete in, on top of the
            workspace's own read-only areas. Defaults to the SDK's areas.
        max_output_tokens: Most tokens one call returns (see :func:`tool_functions`);
            ``None`` for :data:`~ctxfs.tools.DEFAULT_MAX_OUTPUT_TOKENS`.
        token_counter: What counts them; ``None`` for a :class:`~ctxfs.TiktokenCounter`.

    Raises:
        ValueError: ``max_output_tokens`` is under :data:`~ctxfs.tools.MIN_OUTPUT_TOKENS`.
    """
    functions = tool_functions(
        workspace,
        read_only_areas=read_only_areas,
        max_output_tokens=max_output_tokens,
        token_counter=token_counter,
    )
    return [as_langchain_tool(function) for function in functions]


def as_langchain_tool(function: ToolFunction) -> BaseTool:
    """Wrap one :class:`ToolFunction` as a LangChain ``StructuredTool``."""
    from langchain_core.tools import StructuredTool

    def run(**arguments: object) -> str:
        return function(**arguments)

    # what it was built from: ctxfs's recovery tools are recognised by it, not by name
    setattr(run, FUNCTION_ATTRIBUTE, function)
    return StructuredTool.from_function(
        func=run,
        name=function.name,
        description=function.description,
        args_schema=function.parameters,
    )
