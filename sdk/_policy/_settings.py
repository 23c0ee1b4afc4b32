"""What the context engine does, and when: validated, immutable settings.

Every threshold is a :class:`Threshold`: either an absolute number of tokens or a fraction
(of ``max_input_tokens``, or for the water marks of the request budget)::

    ContextPolicy(
        max_input_tokens=200_000,
        tool_results=ToolResultOffload(threshold=Threshold(tokens=20_000)),
        high_water=Threshold(fraction=0.9),
        low_water=Threshold(fraction=0.5),
    )

Every step is on by default: a policy with only ``max_input_tokens`` offloads large tool
results when they arrive. When the request reaches the high-water mark, one compaction plans
the lossless steps together, oldest first (large old tool inputs and old tool results to
pointers), down to the low-water mark, and applies them at once: a provider's prompt cache
breaks once per compaction, and between compactions the history only grows at its end. Only
when those steps cannot reach the low-water mark (and leave the request above the halfway
point between the marks) does it also summarize, keeping the most recent 10 % of the window.
``clearing={"enabled": False}`` turns clearing off::

    ContextPolicy(
        max_input_tokens=200_000,
        summarization=Summarization(
            trigger=SummaryTrigger(fraction=0.85, messages=400),   # any one fires
            keep=KeepRecent(fraction=0.3),                          # exactly one kind
            trim_tokens_to_summarize=8_000,
            model=my_cheap_chat_model,                              # optional
        ),
    )

Plain dicts work wherever a settings object is expected (``trigger={"fraction": 0.85}``), and
``model_dump()`` gives back the settings that were chosen (defaults left out, since several of
them scale with the window), so a dumped policy loads back as the same policy.
Invalid settings raise ``pydantic.ValidationError`` (a ``ValueError``) at construction, with a
message that says what to write instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self, cast

from pydantic import Field, field_validator, model_validator

from ctxfs._policy._budget import Budget
from ctxfs._policy._dicts import (
    ContextPolicyDict,
    SummarizationDict,
    ToolInputOffloadDict,
    ToolResultClearingDict,
    ToolResultOffloadDict,
)
from ctxfs._policy._fields import (
    KeepRecent,
    KeepRecentDict,
    KeepToolResults,
    KeepToolResultsDict,
    KeepWindow,
    SummaryTrigger,
    SummaryTriggerDict,
    Threshold,
    ThresholdDict,
)
from ctxfs._policy._fields import _Settings as _Settings  # the base, for other settings
from ctxfs._policy._pinning import Pinning, PinningDict
from ctxfs._policy._steps import (
    DEFAULT_EXEMPT_TOOLS,
    Summarization,
    ToolInputOffload,
    ToolResultClearing,
    ToolResultOffload,
)

__all__ = [
    "DEFAULT_EXEMPT_TOOLS",
    "ContextPolicy",
    "ContextPolicyDict",
    "KeepRecent",
    "KeepRecentDict",
    "KeepToolResults",
    "KeepToolResultsDict",
    "Pinning",
    "PinningDict",
    "Summarization",
    "SummarizationDict",
    "SummaryTrigger",
    "SummaryTriggerDict",
    "Threshold",
    "ThresholdDict",
    "ToolInputOffload",
    "ToolInputOffloadDict",
    "ToolResultClearing",
    "ToolResultClearingDict",
    "ToolResultOffload",
    "ToolResultOffloadDict",
]

_BUDGET_KEY = "_ctxfs_budget"


class ContextPolicy(_Settings):
    """Everything the context engine is allowed to do, for one model's window.

    The budget is the request the model receives: its system message, the messages, the
    tool schemas, and room for the answer. Every trigger and target compares against that
    whole request, and :attr:`request_limit_tokens` is what it may never exceed.

    Attributes:
        max_input_tokens: The model's input window in tokens; fractions resolve against it.
            ``None`` reads it from the model's profile (``model.profile["max_input_tokens"]``,
            as LangChain chat models carry it) the first time the integration sees the
            model; without one, ctxfs raises an error saying to set it.
        reserve_output_tokens: Room kept for the model's answer: a request never exceeds
            ``max_input_tokens - reserve_output_tokens`` without a
            :class:`~ctxfs.ContextOverBudget` event saying why (default: a tenth of the
            window, at most 4,096 tokens).
        tool_output: The most one call of a recovery tool (``read_file``, ``grep``, ``glob``,
            ``ls``) returns, as a share of the window or in tokens (default 20 % of the
            window); the tools page beyond it.
        high_water: When a compaction fires: the request reaching this many tokens, or this
            share of :attr:`request_limit_tokens` (default 80 %; never above the request
            limit nor the summarization token trigger). A compaction plans old tool inputs
            and old tool results together, oldest first, down to ``low_water``, and applies
            them at once: the prompt prefix a provider caches changes once, and between
            compactions the history only grows at its end.
        low_water: Where a compaction stops: this many tokens, or this share of
            :attr:`request_limit_tokens` (default 35 %). Only when the lossless steps cannot
            get the request down to it, and leave it above the halfway point between the
            marks (:attr:`summary_water_tokens`), does the compaction also summarize. Must be
            below ``high_water``: the gap is what the agent appends before the next
            compaction.
        tool_results: Offloading of large tool results (step 1).
        tool_inputs: Offloading of large old tool inputs (step 2).
        clearing: Clearing old tool results to pointers (step 3, before summarizing).
        summarization: Archiving and summarizing old messages (step 4).
        pinning: What a summary puts back in view after itself: the user's messages
            verbatim, the plan, the agent's notes.
    """

    max_input_tokens: int | None = None
    reserve_output_tokens: int | None = None
    high_water: Threshold = Field(default_factory=lambda: Threshold(fraction=0.8))
    low_water: Threshold = Field(default_factory=lambda: Threshold(fraction=0.35))
    tool_output: Threshold = Field(default_factory=lambda: Threshold(fraction=0.2))
    tool_results: ToolResultOffload = Field(default_factory=ToolResultOffload)
    tool_inputs: ToolInputOffload = Field(default_factory=ToolInputOffload)
    clearing: ToolResultClearing = Field(default_factory=ToolResultClearing)
    summarization: Summarization = Field(default_factory=Summarization)
    pinning: Pinning = Field(default_factory=Pinning)

    if TYPE_CHECKING:  # what a type checker accepts: a settings object or a plain dict

        def __init__(
            self,
            *,
            max_input_tokens: int | None = ...,
            reserve_output_tokens: int | None = ...,
            high_water: Threshold | ThresholdDict = ...,
            low_water: Threshold | ThresholdDict = ...,
            tool_output: Threshold | ThresholdDict = ...,
            tool_results: ToolResultOffload | ToolResultOffloadDict = ...,
            tool_inputs: ToolInputOffload | ToolInputOffloadDict = ...,
            clearing: ToolResultClearing | ToolResultClearingDict = ...,
            summarization: Summarization | SummarizationDict = ...,
            pinning: Pinning | PinningDict = ...,
        ) -> None: ...

    @field_validator("max_input_tokens", mode="before")
    @classmethod
    def _check_window(cls, value: Any) -> Any:
        if value is None:
            return value
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(
                "max_input_tokens must be the model's input window as a positive whole number "
                f"of tokens, e.g. max_input_tokens=200_000; got {value!r}"
            )
        return value

    @field_validator("reserve_output_tokens", mode="before")
    @classmethod
    def _check_reserve(cls, value: Any) -> Any:
        if value is None:
            return value
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(
                "reserve_output_tokens must be a whole number of tokens, 0 or more, e.g. "
                f"reserve_output_tokens=4_096; got {value!r}"
            )
        return value

    @model_validator(mode="after")
    def _check_consistency(self) -> Self:
        self._check_water_marks()
        if self.max_input_tokens is None:
            return self
        window = self.max_input_tokens
        results = self.tool_results
        # Only an explicit threshold is checked: the default scales with the window instead,
        # so ContextPolicy(max_input_tokens=8_000) just works.
        explicit = "threshold" in results.model_fields_set
        if explicit and results.threshold.resolve(window) > window:
            raise ValueError(
                f"tool_results.threshold ({results.threshold.describe()}) is larger than "
                f"max_input_tokens ({window}): a result that size could never "
                "fit; use a smaller tokens value or a fraction, e.g. fraction=0.1"
            )
        if self.reserve_output_tokens is not None and self.reserve_output_tokens >= window:
            raise ValueError(
                f"reserve_output_tokens ({self.reserve_output_tokens}) leaves no room for the "
                f"request in a window of {window} tokens; reserve less, e.g. "
                f"reserve_output_tokens={min(4_096, window // 10)}"
            )
        self._check_summarization()
        return self

    def _check_water_marks(self) -> None:
        high, low = self.high_water, self.low_water
        if high.tokens is not None and low.tokens is not None:
            below = low.tokens < high.tokens
        elif high.fraction is not None and low.fraction is not None:
            below = low.fraction < high.fraction
        elif self.max_input_tokens is not None:
            budget = self.request_limit_tokens
            below = low.resolve(budget) < high.resolve(budget)
        else:
            return  # checked once the window is known
        if not below:
            raise ValueError(
                f"low_water ({low.describe()}) must be below high_water ({high.describe()}): a "
                "compaction fires at the high-water mark and frees down to the low-water mark, "
                "e.g. high_water={'fraction': 0.9}, low_water={'fraction': 0.5}"
            )

    def _check_summarization(self) -> None:
        summary = self.summarization
        if not summary.enabled:
            return
        keep = summary.keep.resolve(self.window)
        target = self.summary_target_tokens
        if keep.tokens is not None and keep.tokens >= target:
            raise ValueError(
                f"summarization.keep ({summary.keep.describe()}, {keep.tokens} tokens) is not "
                f"smaller than the target it must get under ({target} tokens, from "
                f"summarization.trigger {summary.trigger.describe()}); keep less, e.g. "
                "keep={'fraction': 0.3}"
            )

    # -- the window -----------------------------------------------------------------------

    @property
    def window(self) -> int:
        """The model's input window in tokens.

        Raises:
            ValueError: ``max_input_tokens`` is not set and was not read from a model yet.
        """
        if self.max_input_tokens is None:
            raise ValueError(
                "the model's window is not known: set ContextPolicy(max_input_tokens=...) or "
                "use a chat model whose profile gives max_input_tokens"
            )
        return self.max_input_tokens

    def with_window(self, max_input_tokens: int) -> ContextPolicy:
        """Returns this policy for a window of ``max_input_tokens`` (validated again)."""
        fields = {name: getattr(self, name) for name in type(self).model_fields}
        return type(self)(**{**fields, "max_input_tokens": max_input_tokens})

    @property
    def output_reserve_tokens(self) -> int:
        """Tokens kept free for the answer (see :attr:`reserve_output_tokens`)."""
        return self.budget.output_reserve

    @property
    def request_limit_tokens(self) -> int:
        """The most tokens a request (system, messages, tool schemas) may hold."""
        return self.budget.request_limit

    @property
    def tool_output_tokens(self) -> int:
        """The most tokens one call of a recovery tool returns (see :attr:`tool_output`)."""
        return self.budget.tool_output

    @property
    def result_threshold_tokens(self) -> int:
        """Tool results over this many tokens are offloaded.

        An explicit threshold is used as given (never more than the window); the default,
        20,000 tokens, scales down with the window: to a sixteenth of it, but not below
        2,000 tokens unless that is more than a quarter of the window. A large result sits in
        every request until a compaction clears it, so it is cheaper as a pointer from the
        start, and one result cannot take most of a small window.
        """
        return self.budget.result_threshold

    @property
    def high_water_tokens(self) -> int:
        """A compaction fires when the request reaches this many tokens.

        :attr:`high_water` resolved against :attr:`request_limit_tokens`, and never above
        that limit nor the summarization token trigger (when summarization is on): the
        lossless steps are always tried before a summary, and before a refusal.
        """
        return self.budget.high_water

    @property
    def low_water_tokens(self) -> int:
        """A compaction frees the request down to this many tokens.

        :attr:`low_water` resolved against :attr:`request_limit_tokens`; when the
        summarization trigger holds the high-water mark lower than :attr:`high_water`, the
        low-water mark is lowered in proportion, so the gap between them stays.
        """
        return self.budget.low_water

    @property
    def summary_water_tokens(self) -> int:
        """A compaction summarizes when its lossless steps leave the request above this.

        Halfway between the marks: the lossless steps did not reach the low-water mark,
        and what they left is closer to the next compaction than to that mark, so a summary
        is worth its cost. Below it, the compaction stops where the lossless steps got.
        """
        return self.budget.summary_water

    @property
    def input_trigger_tokens(self) -> int:
        """Tool inputs are offloaded once the request reaches this many tokens.

        An explicit :attr:`ToolInputOffload.trigger`, else the high-water mark. With
        clearing on, never above :attr:`clearing_trigger_tokens`: whenever clearing runs the
        input offload runs in the same batch.
        """
        return self.budget.input_trigger

    @property
    def clearing_trigger_tokens(self) -> int:
        """Old tool results are cleared once the request reaches this many tokens.

        An explicit :attr:`ToolResultClearing.trigger` (never above the summarization token
        trigger: clearing is always tried before a summary), else the high-water mark.
        """
        return self.budget.clearing_trigger

    @property
    def clear_at_least_tokens(self) -> int:
        """The least a clearing batch must free (unless it keeps a summary away)."""
        return self.budget.clear_at_least

    @property
    def clearing_keep(self) -> KeepWindow:
        """The recent tool results clearing leaves alone (``messages`` counts results).

        The default, the last 4 results, is also held to the last quarter of the window in
        tokens, so that in a small window the kept results cannot fill it.
        """
        return self.budget.clearing_keep

    @property
    def summary_target_tokens(self) -> int:
        """After summarizing, the context should hold at most this many tokens.

        The lowest token trigger of :attr:`Summarization.trigger` (so the trigger no longer
        fires), or the window itself when only a ``messages`` trigger is set; never more
        than :attr:`request_limit_tokens`, so the room kept for the answer stays free.
        """
        return self.budget.summary_target

    def summary_fires(self, tokens: int, messages: int) -> bool:
        """Returns whether a summarization trigger fires for a request of this size.

        A request over :attr:`request_limit_tokens` fires it too, whatever the triggers say.
        """
        return self.budget.summary_fires(tokens, messages)

    def summary_message_room(self, system_messages: int) -> int | None:
        """Returns how many messages a summary may keep after it under a ``messages`` trigger.

        The history a summary leaves (system prompt, summary and kept messages) holds at most
        half of ``trigger.messages``, so at least that many new messages come before the next
        summary; without the cap a kept window near the trigger would fire it on every turn,
        rewriting the summary (and the prompt prefix a provider caches) each time. The same
        margin as for tokens, where the default keep (10 % of the window) is well under the
        trigger (85 %). ``None`` without a ``messages`` trigger.
        """
        return self.budget.summary_message_room(system_messages)

    @property
    def keep_window(self) -> KeepWindow:
        """The recent window summarization leaves alone, resolved against the window."""
        return self.budget.keep_window

    @property
    def budget(self) -> Budget[ContextPolicy]:
        """Every number above for this policy's window, resolved once (a frozen value).

        Kept with the policy; a copy (``model_copy``, :meth:`with_window`) resolves its own.

        Raises:
            ValueError: The policy has no window yet (see :attr:`window`).
        """
        cached = self.__dict__.get(_BUDGET_KEY)
        if isinstance(cached, tuple) and cached[0] == id(self):
            return cast("Budget[ContextPolicy]", cached[1])
        budget = Budget.of(self, self.window)
        # beside the fields (never compared, dumped or validated); a copy's id differs
        self.__dict__[_BUDGET_KEY] = (id(self), budget)
        return budget
