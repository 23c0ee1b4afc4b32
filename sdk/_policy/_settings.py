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

import difflib
import re
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self, TypedDict

from langchain_core.language_models import BaseChatModel
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from ctxfs._policy._budget import KeepWindow
from ctxfs._policy._prompt import DEFAULT_SUMMARY_PROMPT

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

_MIN_RESULT_THRESHOLD = 2_000
"""The default result threshold scales down with the window to no less than this."""

DEFAULT_EXEMPT_TOOLS: frozenset[str] = frozenset({"read_file", "grep", "glob", "ls"})
"""Recovery tools: they page through large files instead of being offloaded."""


class _Settings(BaseModel):
    """Base of every settings model: frozen, keyword-only, unknown keys refused helpfully."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _check_raw(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            known = set(cls.model_fields)
            for key in data:
                if isinstance(key, str) and key not in known:
                    close = difflib.get_close_matches(key, sorted(known), n=1)
                    hint = f"did you mean {close[0]!r}? " if close else ""
                    raise ValueError(
                        f"{cls.__name__} has no setting {key!r}; {hint}"
                        f"valid settings: {', '.join(sorted(known))}"
                    )
            cls._check_raw_mapping(data)
        return data

    @classmethod
    def _check_raw_mapping(cls, data: Mapping[str, Any]) -> None:
        """Hook for checks on the raw keyword arguments, after the unknown-key check."""

    @model_serializer(mode="wrap")
    def _chosen_only(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A dump holds the settings that were chosen, not the defaults: several defaults
        # scale with the window (a chosen value is used as given), so a dump loaded back must
        # leave them defaults for the policy to stay the same one.
        data = handler(self)
        if not isinstance(data, dict):  # pragma: no cover - models dump to dicts
            return data
        return {key: value for key, value in data.items() if key in self.model_fields_set}


class Threshold(_Settings):
    """A token count, absolute or relative to the window. Set exactly one field.

    Attributes:
        tokens: An absolute number of tokens, e.g. ``Threshold(tokens=20_000)``.
        fraction: A share of ``max_input_tokens`` in (0, 1], e.g. ``Threshold(fraction=0.85)``.
    """

    tokens: int | None = None
    fraction: float | None = None

    @classmethod
    def _check_raw_mapping(cls, data: Mapping[str, Any]) -> None:
        tokens, fraction = data.get("tokens"), data.get("fraction")
        if tokens is not None and fraction is not None:
            raise ValueError(
                "set either tokens or fraction, not both: tokens=20_000 for an absolute count, "
                "fraction=0.85 for a share of max_input_tokens"
            )
        if tokens is None and fraction is None:
            raise ValueError(
                "set tokens (an absolute count, e.g. tokens=20_000) or fraction (a share of "
                "max_input_tokens, e.g. fraction=0.85)"
            )
        if tokens is not None:
            _check_tokens(tokens)
        if fraction is not None:
            _check_fraction(fraction)

    def resolve(self, max_input_tokens: int) -> int:
        """Returns the threshold in tokens for a window of ``max_input_tokens``.

        A fraction is rounded down, but never below 1 token.
        """
        if self.tokens is not None:
            return self.tokens
        assert self.fraction is not None  # guaranteed by validation
        return max(1, int(self.fraction * max_input_tokens))

    def describe(self) -> str:
        """Returns the threshold as a user would write it, e.g. ``tokens=20000``."""
        return f"tokens={self.tokens}" if self.tokens is not None else f"fraction={self.fraction}"


def _check_tokens(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(
            f"tokens must be a whole number of tokens, e.g. tokens=20_000; got {value!r}"
        )
    if isinstance(value, float) and 0 < value <= 1:
        raise ValueError(
            f"tokens={value} looks like a share of the window; write fraction={value} instead"
        )
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(f"tokens must be a whole number, e.g. tokens={int(value)}; got {value}")
    if value <= 0:
        raise ValueError(f"tokens must be positive, e.g. tokens=20_000; got {value}")


def _check_fraction(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"fraction must be a number in (0, 1], e.g. fraction=0.85; got {value!r}")
    if 1 < value <= 100:
        raise ValueError(
            f"fraction must be in (0, 1]; for {value:g} % write fraction={value / 100:g}"
        )
    if not 0 < value <= 1:
        raise ValueError(
            f"fraction must be in (0, 1], e.g. fraction=0.85; for an absolute count write "
            f"tokens=...; got {value}"
        )


class ToolResultOffload(_Settings):
    """When a tool result is saved to a file and replaced by a pointer with a preview.

    Attributes:
        enabled: Turn result offloading off entirely with ``False``.
        threshold: Results over this many tokens are offloaded (default 20,000 tokens, and
            in windows under 320,000 tokens a sixteenth of the window, at least 2,000).
        preview_lines: How many first lines the pointer shows (default 10; 0 for none).
        preview_line_chars: Each preview line is clipped to this many characters (default 200).
        exempt_tools: Tools never offloaded: the recovery tools, which page instead, so that
            reading an offloaded file back never offloads it again.
    """

    enabled: bool = True
    threshold: Threshold = Field(default_factory=lambda: Threshold(tokens=20_000))
    preview_lines: int = 10
    preview_line_chars: int = 200
    exempt_tools: frozenset[str] = DEFAULT_EXEMPT_TOOLS

    if TYPE_CHECKING:  # what a type checker accepts: a settings object or a plain dict

        def __init__(
            self,
            *,
            enabled: bool = ...,
            threshold: Threshold | ThresholdDict = ...,
            preview_lines: int = ...,
            preview_line_chars: int = ...,
            exempt_tools: Collection[str] = ...,
        ) -> None: ...

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
    as old tool results, oldest first: one compaction changes the prompt prefix once. An
    explicit ``trigger`` also moves every offloadable argument outside the ``keep_messages``
    most recent messages once the request reaches it, below the high-water mark.

    Any string argument of any tool counts (a ``bash`` heredoc, a ``Write`` content...):
    ``args`` narrows it down for the tools it names.

    Attributes:
        enabled: Turn input offloading off entirely with ``False``.
        trigger: Also offload, below the high-water mark, once the request reaches this many
            tokens; ``None`` (the default) leaves it to the compactions at the high-water
            mark.
        keep_messages: The most recent messages, never touched (default 20).
        args: For the tools it names, the only arguments offloaded, e.g.
            ``{"write_file": ["content"]}``; every other tool's string arguments all count
            (the default: ``{}``).
        min_chars: Arguments shorter than this many characters stay inline (default 2,000):
            a pointer costs about as much as a small argument.
    """

    enabled: bool = True
    trigger: Threshold | None = None
    keep_messages: int = 20
    args: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    min_chars: int = 2_000

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


