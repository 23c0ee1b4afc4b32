"""Sub-agents for ``create_agent``: a middleware that adds the ``task`` tool and the
``artifacts`` state key.

Needs the ``langchain`` extra: ``pip install 'ctxfs[langchain]'``.
"""

from __future__ import annotations

from typing import Annotated, Any, NotRequired

from ctxfs.subagents._result import merge_artifacts
from ctxfs.subagents._runner import SubAgents

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "ctxfs.subagents.SubAgentMiddleware needs LangChain 1.x: pip install 'ctxfs[langchain]'"
    ) from exc

__all__ = ["SubAgentMiddleware", "SubAgentState"]


class SubAgentState(AgentState[Any]):
    """The agent state with ``artifacts``: paths sub-agents wrote, first written first."""

    artifacts: NotRequired[Annotated[list[str], merge_artifacts]]


class SubAgentMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Gives a ``create_agent`` agent the ``task`` tool over a :class:`SubAgents` registry.

    The tool runs sub-agents in their own threads and context windows (see
    :class:`~ctxfs.subagents.SubAgents`); their answers come back as tool results, and the
    paths they wrote merge into the state's ``artifacts`` (no repeats, first written first).
    The sub-agents' steps go to the agent's custom stream (``stream_mode="custom"``).
    Parallel ``task`` calls of one answer run concurrently (in threads for ``invoke``, on the
    event loop for ``ainvoke``).

    Use it next to :class:`~ctxfs.integrations.langchain.ContextMiddleware`, which keeps the
    parent in its window (a long report is offloaded like any tool result).

    Example:
        >>> from langchain.agents import create_agent
        >>> from ctxfs import ContextPolicy, Workspace
        >>> from ctxfs.testing import ScriptedChatModel, tool_call
        >>> ws = Workspace("memory://sub-middleware-doc")
        >>> agents = SubAgents(ws, model=ScriptedChatModel(responses=["42."]),
        ...     policy=ContextPolicy(max_input_tokens=8_000))
        >>> parent = ScriptedChatModel(responses=[
        ...     tool_call("task", {"description": "Compute it.",
        ...                        "subagent_type": "general-purpose"}), "It is 42."])
        >>> agent = create_agent(parent, [], middleware=[SubAgentMiddleware(agents)])
        >>> agent.invoke({"messages": [("user", "go")]})["messages"][-1].content
        'It is 42.'

    Args:
        subagents: The registry whose sub-agents the tool runs.
    """

    state_schema = SubAgentState

    def __init__(self, subagents: SubAgents) -> None:
        super().__init__()
        self.subagents = subagents
        self.tools = [subagents.task_tool()]
