"""Which tools are ctxfs's own recovery tools: told by identity, and registered below.

A :class:`ToolFunction` is a recovery tool when it runs :class:`ToolSet`'s own ``ls``,
``read_file``, ``glob`` or ``grep``, or is one of the history tools (``history_search``,
``history_read``); a LangChain tool, when :func:`as_langchain_tool` built
it from one. A tool of any other making is not, whatever its name. The engine and the
pointer resolution sit below the tools, so they ask through :mod:`ctxfs._pointers._recovery`,
where :func:`register_recovery_tools` (run when ``ctxfs.tools`` is imported) puts the answer.
"""

from __future__ import annotations

from collections.abc import Callable

from ctxfs._pointers._recovery import RecoveryTool, register
from ctxfs._workspace._workspace import Workspace
from ctxfs.tools._budget import DEFAULT_MAX_OUTPUT_TOKENS, OutputBudget
from ctxfs.tools._function import ToolFunction
from ctxfs.tools._functions import ToolSet, tool_functions
from ctxfs.tools._history import HISTORY_ATTRIBUTE

__all__ = ["FUNCTION_ATTRIBUTE", "recovery_of", "register_recovery_tools"]

FUNCTION_ATTRIBUTE = "__ctxfs_tool_function__"
"""Set on the callable of a LangChain tool built from a :class:`ToolFunction`: that function."""

_RECOVERY: dict[Callable[..., str], str] = {
    ToolSet.ls: "ls",
    ToolSet.read_file: "read_file",
    ToolSet.glob: "glob",
    ToolSet.grep: "grep",
}


def recovery_of(tool: object) -> RecoveryTool | None:
    """``tool`` as a :class:`RecoveryTool` if ctxfs built it as one, else ``None``."""
    function = tool if isinstance(tool, ToolFunction) else _built_from(tool)
    if function is None:
        return None
    implementation = function.function
    history = getattr(implementation, HISTORY_ATTRIBUTE, None)
    if isinstance(history, OutputBudget):  # history_search, history_read: they page too
        return RecoveryTool(
            name=function.name,
            run=function,
            budget=lambda: history.max_tokens,
            default_budget=DEFAULT_MAX_OUTPUT_TOKENS,
        )
    owner = getattr(implementation, "__self__", None)
    method = getattr(implementation, "__func__", None)
    if not isinstance(owner, ToolSet) or method not in _RECOVERY:
        return None
    budget = owner.budget
    return RecoveryTool(
        name=function.name,
        run=function,
        budget=lambda: budget.max_tokens,
        default_budget=DEFAULT_MAX_OUTPUT_TOKENS,
    )


def _built_from(tool: object) -> ToolFunction | None:
    for attribute in ("func", "coroutine"):
        function = getattr(getattr(tool, attribute, None), FUNCTION_ATTRIBUTE, None)
        if isinstance(function, ToolFunction):
            return function
    return None


def _build(workspace: Workspace, budget: int | None) -> list[RecoveryTool]:
    found = (recovery_of(f) for f in tool_functions(workspace, max_output_tokens=budget))
    return [tool for tool in found if tool is not None]


def register_recovery_tools() -> None:
    """Tells the layers below how to recognise and build ctxfs's recovery tools."""
    register(recovery_of, _build)