def _check_messages(value: object, example: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            f"messages must be a whole number of messages, e.g. {example}; got {value!r}"
        )


class SummaryTrigger(_Settings):
    """When summarization fires. Set one or more fields; any one that is reached fires.

    Attributes:
        fraction: A share of ``max_input_tokens``, e.g. ``fraction=0.85`` (the default).
        tokens: An absolute count, e.g. ``tokens=150_000``.
        messages: A number of messages in the history, e.g. ``messages=400``. A summary then
            leaves at most half that many (system prompt and summary included), so the next
            one is at least half of it away.
    """

    fraction: float | None = None
    tokens: int | None = None
    messages: int | None = None

    @classmethod
    def _check_raw_mapping(cls, data: Mapping[str, Any]) -> None:
        if all(data.get(k) is None for k in ("fraction", "tokens", "messages")):
            raise ValueError(
                "set at least one of fraction (e.g. fraction=0.85), tokens (e.g. "
                "tokens=150_000) or messages (e.g. messages=400); to turn summarization off "
                "write summarization={'enabled': False}"
            )
        if data.get("fraction") is not None:
            _check_fraction(data["fraction"])
        if data.get("tokens") is not None:
            _check_tokens(data["tokens"])
        if data.get("messages") is not None:
            _check_messages(data["messages"], "messages=400")
            if data["messages"] < 1:
                raise ValueError("messages must be at least 1, e.g. messages=400")

    def token_limit(self, max_input_tokens: int) -> int | None:
        """Returns the lowest token count that fires, or ``None`` without a token trigger."""
        limits = []
        if self.fraction is not None:
            limits.append(max(1, int(self.fraction * max_input_tokens)))
        if self.tokens is not None:
            limits.append(self.tokens)
        return min(limits) if limits else None

    def describe(self) -> str:
        """Returns the trigger as a user would write it, e.g. ``fraction=0.85, messages=400``."""
        fields = ("fraction", "tokens", "messages")
        return ", ".join(f"{k}={getattr(self, k)}" for k in fields if getattr(self, k) is not None)


