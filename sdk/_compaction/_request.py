"""The request a model is sent, as the compaction sees it: its parts, its window, its cache.

A model call sends the system message, the messages, and the tool schemas. Integrations such
as LangChain's ``create_agent`` keep the system prompt and the tools outside the message
history, so the engine is handed them apart and counts them here (:class:`RequestParts`,
:class:`Fixed`). A tool is counted as the JSON of its OpenAI-style schema
(``convert_to_openai_tool``: name, description, parameters), which is what providers are
sent; counts are cached per tool object, so a loop that sends the same tools on every call
tokenizes them once.

The window is resolved once into a frozen :class:`~ctxfs._policy._budget.Budget`
(:func:`budget_for_window`): the policy's own, or the one the model's profile gives.

**Prompt caching.** Providers cache the longest prefix a request shares with an earlier one:
the shared part is read from the cache at about a tenth of the input price, everything from
the first difference on is paid in full again. A compaction that edits an old message
therefore gives up the cached tokens from that message on. :class:`SentRequests` keeps, per
thread, what the last compaction returned, and prices a changed prefix
(:class:`~ctxfs._events.PrefixChanged`). These are measured per message
(:func:`shared_prefix`): a message counts as shared when it is the very same message (same
object, or equal type, content, tool calls and call id), so the figures are a lower bound on
what a provider, which compares tokens, would reuse.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress, count
from operator import is_not
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ValidationError

from ctxfs._events import PrefixChanged
from ctxfs._pointers._recovery import RecoveryTool, offered_tools
from ctxfs._policy._budget import Budget
from ctxfs._policy._settings import ContextPolicy
from ctxfs._tokens import TokenCounter

__all__ = [
    "Fixed",
    "Offered",
    "RequestParts",
    "SentRequests",
    "Tool",
    "budget_for_window",
    "same_message",
    "shared_prefix",
    "tool_schema_text",
]

Tool = BaseTool | Mapping[str, Any] | Callable[..., Any] | type
"""Anything LangChain accepts as a tool: a ``BaseTool``, a schema dict, a function, a model."""

Offered = Mapping[str, RecoveryTool]
"""ctxfs's recovery tools the model is offered, by name."""

_MAX_CACHED = 512
_SENT_THREADS = 256
"""The most threads whose last request an engine remembers (the oldest is forgotten)."""


def tool_schema_text(tool: Tool) -> str:
    """Returns the JSON of a tool's OpenAI-style schema, as ctxfs counts it."""
    schema = convert_to_openai_tool(tool)
    return json.dumps(schema, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


@dataclass(frozen=True, slots=True)
class Fixed:
    """Tokens of the parts of a request given apart from the messages.

    Attributes:
        system: Of the system message.
        tools: Of the tool schemas.
        offered: ctxfs's recovery tools among the tools, by name.
        added: Of what other middleware adds to this request only (messages it inserts,
            text it adds to copies, a longer system prompt or tools from a middleware
            inside ctxfs's), sent but never compacted by ctxfs.
    """

    system: int = 0
    tools: int = 0
    offered: Offered = field(default_factory=dict)
    added: int = 0

    @property
    def tokens(self) -> int:
        """All together."""
        return self.system + self.tools + self.added


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

    def fixed(self, system: BaseMessage | str | None, tools: Sequence[Tool], added: int) -> Fixed:
        """The parts of a request given apart from its messages, counted.

        Raises:
            ValueError: ``added`` is negative.
        """
        if added < 0:
            raise ValueError(f"added_tokens must be 0 or more, not {added}")
        return Fixed(
            self.system_tokens(system), self.tool_tokens(tools), offered_tools(tools), added
        )

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


def budget_for_window(policy: ContextPolicy, model: BaseChatModel | None) -> Budget[ContextPolicy]:
    """``policy``'s numbers for its window: its own, or else the one ``model``'s profile gives.

    The budget's :attr:`~ctxfs._policy._budget.Budget.policy` is the policy with that window.

    Raises:
        ValueError: Neither the policy nor the model's profile gives the window, or the
            policy's explicit settings do not fit the window the profile gives.
    """
    if policy.max_input_tokens is not None:
        return policy.budget
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
        return policy.with_window(window).budget
    except ValidationError as exc:
        reasons = "; ".join(
            str(error["msg"]).removeprefix("Value error, ") for error in exc.errors()
        )
        raise ValueError(
            f"the policy does not fit the window of the model's profile ({window:,} "
            f"tokens): {reasons}"
        ) from None


# -- the prefix a provider caches -----------------------------------------------------------


def same_message(a: BaseMessage, b: BaseMessage) -> bool:
    """Whether two messages would be sent as the same bytes."""
    if a is b:
        return True
    if type(a) is not type(b) or a.content != b.content:
        return False
    if isinstance(a, AIMessage) and isinstance(b, AIMessage):
        return a.tool_calls == b.tool_calls
    if isinstance(a, ToolMessage) and isinstance(b, ToolMessage):
        return a.tool_call_id == b.tool_call_id
    return True


def shared_prefix(previous: Sequence[BaseMessage], current: Sequence[BaseMessage]) -> int:
    """How many leading messages ``current`` shares with ``previous``."""
    # The very same objects first, in C (no Python-level work per message): a history
    # usually shares a long run of them with the last request.
    end = min(len(previous), len(current))
    shared = next(compress(count(), map(is_not, previous, current)), end)
    for a, b in zip(previous[shared:end], current[shared:end], strict=True):
        if not same_message(a, b):
            break
        shared += 1
    return shared


class SentRequests:
    """Per thread, the messages the last compaction returned (at most 256 threads).

    Not thread-safe: the engine calls it under its lock.
    """

    def __init__(self) -> None:
        self._sent: dict[str, list[BaseMessage]] = {}

    def record(
        self,
        thread_id: str,
        original: Sequence[BaseMessage],
        messages: list[BaseMessage],
        counter: TokenCounter,
    ) -> list[PrefixChanged]:
        """Keeps ``messages`` as the thread's last request; says what a changed prefix cost."""
        changed: list[PrefixChanged] = []
        shared = shared_prefix(original, messages)
        if shared < len(original):
            # What the provider holds is the part of the previous request this one still
            # starts with; messages appended since were never cached.
            previous = self._sent.get(thread_id)
            held = shared_prefix(previous, original) if previous is not None else len(original)
            given_up = counter.count_messages(original[shared:held]) if held > shared else 0
            changed.append(PrefixChanged(first_changed=shared, tokens_given_up=given_up))
        self._sent.pop(thread_id, None)
        if len(self._sent) >= _SENT_THREADS:
            del self._sent[next(iter(self._sent))]
        self._sent[thread_id] = messages
        return changed
