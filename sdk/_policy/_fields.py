"""The values settings are made of: token thresholds, triggers and kept windows.

Every threshold is a :class:`Threshold`: either an absolute number of tokens or a fraction
(of ``max_input_tokens``, or for the water marks of the request budget). The kept windows
(:class:`KeepRecent`, :class:`KeepToolResults`) and the summarization trigger
(:class:`SummaryTrigger`) resolve against a window the same way. Each has a plain-dict form
(``...Dict``) for type checkers.

:class:`_Settings` is the base of every settings model: frozen, keyword-only, and an unknown
key is refused with the closest valid one.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

__all__ = [
    "KeepRecent",
    "KeepRecentDict",
    "KeepToolResults",
    "KeepToolResultsDict",
    "KeepWindow",
    "SummaryTrigger",
    "SummaryTriggerDict",
    "Threshold",
    "ThresholdDict",
]


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
            one is at least half of it away; only the task statement's pin and the message
            naming the plan and the other user messages may go beyond it, when the half
            cannot hold them (a trigger of a few messages).
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


@dataclass(frozen=True, slots=True)
class KeepWindow:
    """The protected recent window, resolved.

    For summarization exactly one of the fields is set. For clearing, ``messages`` counts
    tool results, and both may be set: the last N results within the last T tokens.

    Attributes:
        messages: Keep at least the last N messages (widened to whole blocks).
        tokens: Keep the longest run of whole recent blocks within this many tokens (at
            least the most recent block).
    """

    messages: int | None = None
    tokens: int | None = None


class KeepRecent(_Settings):
    """The recent window that summarization never touches. Set exactly one field.

    The window is measured in whole blocks (an AI message with its tool results is never
    split): ``messages`` widens to the start of the block it falls in; ``tokens`` and
    ``fraction`` keep the longest run of whole recent blocks that fits, and always at least
    the most recent block.

    With a ``messages`` trigger the window is also narrowed (to whole blocks, never below the
    most recent one) so that the history a summary leaves holds at most half of
    ``trigger.messages``, system prompt and summary included (beside the task statement's
    pin and the in-view message, when the half leaves them no room): otherwise a window near
    the trigger would fire it again on every turn. For token triggers the margin comes from the
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


# Plain-dict forms of these values, for type checkers: ``ContextPolicy(clearing={"keep":
# {"results": 4}})`` type-checks because each constructor accepts the model or its dict.


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