class KeepRecent(_Settings):
    """The recent window that summarization never touches. Set exactly one field.

    The window is measured in whole blocks (an AI message with its tool results is never
    split): ``messages`` widens to the start of the block it falls in; ``tokens`` and
    ``fraction`` keep the longest run of whole recent blocks that fits, and always at least
    the most recent block.

    With a ``messages`` trigger the window is also narrowed (to whole blocks, never below the
    most recent one) so that the history a summary leaves holds at most half of
    ``trigger.messages``, system prompt and summary included: otherwise a window near the
    trigger would fire it again on every turn. For token triggers the margin comes from the
    keep itself: the default 10 % of the window is well under the 85 % trigger.

    Attributes:
        messages: The last N messages, e.g. ``messages=20``; ``0`` keeps nothing.
        tokens: An absolute count, e.g. ``tokens=40_000``.
        fraction: A share of ``max_input_tokens``, e.g. ``fraction=0.1`` (the default).
    """

    messages: int | None = None
    tokens: int | None = None
    fraction: float | None = None

    @classmethod
    def _check_raw_mapping(cls, data: Mapping[str, Any]) -> None:
        given = [k for k in ("messages", "tokens", "fraction") if data.get(k) is not None]
        if len(given) != 1:
            raise ValueError(
                "set exactly one of messages (e.g. messages=20), tokens (e.g. tokens=40_000) "
                f"or fraction (e.g. fraction=0.3); got {', '.join(given) or 'none'}"
            )
        if given == ["messages"]:
            _check_messages(data["messages"], "messages=20")
        elif given == ["tokens"]:
            _check_tokens(data["tokens"])
        else:
            _check_fraction(data["fraction"])

    def resolve(self, max_input_tokens: int) -> KeepWindow:
        """Returns the window for a context of ``max_input_tokens``."""
        if self.messages is not None:
            return KeepWindow(messages=self.messages)
        if self.tokens is not None:
            return KeepWindow(tokens=self.tokens)
        assert self.fraction is not None  # guaranteed by validation
        return KeepWindow(tokens=int(self.fraction * max_input_tokens))

    def describe(self) -> str:
        """Returns the window as a user would write it, e.g. ``fraction=0.3``."""
        for key in ("messages", "tokens", "fraction"):
            if getattr(self, key) is not None:
                return f"{key}={getattr(self, key)}"
        return ""  # pragma: no cover - validation guarantees a field


class KeepToolResults(_Settings):
    """The recent tool results that clearing never touches. Set exactly one field.

    Results the model has not seen yet (those after the last AI message) are always kept on
    top of this window.

    Attributes:
        results: The last N tool results, e.g. ``results=8``; ``0`` keeps only the unseen ones.
        tokens: The results within the last N tokens of the history, e.g. ``tokens=20_000``.
        fraction: The same as a share of ``max_input_tokens``, e.g. ``fraction=0.25``.
    """

    results: int | None = None
    tokens: int | None = None
    fraction: float | None = None

    @classmethod
    def _check_raw_mapping(cls, data: Mapping[str, Any]) -> None:
        given = [k for k in ("results", "tokens", "fraction") if data.get(k) is not None]
        if len(given) != 1:
            raise ValueError(
                "set exactly one of results (e.g. results=8), tokens (e.g. tokens=20_000) "
                f"or fraction (e.g. fraction=0.25); got {', '.join(given) or 'none'}"
            )
        if given == ["results"]:
            value = data["results"]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(
                    f"results must be a whole number of tool results, e.g. results=8; got {value!r}"
                )
        elif given == ["tokens"]:
            _check_tokens(data["tokens"])
        else:
            _check_fraction(data["fraction"])

    def resolve(self, max_input_tokens: int) -> KeepWindow:
        """Returns the window for a context of ``max_input_tokens``.

        ``KeepWindow.messages`` carries the number of tool results (not messages) here.
        """
        if self.results is not None:
            return KeepWindow(messages=self.results)
        if self.tokens is not None:
            return KeepWindow(tokens=self.tokens)
        assert self.fraction is not None  # guaranteed by validation
        return KeepWindow(tokens=int(self.fraction * max_input_tokens))

    def describe(self) -> str:
        """Returns the window as a user would write it, e.g. ``results=8``."""
        for key in ("results", "tokens", "fraction"):
            if getattr(self, key) is not None:
                return f"{key}={getattr(self, key)}"
        return ""  # pragma: no cover - validation guarantees a field


