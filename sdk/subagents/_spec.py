"""What a sub-agent is: a name, a prompt, its tools, its model and its limits."""

from __future__ import annotations

from typing import Annotated

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from pydantic import BaseModel, ConfigDict, Field

from ctxfs._policy._settings import ContextPolicy

__all__ = [
    "DEFAULT_MAX_TURNS",
    "GENERAL_PURPOSE",
    "GENERAL_PURPOSE_PROMPT",
    "SubAgent",
    "general_purpose",
]

DEFAULT_MAX_TURNS = 25
"""How many model calls a sub-agent makes at most, unless its spec says otherwise."""

GENERAL_PURPOSE = "general-purpose"
"""The name of the sub-agent every registry holds unless told not to."""

GENERAL_PURPOSE_PROMPT = """You are a sub-agent working on one task handed to you by another \
agent. You see only this task, not the conversation it came from. Work through it with your \
tools, then answer with a final report that the other agent can act on without repeating your \
work: the facts found, with the file paths and line numbers where they are, and the files you \
wrote. Keep the report short; whatever you read stays in the shared workspace, where the other \
agent can look it up."""


class SubAgent(BaseModel):
    """A named sub-agent: what it is told, what it can use, and how far it may go.

    Every field is keyword-only and validated; the object is frozen.

    Attributes:
        name: What the parent names in the ``task`` tool (letters, digits, ``_``, ``-``).
        description: When to use it; the parent's model reads this in the ``task`` tool.
        system_prompt: The sub-agent's system message.
        tools: Tools besides the workspace tools; ``None`` gives it the registry's default
            tools.
        workspace_tools: Whether it gets the workspace tools (``ls``, ``read_file``,
            ``write_file``, ``edit_file``, ``glob``, ``grep``) on the shared workspace.
        model: Its chat model; ``None`` uses the registry's model.
        policy: How its own context is kept in its window; ``None`` uses the registry's.
        max_turns: Most model calls it makes; when its last allowed call still asked for
            tools, it stops with a partial result.
        max_tokens: Most tokens it may spend over all its model calls (each request as the
            model receives it, plus each answer), or ``None`` for no limit. A call that would
            go over is not made: it stops with a partial result.
        subagents: Whether it gets a ``task`` tool of its own (within the registry's
            ``max_depth``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
    description: Annotated[str, Field(min_length=1)]
    system_prompt: str = GENERAL_PURPOSE_PROMPT
    tools: tuple[BaseTool, ...] | None = None
    workspace_tools: bool = True
    model: BaseChatModel | None = None
    policy: ContextPolicy | None = None
    max_turns: Annotated[int, Field(ge=1)] = DEFAULT_MAX_TURNS
    max_tokens: Annotated[int | None, Field(ge=1)] = None
    subagents: bool = False


def general_purpose() -> SubAgent:
    """The default sub-agent: the registry's model, tools and policy, a generic prompt."""
    return SubAgent(
        name=GENERAL_PURPOSE,
        description=(
            "A general-purpose agent for exploration and multi-step work: searching and "
            "reading files, running the tools you have, writing results. Use it for work that "
            "would fill your context with material you do not need to keep; it returns a "
            "short report and the files it wrote."
        ),
    )
