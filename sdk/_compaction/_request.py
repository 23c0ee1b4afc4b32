"""The parts of a request that are not messages: the system message and the tool schemas.

A model call sends the system message, the messages, and the tool schemas. Integrations such
as LangChain's ``create_agent`` keep the system prompt and the tools outside the message
history, so the engine is handed them apart and counts them here. A tool is counted as the
JSON of its OpenAI-style schema (``convert_to_openai_tool``: name, description, parameters),
which is what providers are sent; counts are cached per tool object, so a loop that sends the
same tools on every call tokenizes them once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ValidationError

from ctxfs._policy._settings import ContextPolicy
from ctxfs._tokens import TokenCounter

__all__ = ["RequestParts", "Tool", "policy_for_window", "tool_schema_text"]

Tool = BaseTool | Mapping[str, Any] | Callable[..., Any] | type
"""Anything LangChain accepts as a tool: a ``BaseTool``, a schema dict, a function, a model."""

_MAX_CACHED = 512


def tool_schema_text(tool: Tool) -> str:
    """Returns the JSON of a tool's OpenAI-style schema, as ctxfs counts it."""
    schema = convert_to_openai_tool(tool)
    return json.dumps(schema, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


class RequestParts:
    """Counts the system message and the tool schemas of requests, with a cache.

    Not thread-safe: the engine calls it under its lock.

    Args:
        counter: The token counter of the engine.
    """

    def __init__(self, counter: TokenCounter) -> None:
        self._counter = counter
        self._tools: dict[int, tuple[Tool, int]] = {}

    def system_tokens(self, system: BaseMessage | str | None) -> int:
        """Tokens of a system message given apart from the messages (0 for ``None``)."""
        if system is None:
            return 0
        message = SystemMessage(system) if isinstance(system, str) else system
        return self._counter.count_message(message)

    def tool_tokens(self, tools: Sequence[Tool]) -> int:
        """Tokens of the tools' schemas."""
        total = 0
        for tool in tools:
            cached = self._tools.get(id(tool))
            if cached is not None and cached[0] is tool:
                total += cached[1]
                continue
            tokens = self._counter.count_text(tool_schema_text(tool))
            if len(self._tools) >= _MAX_CACHED:  # tools made anew per call: keep it bounded
                self._tools.clear()
            self._tools[id(tool)] = (tool, tokens)
            total += tokens
        return total


def policy_for_window(policy: ContextPolicy, model: BaseChatModel | None) -> ContextPolicy:
    """``policy`` with its window: its own, or else the one ``model``'s profile gives.

    Raises:
        ValueError: Neither the policy nor the model's profile gives the window, or the
            policy's explicit settings do not fit the window the profile gives.
    """
    if policy.max_input_tokens is not None:
        return policy
    profile = getattr(model, "profile", None) if model is not None else None
    window = profile.get("max_input_tokens") if isinstance(profile, Mapping) else None
    if not isinstance(window, int) or isinstance(window, bool) or window <= 0:
        named = f" {type(model).__name__}" if model is not None else ""
        raise ValueError(
            "ctxfs does not know the model's window: the policy has no "
            f"max_input_tokens and the model{named} has no profile giving one; write "
            "ContextPolicy(max_input_tokens=...) with the model's input window"
        )
    try:
        return policy.with_window(window)
    except ValidationError as exc:
        reasons = "; ".join(
            str(error["msg"]).removeprefix("Value error, ") for error in exc.errors()
        )
        raise ValueError(
            f"the policy does not fit the window of the model's profile ({window:,} "
            f"tokens): {reasons}"
        ) from None