class ToolResultClearing(_Settings):
    """When old tool results are cleared to short pointers (the step before summarizing).

    In a compaction (see :attr:`ContextPolicy.high_water`), tool results outside the
    ``keep`` window whose message holds at least ``min_tokens`` tokens are saved to the
    workspace (or found there, if they were offloaded already) and replaced by a pointer of a
    line (the size, the path of the full text and its first line),
    oldest first, in the same batch as old tool inputs, down to the low-water mark. Clearing
    is sticky (a cleared result is never restored or rewritten) and batched, so the prompt
    prefix, and a provider's prompt cache, stays stable between compactions.

    Attributes:
        enabled: Turn clearing off entirely with ``False``.
        trigger: Also clear, below the high-water mark, once the request reaches this many
            tokens (every old result, in batches of at least ``clear_at_least``); ``None``
            (the default) leaves it to the compactions at the high-water mark.
        keep: The recent tool results never cleared (default: the last 8).
        min_tokens: Results whose message holds fewer tokens stay (default 150): a pointer
            costs 30 to 60 tokens.
        clear_at_least: With an explicit ``trigger``, the least a batch below the high-water
            mark must free (default 5 % of the window), unless it is what keeps a summary
            away.
        exempt_tools: Tools whose results are never cleared (default: none).
        recovery_tools: Tools that show saved content: their results on a path inside the
            SDK's areas (``/tool_results``, ``/tool_inputs``, ``/transcripts``) are cleared to
            a pointer naming that path and the call, and never saved a second time.
    """

    enabled: bool = True
    trigger: Threshold | None = None
    keep: KeepToolResults = Field(default_factory=lambda: KeepToolResults(results=8))
    min_tokens: int = 150
    clear_at_least: Threshold = Field(default_factory=lambda: Threshold(fraction=0.05))
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
            exempt_tools: Collection[str] = ...,
            recovery_tools: Collection[str] = ...,
        ) -> None: ...

    @field_validator("min_tokens")
    @classmethod
    def _check_min_tokens(cls, value: int) -> int:
        if value < 1:
            raise ValueError(f"min_tokens must be at least 1, e.g. min_tokens=150; got {value}")
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
            ``None`` (the default) uses the deterministic extractive summary. Not serialized.
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


