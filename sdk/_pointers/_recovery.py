"""ctxfs's own recovery tools, known by what they are, not by what they are called.

A recovery tool (``ls``, ``read_file``, ``glob``, ``grep``) shows content of the workspace,
paging instead of growing: its results are never offloaded (reading an offloaded file back
must not save it again), and a view it gave of content ctxfs saved can be cleared to a
pointer that repeats the call. Both hold only for ctxfs's own tools: another tool that
happens to be called ``read_file`` (a coding agent's own) returns whatever it returns, and
is offloaded like any tool.

So a tool is recognised by identity. The tools module, which builds the tools, registers
here how to recognise them (:func:`register`); the engine and the pointer resolution, which
sit below it, ask (:func:`recovery_tool`, :func:`default_tools`) without importing it.

A :class:`RecoveryTool` is what they get: the tool's name, how to run it, and the output
budget it pages at (a view is the same text again only at the same budget).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ctxfs._workspace._workspace import Workspace

__all__ = [
    "BUDGET_KEY",
    "RecoveryTool",
    "call_budget",
    "default_tools",
    "offered_tools",
    "recovery_tool",
    "register",
]

BUDGET_KEY = "max_output_tokens"
"""The key under which a re-read pointer's call records the budget it was shown at, when
that is not the tools' default."""


@dataclass(frozen=True, slots=True)
class RecoveryTool:
    """One of ctxfs's recovery tools, as the engine runs it.

    Attributes:
        name: The name it is offered under.
        run: Runs it with the call's arguments (keyword arguments); returns its text.
        budget: The most tokens one call returns, now (the tools may ask a function).
        default_budget: The budget of tools built without one.
    """

    name: str
    run: Callable[..., str]
    budget: Callable[[], int]
    default_budget: int


Identify = Callable[[object], RecoveryTool | None]
Build = Callable[[Workspace, int | None], Iterable[RecoveryTool]]

_identify: list[Identify] = []
_build: list[Build] = []


def register(identify: Identify, build: Build) -> None:
    """Says how to recognise ctxfs's recovery tools and how to build them at a budget.

    Called once by the tools module when it is imported (``import ctxfs`` imports it).
    """
    _identify[:] = [identify]
    _build[:] = [build]


def recovery_tool(tool: object) -> RecoveryTool | None:
    """``tool`` as a :class:`RecoveryTool` if it is one of ctxfs's own, else ``None``.

    A LangChain tool or a :class:`~ctxfs.ToolFunction` built by ctxfs's tools module (and
    only those) is recognised; a name is not enough.
    """
    if tool is None or not _identify:
        return None
    return _identify[0](tool)


def offered_tools(tools: Iterable[object]) -> dict[str, RecoveryTool]:
    """ctxfs's recovery tools among ``tools`` (what an agent is offered), by name."""
    found: dict[str, RecoveryTool] = {}
    for tool in tools:
        known = recovery_tool(tool)
        if known is not None:
            found.setdefault(known.name, known)
    return found


def default_tools(workspace: Workspace, budget: int | None = None) -> dict[str, RecoveryTool]:
    """ctxfs's recovery tools on ``workspace`` at ``budget`` (``None``: the default), by name."""
    if not _build:
        return {}
    return {tool.name: tool for tool in _build[0](workspace, budget)}


def call_budget(call: Mapping[str, Any]) -> int | None:
    """The budget a re-read pointer's call was shown at, if it is not the default."""
    budget = call.get(BUDGET_KEY)
    if isinstance(budget, int) and not isinstance(budget, bool) and budget > 0:
        return budget
    return None
