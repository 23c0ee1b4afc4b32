"""The pinning settings: what a summary puts back in view after itself (see
:mod:`ctxfs._summary._pins`)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, TypedDict

from pydantic import Field, field_validator

from ctxfs._policy._fields import Threshold, ThresholdDict, _Settings

__all__ = ["Pinning", "PinningDict"]


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
        budget: The tokens the pinned user messages may take (default: 15 % of the window);
            never more than leaves new turns a quarter of their room: the tokens below where
            the next summary fires (the high-water mark, or the summary's target when
            lower), beside what every request holds until then (the system prompt, tool
            schemas, the summary and the task statement).
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


class PinningDict(TypedDict, total=False):
    """:class:`Pinning` as a dict."""

    enabled: bool
    budget: Threshold | ThresholdDict
    machine_made: str | None
    pointers: int
    notes_path: str | None
    notes_tokens: int
