"""The settings of each step: result offload, input offload, clearing, summarization.

Each model says whether its step runs, when, and what it keeps; the numbers they come to
for one window are resolved once, in :mod:`ctxfs._policy._budget`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self

from langchain_core.language_models import BaseChatModel
from pydantic import ConfigDict, Field, field_validator, model_validator

from ctxfs._policy._fields import (
    KeepRecent,
    KeepToolResults,
    SummaryTrigger,
    Threshold,
    _Settings,
)
from ctxfs._policy._prompt import DEFAULT_SUMMARY_PROMPT

if TYPE_CHECKING:
    from collections.abc import Collection

    from ctxfs._policy._fields import (
        KeepRecentDict,
        KeepToolResultsDict,
        SummaryTriggerDict,
        ThresholdDict,
    )

__all__ = [
    "DEFAULT_EXEMPT_TOOLS",
    "Summarization",
    "ToolInputOffload",
    "ToolResultClearing",
    "ToolResultOffload",
]

DEFAULT_EXEMPT_TOOLS: frozenset[str] = frozenset({"read_file", "grep", "glob", "ls"})
"""The names of ctxfs's recovery tools: they page through large files instead of being
offloaded (recognised by identity, not by these names: see ``ToolResultOffload``)."""


class ToolResultOffload(_Settings):
    """When a tool result is saved to a file and replaced by a pointer with a preview.

    Attributes:
        enabled: Turn result offloading off entirely with ``False``.
        threshold: Results over this many tokens are offloaded (default 20,000 tokens, and
            in windows under 320,000 tokens a sixteenth of the window, at least 2,000).
        preview_lines: How many first lines the pointer shows (default 10; 0 for none).
        preview_line_chars: Each preview line is clipped to this many characters (default 200).
        exempt_tools: More tools, by name, whose results are never offloaded (default: none).
            ctxfs's own recovery tools (``ls``, ``read_file``, ``glob``, ``grep``) are
            never offloaded, as they page instead (reading an offloaded file back never
            offloads it again); they are recognised by identity, not by name, so another
            tool called ``read_file`` is offloaded like any tool.
        max_media_bytes: A media block (image, audio, video, file) of a result whose
            decoded payload is larger is saved to a binary file and replaced by a reference
            when the tool returns (default 5 MiB, the smallest per-image limit of the major
            providers). A media block billed over ``threshold`` tokens moves too; a smaller
            image stays for the model to see until old results are cleared.
    """

    enabled: bool = True
    threshold: Threshold = Field(default_factory=lambda: Threshold(tokens=20_000))
    preview_lines: int = 10
    preview_line_chars: int = 200
    exempt_tools: frozenset[str] = frozenset()
    max_media_bytes: int = 5 * 1024 * 1024

    if TYPE_CHECKING:  # what a type checker accepts: a settings object or a plain dict

        def __init__(
            self,
            *,
            enabled: bool = ...,
            threshold: Threshold | ThresholdDict = ...,
            preview_lines: int = ...,
            preview_line_chars: int = ...,
            exempt_tools: Collection[str] = ...,
            max_media_bytes: int = ...,
        ) -> None: ...

    @field_validator("max_media_bytes")
    @classmethod
    def _check_max_media_bytes(cls, value: int) -> int:
        if value < 0:
            raise ValueError(
                f"max_media_bytes must be 0 or more, e.g. max_media_bytes=5242880; got {value}"
            )
        return value

    @field_validator("preview_lines")
    @classmethod
    def _check_preview_lines(cls, value: int) -> int:
        if value < 0:
            raise ValueError(f"preview_lines must be 0 or more, e.g. preview_lines=10; got {value}")
        return value

    @field_validator("preview_line_chars")
    @classmethod
    def _check_preview_line_chars(cls, value: int) -> int:
        if value < 1:
            raise ValueError(
                f"preview_line_chars must be at least 1, e.g. preview_line_chars=200; got {value}"
            )
        return value


class ToolInputOffload(_Settings):
    """When large arguments of old tool calls are saved to files and replaced by pointers.

    Old inputs move in a compaction (see :attr:`ContextPolicy.high_water`), in the same batch
    as old tool results, oldest first: one compaction changes the prompt prefix once. Below
    the high-water mark they move with the clearing batch (see
    :attr:`ToolResultClearing.trigger`); an explicit ``trigger`` also moves every offloadable
    argument outside the ``keep_messages`` most recent messages once the request reaches it.

    Any string argument of any tool counts (a ``bash`` heredoc, a ``Write`` content...):
    ``args`` narrows it down for the tools it names.

    Attributes:
        enabled: Turn input offloading off entirely with ``False``.
        trigger: Also offload, below the high-water mark, once the request reaches this many
            tokens; ``None`` (the default) leaves it to the compactions and, with clearing on,
            to clearing's batches (from its trigger).
        keep_messages: The most recent messages, never touched (default 10).
        args: For the tools it names, the only arguments offloaded, e.g.
            ``{"write_file": ["content"]}``; every other tool's string arguments all count
            (the default: ``{}``).
        min_chars: Arguments shorter than this many characters stay inline (default 500):
            a pointer costs about as much as a small argument (one that would not be smaller
            than its argument is never made).
    """

    enabled: bool = True
    trigger: Threshold | None = None
    keep_messages: int = 10
    args: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    min_chars: int = 500

    if TYPE_CHECKING:  # what a type checker accepts: a settings object or a plain dict

        def __init__(
            self,
            *,
            enabled: bool = ...,
            trigger: Threshold | ThresholdDict | None = ...,
            keep_messages: int = ...,
            args: Mapping[str, Sequence[str]] = ...,
            min_chars: int = ...,
        ) -> None: ...

    @field_validator("keep_messages")
    @classmethod
    def _check_keep(cls, value: int) -> int:
        if value < 0:
            raise ValueError(f"keep_messages must be 0 or more, e.g. keep_messages=20; got {value}")
        return value

    @field_validator("min_chars")
    @classmethod
    def _check_min_chars(cls, value: int) -> int:
        if value < 1:
            raise ValueError(f"min_chars must be at least 1, e.g. min_chars=2_000; got {value}")
        return value

    @field_validator("args", mode="before")
    @classmethod
    def _check_args(cls, value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise ValueError(
                'args maps tool names to argument names, e.g. args={"write_file": ["content"]}'
            )
        fixed: dict[Any, Any] = {}
        for tool, names in value.items():
            if isinstance(names, str):
                raise ValueError(
                    f"args[{tool!r}] must be a list of argument names; "
                    f"write args={{{tool!r}: [{names!r}]}}"
                )
            fixed[tool] = tuple(names)
        return fixed


class ToolResultClearing(_Settings):
    """When old tool results are cleared to short pointers (the step before summarizing).

    In a compaction (see :attr:`ContextPolicy.high_water`), tool results outside the
    ``keep`` window whose message holds at least ``min_tokens`` tokens are saved to the
    workspace (or found there, if they were offloaded already) and replaced by a pointer of a
    line (the size, the path of the full text and its first line),
    oldest first, in the same batch as old tool inputs, down to the low-water mark. Between
    compactions, from ``trigger`` on, every such result and old input goes in one batch once
    that batch is worth the cache write it causes (``clear_at_least``,
    ``frees_per_rewrite``): a result is cleared soon after it leaves the ``keep`` window,
    while little of the request follows it. Clearing is sticky (a cleared result is never
    restored or rewritten) and batched, so the prompt prefix, and a provider's prompt
    cache, changes only when a batch pays for it.

    Attributes:
        enabled: Turn clearing off entirely with ``False``.
        trigger: Also clear, below the high-water mark, once the request reaches this many
            tokens (every old result, in batches worth their cache write: see
            ``clear_at_least`` and ``frees_per_rewrite``; default 10 % of the window);
            ``None`` leaves it to the compactions at the high-water mark.
        keep: The recent tool results never cleared (default: the last 4).
        min_tokens: Results whose message holds fewer tokens stay (default 150): a pointer
            costs 30 to 60 tokens.
        clear_at_least: With a ``trigger``, the least a batch below the high-water mark
            must free (default 2 % of the window), unless it is what keeps a summary away.
        frees_per_rewrite: With a ``trigger``, a batch below the high-water mark
            also frees at least this many tokens for each token of the request after its
            first change (what a provider's cache must write again), unless it is what keeps
            a summary away (default 0.5: at a cache write of 1.25 and a read of 0.1, the
            batch has paid for its write within about 23 requests; 0 leaves only
            ``clear_at_least``).
        exempt_tools: Tools whose results are never cleared (default: none).
        recovery_tools: Tools that show saved content: their results on a path inside the
            SDK's areas (``/tool_results``, ``/tool_inputs``, ``/transcripts``) are cleared to
            a pointer naming that path and the call, and never saved a second time.
    """

    enabled: bool = True
    trigger: Threshold | None = Field(default_factory=lambda: Threshold(fraction=0.1))
    keep: KeepToolResults = Field(default_factory=lambda: KeepToolResults(results=4))
    min_tokens: int = 150
    clear_at_least: Threshold = Field(default_factory=lambda: Threshold(fraction=0.02))
    frees_per_rewrite: float = 0.5
    exempt_tools: frozenset[str] = frozenset()
    recovery_tools: frozenset[str] = DEFAULT_EXEMPT_TOOLS

    if TYPE_CHECKING:  # what a type checker accepts: a settings object or a plain dict

        def __init__(
            self,
            *,
            enabled: bool = ...,
            trigger: Threshold | ThresholdDict | None = ...,
            keep: KeepToolResults | KeepToolResultsDict = ...,
            min_tokens: int = ...,
            clear_at_least: Threshold | ThresholdDict = ...,
            frees_per_rewrite: float = ...,
            exempt_tools: Collection[str] = ...,
            recovery_tools: Collection[str] = ...,
        ) -> None: ...

    @field_validator("min_tokens")
    @classmethod
    def _check_min_tokens(cls, value: int) -> int:
        if value < 1:
            raise ValueError(f"min_tokens must be at least 1, e.g. min_tokens=150; got {value}")
        return value

    @field_validator("frees_per_rewrite")
    @classmethod
    def _check_frees_per_rewrite(cls, value: float) -> float:
        if not math.isfinite(value) or value < 0:
            raise ValueError(
                f"frees_per_rewrite must be 0 or more, e.g. frees_per_rewrite=0.5; got {value}"
            )
        return value


class Summarization(_Settings):
    """When old messages are archived and replaced by a summary (step 4), and how.

    Attributes:
        enabled: Turn summarization off entirely with ``False``.
        trigger: When to summarize (default: at 85 % of the window). Tool-input offload and
            clearing run first in the same pass (from their own, lower triggers); if what
            they move brings the history back under this trigger, nothing is summarized.
        keep: The recent window left as it is (default: 10 % of the window: the lossless
            steps have already shrunk what is older, and a deeper cut leaves more room before
            the next compaction).
        trim_tokens_to_summarize: The most tokens of archived messages the summary model is
            shown (default 8,000): the beginning (where the intent is) and the end. Never
            unbounded.
        prompt: The summary prompt; ``{messages}`` is replaced by the messages (other braces
            are left alone).
        model: A langchain chat model that writes the summary (a small, cheap one is fine).
            ``None`` (the default) uses the deterministic extractive summary. An answer
            longer than half of what is left below where the next summary fires (beside the
            system prompt, tool schemas and recent window) gives way to the extractive
            summary, and the ``Summarized`` event's ``model_error`` says so. Not serialized.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    enabled: bool = True
    trigger: SummaryTrigger = Field(default_factory=lambda: SummaryTrigger(fraction=0.85))
    keep: KeepRecent = Field(default_factory=lambda: KeepRecent(fraction=0.1))
    trim_tokens_to_summarize: int = 8_000
    prompt: str = DEFAULT_SUMMARY_PROMPT
    model: BaseChatModel | None = Field(default=None, exclude=True, repr=False)

    if TYPE_CHECKING:  # what a type checker accepts: a settings object or a plain dict

        def __init__(
            self,
            *,
            enabled: bool = ...,
            trigger: SummaryTrigger | SummaryTriggerDict = ...,
            keep: KeepRecent | KeepRecentDict = ...,
            trim_tokens_to_summarize: int = ...,
            prompt: str = ...,
            model: BaseChatModel | None = ...,
        ) -> None: ...

    @field_validator("trim_tokens_to_summarize", mode="before")
    @classmethod
    def _check_trim(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or value < 100:
            raise ValueError(
                "trim_tokens_to_summarize must be a whole number of at least 100 tokens, e.g. "
                f"trim_tokens_to_summarize=8_000 (it is never unbounded); got {value!r}"
            )
        return value

    @field_validator("prompt")
    @classmethod
    def _check_prompt(cls, value: str) -> str:
        if "{messages}" not in value:
            raise ValueError(
                "prompt must contain the placeholder {messages}, where the messages to "
                "summarize go, e.g. prompt='Summarize this session:\\n{messages}'"
            )
        return value

    @field_validator("model", mode="before")
    @classmethod
    def _check_model(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, BaseChatModel):
            raise ValueError(
                "model must be a langchain chat model (a BaseChatModel such as "
                f"ChatOpenAI(...)), or None for the extractive summary; got {type(value)!r}"
            )
        return value

    @model_validator(mode="after")
    def _check_keep_under_trigger(self) -> Self:
        limit, keep = self.trigger.messages, self.keep.messages
        if self.enabled and limit is not None and keep is not None and keep >= limit:
            raise ValueError(
                f"keep (messages={keep}) must be smaller than trigger messages={limit}, or "
                "every new message would fire the trigger again; a summary keeps at most "
                "half of trigger.messages (system prompt and summary included), so write "
                f"e.g. keep={{'messages': {max(0, limit // 2 - 2)}}}"
            )
        return self
