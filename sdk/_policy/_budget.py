"""A policy resolved for one window: every number the steps compare against, computed once.

A :class:`~ctxfs._policy._settings.ContextPolicy` states its settings as fractions, token counts
and message counts; the steps work on what they come to for one window. :class:`Budget` is
that value: frozen, resolved once per window (:meth:`Budget.of`), and handed down to every
step instead of the steps asking the policy again. A policy keeps the budget of its own
window (``ContextPolicy.budget``), and its numeric properties read it.

Nothing here imports the policy: :meth:`Budget.of` reads the fields it needs from anything
that has them (:class:`PolicyFields`), so the policy can build its budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from ctxfs._policy._fields import KeepWindow

if TYPE_CHECKING:
    from ctxfs._policy._fields import Threshold
    from ctxfs._policy._pinning import Pinning
    from ctxfs._policy._steps import (
        Summarization,
        ToolInputOffload,
        ToolResultClearing,
        ToolResultOffload,
    )

__all__ = ["MIN_RESULT_THRESHOLD", "Budget", "KeepWindow", "PolicyFields", "output_reserve"]

MIN_RESULT_THRESHOLD = 2_000
"""The default result threshold scales down with the window to no less than this."""


class PolicyFields(Protocol):
    """The settings a budget is resolved from (what a ``ContextPolicy`` holds)."""

    @property
    def reserve_output_tokens(self) -> int | None: ...
    @property
    def high_water(self) -> Threshold: ...
    @property
    def low_water(self) -> Threshold: ...
    @property
    def tool_output(self) -> Threshold: ...
    @property
    def tool_results(self) -> ToolResultOffload: ...
    @property
    def tool_inputs(self) -> ToolInputOffload: ...
    @property
    def clearing(self) -> ToolResultClearing: ...
    @property
    def summarization(self) -> Summarization: ...
    @property
    def pinning(self) -> Pinning: ...


P = TypeVar("P", bound=PolicyFields)


def output_reserve(window: int, reserve: int | None) -> int:
    """Tokens kept free for the answer: ``reserve``, or a tenth of the window (at most 4,096)."""
    return reserve if reserve is not None else min(4_096, window // 10)


@dataclass(frozen=True, slots=True)
class Budget(Generic[P]):
    """A policy's numbers for one window (see the policy's properties of the same names).

    Attributes:
        policy: The settings it was resolved from (with that window).
        window: The model's input window.
        output_reserve: Tokens kept free for the answer.
        request_limit: The most a request (system, messages, tool schemas) may hold.
        tool_output: The most one call of a recovery tool returns.
        result_threshold: Tool results over this are offloaded.
        high_water: A compaction fires when the request reaches this.
        low_water: A compaction frees the request down to this.
        summary_water: A compaction summarizes when its lossless steps leave more than this.
        input_trigger: Old tool inputs are offloaded from this request size on.
        clearing_trigger: Old tool results are cleared from this request size on.
        clear_at_least: The least a clearing batch must free (unless it keeps a summary away).
        clearing_keep: The recent tool results clearing leaves alone.
        summary_target: After summarizing, the request should hold at most this.
        summary_tokens: The lowest token count that fires summarization (``None``: none).
        summary_messages: The message count that fires summarization (``None``: none).
        keep_window: The recent window summarization leaves alone.
        pinned: The most the user messages a summary pins back in view may take.
    """

    policy: P
    window: int
    output_reserve: int
    request_limit: int
    tool_output: int
    result_threshold: int
    high_water: int
    low_water: int
    summary_water: int
    input_trigger: int
    clearing_trigger: int
    clear_at_least: int
    clearing_keep: KeepWindow
    summary_target: int
    summary_tokens: int | None
    summary_messages: int | None
    keep_window: KeepWindow
    pinned: int

    @classmethod
    def of(cls, policy: P, window: int) -> Budget[P]:
        """Resolves ``policy`` for a window of ``window`` tokens."""
        reserve = output_reserve(window, policy.reserve_output_tokens)
        limit = window - reserve
        summary = policy.summarization
        token_limit = summary.trigger.token_limit(window)
        capped = token_limit if summary.enabled else None
        # the water marks: never above the request limit (a compaction fires before the
        # provider would refuse the request) nor the summarization token trigger, gap kept
        asked_high, own_low = policy.high_water.resolve(limit), policy.low_water.resolve(limit)
        own_high = min(asked_high, limit)
        if own_high < asked_high:  # lowered in proportion: the gap between the marks stays
            own_low = own_low * own_high // asked_high
        high = min(own_high, capped) if capped is not None else own_high
        low = own_low if high >= own_high else max(0, own_low * high // own_high)
        clearing = policy.clearing
        if clearing.trigger is None:
            clearing_trigger = high
        else:
            own = clearing.trigger.resolve(window)
            clearing_trigger = min(own, capped) if capped is not None else own
        inputs = policy.tool_inputs.trigger
        input_trigger = inputs.resolve(window) if inputs is not None else high
        if clearing.enabled:
            input_trigger = min(input_trigger, clearing_trigger)
        keep = clearing.keep.resolve(window)
        if "keep" not in clearing.model_fields_set and keep.messages is not None:
            keep = KeepWindow(messages=keep.messages, tokens=window // 4)
        target = min(token_limit, window) if token_limit is not None else window
        return cls(
            policy=policy,
            window=window,
            output_reserve=reserve,
            request_limit=limit,
            tool_output=min(policy.tool_output.resolve(window), limit),
            result_threshold=_result_threshold(policy.tool_results, window),
            high_water=high,
            low_water=low,
            summary_water=low + (high - low) // 2,
            input_trigger=input_trigger,
            clearing_trigger=clearing_trigger,
            clear_at_least=clearing.clear_at_least.resolve(window),
            clearing_keep=keep,
            summary_target=min(target, limit),
            summary_tokens=token_limit,
            summary_messages=summary.trigger.messages,
            keep_window=summary.keep.resolve(window),
            pinned=policy.pinning.budget.resolve(window),
        )

    def summary_fires(self, tokens: int, messages: int) -> bool:
        """Whether a summarization trigger fires for a request of this size.

        A request over :attr:`request_limit` fires it too, whatever the triggers say.
        """
        if not self.policy.summarization.enabled:
            return False
        limit = self.summary_tokens
        if (limit is not None and tokens >= limit) or tokens > self.request_limit:
            return True
        return self.summary_messages is not None and messages >= self.summary_messages

    def summary_message_room(self, system_messages: int) -> int | None:
        """How many messages a summary may keep after it under a ``messages`` trigger.

        At most half of ``trigger.messages`` in all, system prompt and summary included;
        ``None`` without a ``messages`` trigger.
        """
        if self.summary_messages is None:
            return None
        return max(0, self.summary_messages // 2 - system_messages - 1)


def _result_threshold(settings: ToolResultOffload, window: int) -> int:
    threshold = settings.threshold.resolve(window)
    if "threshold" not in settings.model_fields_set:
        scaled = min(max(MIN_RESULT_THRESHOLD, window // 16), window // 4)
        threshold = min(threshold, max(1, scaled))
    return min(threshold, window)
