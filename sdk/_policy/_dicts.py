"""Plain-dict forms of the step settings and the policy, for type checkers.

``ContextPolicy(clearing={"keep": {"results": 4}})`` type-checks because each constructor
accepts the model or its dict; the dict forms of the values they are made of
(``ThresholdDict``...) sit beside those values in :mod:`ctxfs._policy._fields`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TypedDict

from langchain_core.language_models import BaseChatModel

from ctxfs._policy._fields import (
    KeepRecent,
    KeepRecentDict,
    KeepToolResults,
    KeepToolResultsDict,
    SummaryTrigger,
    SummaryTriggerDict,
    Threshold,
    ThresholdDict,
)
from ctxfs._policy._pinning import Pinning, PinningDict
from ctxfs._policy._steps import (
    Summarization,
    ToolInputOffload,
    ToolResultClearing,
    ToolResultOffload,
)

__all__ = [
    "ContextPolicyDict",
    "SummarizationDict",
    "ToolInputOffloadDict",
    "ToolResultClearingDict",
    "ToolResultOffloadDict",
]


class ToolResultOffloadDict(TypedDict, total=False):
    """A :class:`ToolResultOffload` as a plain dict."""

    enabled: bool
    threshold: Threshold | ThresholdDict
    preview_lines: int
    preview_line_chars: int
    exempt_tools: Collection[str]
    max_media_bytes: int


class ToolInputOffloadDict(TypedDict, total=False):
    """A :class:`ToolInputOffload` as a plain dict."""

    enabled: bool
    trigger: Threshold | ThresholdDict | None
    keep_messages: int
    args: Mapping[str, Sequence[str]]
    min_chars: int


class ToolResultClearingDict(TypedDict, total=False):
    """A :class:`ToolResultClearing` as a plain dict."""

    enabled: bool
    trigger: Threshold | ThresholdDict | None
    keep: KeepToolResults | KeepToolResultsDict
    min_tokens: int
    clear_at_least: Threshold | ThresholdDict
    frees_per_rewrite: float
    exempt_tools: Collection[str]
    recovery_tools: Collection[str]


class SummarizationDict(TypedDict, total=False):
    """A :class:`Summarization` as a plain dict."""

    enabled: bool
    trigger: SummaryTrigger | SummaryTriggerDict
    keep: KeepRecent | KeepRecentDict
    trim_tokens_to_summarize: int
    prompt: str
    model: BaseChatModel | None


class ContextPolicyDict(TypedDict, total=False):
    """A :class:`ContextPolicy` as a plain dict."""

    max_input_tokens: int | None
    reserve_output_tokens: int | None
    high_water: Threshold | ThresholdDict
    low_water: Threshold | ThresholdDict
    tool_output: Threshold | ThresholdDict
    tool_results: ToolResultOffload | ToolResultOffloadDict
    tool_inputs: ToolInputOffload | ToolInputOffloadDict
    clearing: ToolResultClearing | ToolResultClearingDict
    summarization: Summarization | SummarizationDict
    pinning: Pinning | PinningDict