class Pinning(_Settings):
    """What a summary puts back in view, right after itself, from what it archived.

    The summary drops older messages into the archive; without pinning, the task statement
    and the user's later words would then be in the context only as the summary paraphrases
    them. With it, they stay verbatim: copies of the archived user messages follow the
    summary (the originals stay in the transcript, byte-exact), newest first within
    ``budget``; older ones beyond it become one-line pointers to their archived copy, never
    a paraphrase. The first user message (the task statement) is kept whenever the request
    can hold it, even beyond ``budget``. The plan (the todo list given to the compaction from
    live state) and the agent's notes file follow them, re-read at every summary, never taken
    from the summary's text. All of it sits where a summary rewrites the context anyway, so a
    provider's prompt cache still breaks once per compaction.

    Attributes:
        enabled: ``False`` puts nothing back: the summary alone stands for what it replaced.
        budget: The tokens the pinned user messages may take (default: 15 % of the window).
        machine_made: A regular expression (Python ``re``, searched from the start of the
            text) telling user-role messages that a program wrote (tool notifications,
            reminders) from the user's own words: those are archived like any message and
            never pinned. ``None`` (the default) pins every user-role message.
        pointers: How many of the newest user messages that do not fit get a pointer each
            (default 20); older ones are counted in one line.
        notes_path: A workspace file the agent keeps notes in (e.g. ``"/notes.md"``), pinned
            after the plan, at most ``notes_tokens`` of it; ``None`` (the default): none.
        notes_tokens: The most tokens of the notes file put back (default 1,000).
    """

    enabled: bool = True
    budget: Threshold = Field(default_factory=lambda: Threshold(fraction=0.15))
    machine_made: str | None = None
    pointers: int = 20
    notes_path: str | None = None
    notes_tokens: int = 1_000

    if TYPE_CHECKING:  # what a type checker accepts: a settings object or a plain dict

        def __init__(
            self,
            *,
            enabled: bool = ...,
            budget: Threshold | ThresholdDict = ...,
            machine_made: str | None = ...,
            pointers: int = ...,
            notes_path: str | None = ...,
            notes_tokens: int = ...,
        ) -> None: ...

    @field_validator("machine_made")
    @classmethod
    def _check_pattern(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(
                    f"machine_made must be a Python regular expression, e.g. "
                    f"machine_made=r'<(system-reminder|task-notification)>'; {exc}"
                ) from None
        return value

    @field_validator("pointers", "notes_tokens", mode="before")
    @classmethod
    def _check_count(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"must be a whole number, 0 or more; got {value!r}")
        return value

    @field_validator("notes_path")
    @classmethod
    def _check_notes_path(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("/"):
            raise ValueError(
                f"notes_path is a workspace path from /, e.g. '/notes.md'; got {value!r}"
            )
        return value


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
            share of :attr:`request_limit_tokens` (default 70 %; never above the
            summarization token trigger). A compaction plans old tool inputs and old tool
            results together, oldest first, down to ``low_water``, and applies them at once:
            the prompt prefix a provider caches changes once, and between compactions the
            history only grows at its end.
        low_water: Where a compaction stops: this many tokens, or this share of
            :attr:`request_limit_tokens` (default 30 %). Only when the lossless steps cannot
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
    high_water: Threshold = Field(default_factory=lambda: Threshold(fraction=0.7))
    low_water: Threshold = Field(default_factory=lambda: Threshold(fraction=0.3))
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
        if self.reserve_output_tokens is not None:
            return self.reserve_output_tokens
        return min(4_096, self.window // 10)

    @property
    def request_limit_tokens(self) -> int:
        """The most tokens a request (system, messages, tool schemas) may hold."""
        return self.window - self.output_reserve_tokens

    @property
    def tool_output_tokens(self) -> int:
        """The most tokens one call of a recovery tool returns (see :attr:`tool_output`)."""
        return min(self.tool_output.resolve(self.window), self.request_limit_tokens)

    # -- the steps ------------------------------------------------------------------------

    @property
    def result_threshold_tokens(self) -> int:
        """Tool results over this many tokens are offloaded.

        An explicit threshold is used as given (never more than the window); the default,
        20,000 tokens, scales down with the window: to a sixteenth of it, but not below
        2,000 tokens unless that is more than a quarter of the window. A large result sits in
        every request until a compaction clears it, so it is cheaper as a pointer from the
        start, and one result cannot take most of a small window.
        """
        settings = self.tool_results
        threshold = settings.threshold.resolve(self.window)
        if "threshold" not in settings.model_fields_set:
            scaled = min(max(_MIN_RESULT_THRESHOLD, self.window // 16), self.window // 4)
            threshold = min(threshold, max(1, scaled))
        return min(threshold, self.window)

    @property
    def high_water_tokens(self) -> int:
        """A compaction fires when the request reaches this many tokens.

        :attr:`high_water` resolved against :attr:`request_limit_tokens`, and never above the
        summarization token trigger (when summarization is on): the lossless steps are
        always tried before a summary.
        """
        own = self.high_water.resolve(self.request_limit_tokens)
        limit = self.summarization.trigger.token_limit(self.window)
        if self.summarization.enabled and limit is not None:
            return min(own, limit)
        return own

    @property
    def low_water_tokens(self) -> int:
        """A compaction frees the request down to this many tokens.

        :attr:`low_water` resolved against :attr:`request_limit_tokens`; when the
        summarization trigger holds the high-water mark lower than :attr:`high_water`, the
        low-water mark is lowered in proportion, so the gap between them stays.
        """
        budget = self.request_limit_tokens
        own_low, own_high = self.low_water.resolve(budget), self.high_water.resolve(budget)
        high = self.high_water_tokens
        if high >= own_high:
            return own_low
        return max(0, own_low * high // own_high)

    @property
    def summary_water_tokens(self) -> int:
        """A compaction summarizes when its lossless steps leave the request above this.

        Halfway between the marks: the lossless steps did not reach the low-water mark,
        and what they left is closer to the next compaction than to that mark, so a summary
        is worth its cost. Below it, the compaction stops where the lossless steps got.
        """
        low = self.low_water_tokens
        return low + (self.high_water_tokens - low) // 2

    @property
    def input_trigger_tokens(self) -> int:
        """Tool inputs are offloaded once the request reaches this many tokens.

        An explicit :attr:`ToolInputOffload.trigger`, else the high-water mark. With
        clearing on, never above :attr:`clearing_trigger_tokens`: whenever clearing runs the
        input offload runs in the same batch.
        """
        trigger = self.tool_inputs.trigger
        own = trigger.resolve(self.window) if trigger is not None else self.high_water_tokens
        return min(own, self.clearing_trigger_tokens) if self.clearing.enabled else own

    @property
    def clearing_trigger_tokens(self) -> int:
        """Old tool results are cleared once the request reaches this many tokens.

        An explicit :attr:`ToolResultClearing.trigger` (never above the summarization token
        trigger: clearing is always tried before a summary), else the high-water mark.
        """
        trigger = self.clearing.trigger
        if trigger is None:
            return self.high_water_tokens
        own = trigger.resolve(self.window)
        limit = self.summarization.trigger.token_limit(self.window)
        if self.summarization.enabled and limit is not None:
            return min(own, limit)
        return own

    @property
    def clear_at_least_tokens(self) -> int:
        """The least a clearing batch must free (unless it keeps a summary away)."""
        return self.clearing.clear_at_least.resolve(self.window)

    @property
    def clearing_keep(self) -> KeepWindow:
        """The recent tool results clearing leaves alone (``messages`` counts results).

        The default, the last 8 results, is also held to the last quarter of the window in
        tokens, so that in a small window the kept results cannot fill it.
        """
        keep = self.clearing.keep.resolve(self.window)
        if "keep" in self.clearing.model_fields_set or keep.messages is None:
            return keep
        return KeepWindow(messages=keep.messages, tokens=self.window // 4)

    @property
    def summary_target_tokens(self) -> int:
        """After summarizing, the context should hold at most this many tokens.

        The lowest token trigger of :attr:`Summarization.trigger` (so the trigger no longer
        fires), or the window itself when only a ``messages`` trigger is set; never more
        than :attr:`request_limit_tokens`, so the room kept for the answer stays free.
        """
        limit = self.summarization.trigger.token_limit(self.window)
        target = min(limit, self.window) if limit is not None else self.window
        return min(target, self.request_limit_tokens)

    def summary_fires(self, tokens: int, messages: int) -> bool:
        """Returns whether a summarization trigger fires for a request of this size.

        A request over :attr:`request_limit_tokens` fires it too, whatever the triggers say.
        """
        settings = self.summarization
        if not settings.enabled:
            return False
        limit = settings.trigger.token_limit(self.window)
        if (limit is not None and tokens >= limit) or tokens > self.request_limit_tokens:
            return True
        return settings.trigger.messages is not None and messages >= settings.trigger.messages

    def summary_message_room(self, system_messages: int) -> int | None:
        """Returns how many messages a summary may keep after it under a ``messages`` trigger.

        The history a summary leaves (system prompt, summary and kept messages) holds at most
        half of ``trigger.messages``, so at least that many new messages come before the next
        summary; without the cap a kept window near the trigger would fire it on every turn,
        rewriting the summary (and the prompt prefix a provider caches) each time. The same
        margin as for tokens, where the default keep (10 % of the window) is well under the
        trigger (85 %). ``None`` without a ``messages`` trigger.
        """
        limit = self.summarization.trigger.messages
        if limit is None:
            return None
        return max(0, limit // 2 - system_messages - 1)

    @property
    def keep_window(self) -> KeepWindow:
        """The recent window summarization leaves alone, resolved against the window."""
        return self.summarization.keep.resolve(self.window)


# Plain-dict forms of the settings, for type checkers: ``ContextPolicy(clearing={"keep":
# {"results": 4}})`` type-checks because each constructor above accepts the model or its dict.


class ThresholdDict(TypedDict, total=False):
    """A :class:`Threshold` as a plain dict."""

    tokens: int | None
    fraction: float | None


class SummaryTriggerDict(TypedDict, total=False):
    """A :class:`SummaryTrigger` as a plain dict."""

    fraction: float | None
    tokens: int | None
    messages: int | None


class KeepRecentDict(TypedDict, total=False):
    """A :class:`KeepRecent` as a plain dict."""

    messages: int | None
    tokens: int | None
    fraction: float | None


class KeepToolResultsDict(TypedDict, total=False):
    """A :class:`KeepToolResults` as a plain dict."""

    results: int | None
    tokens: int | None
    fraction: float | None


class ToolResultOffloadDict(TypedDict, total=False):
    """A :class:`ToolResultOffload` as a plain dict."""

    enabled: bool
    threshold: Threshold | ThresholdDict
    preview_lines: int
    preview_line_chars: int
    exempt_tools: Collection[str]


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


class PinningDict(TypedDict, total=False):
    """:class:`Pinning` as a dict."""

    enabled: bool
    budget: Threshold | ThresholdDict
    machine_made: str | None
    pointers: int
    notes_path: str | None
    notes_tokens: int
