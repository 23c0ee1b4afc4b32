"""How long threads are kept: the retention settings, and the durations they are written in."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["Retention", "format_duration", "parse_duration"]

_UNITS = {"w": 604_800, "d": 86_400, "h": 3_600, "m": 60, "s": 1}
_PART = re.compile(r"(\d+)([wdhms])")
_WHOLE = re.compile(r"(?:\d+[wdhms])+")


def parse_duration(text: str) -> timedelta:
    """Reads a duration written as a number and a unit, or several: ``7d``, ``12h``, ``30m``,
    ``1d12h``, ``2w``, ``90s``.

    Example:
        >>> parse_duration("1d12h")
        datetime.timedelta(days=1, seconds=43200)

    Raises:
        ValueError: Anything else, with a message that says what to write.
    """
    compact = text.strip().lower().replace(" ", "")
    if not _WHOLE.fullmatch(compact):
        raise ValueError(
            f"{text!r} is not a duration: write a number and a unit, e.g. 30m, 12h, 7d or "
            "1d12h (units: w weeks, d days, h hours, m minutes, s seconds)"
        )
    seconds = sum(int(n) * _UNITS[unit] for n, unit in _PART.findall(compact))
    if seconds == 0:
        raise ValueError(f"{text!r} is no time at all: give a duration above zero, e.g. 7d")
    try:
        return timedelta(seconds=seconds)
    except OverflowError:
        raise ValueError(
            f"{text!r} is longer than a duration can be (at most {timedelta.max.days:,}d)"
        ) from None


def format_duration(delta: timedelta) -> str:
    """A duration in its two largest units: ``9d 4h``, ``3h 20m``, ``45s``.

    Example:
        >>> format_duration(timedelta(days=9, hours=4, minutes=5))
        '9d 4h'
    """
    seconds = max(0, int(delta.total_seconds()))
    values: list[tuple[int, str]] = []
    for unit in "dhms":
        values.append((seconds // _UNITS[unit], unit))
        seconds %= _UNITS[unit]
    first = next((i for i, (n, _) in enumerate(values) if n), len(values) - 1)
    shown = [values[first]]
    if first + 1 < len(values) and values[first + 1][0]:
        shown.append(values[first + 1])
    return " ".join(f"{n}{unit}" for n, unit in shown)


class Retention(BaseModel):
    """Which threads a garbage collection removes: those past retention.

    A thread (with its sub-agent threads) is past retention when it has been idle longer
    than ``older_than``, or, while the threads together hold more than ``max_bytes``, when
    it is the oldest one left that has been idle at least ``min_idle``. Whatever the
    settings, a thread is kept when a kept thread, or the workspace's long-term memory,
    still points to it, or when ``keep`` names it.

    Durations are :class:`~datetime.timedelta` s or text such as ``"7d"``, ``"12h"``,
    ``"30m"`` (:func:`parse_duration`).

    Example:
        >>> Retention(older_than="7d", max_bytes=500_000_000).older_than
        datetime.timedelta(days=7)

    Attributes:
        older_than: Remove threads idle for longer than this.
        max_bytes: Then remove the oldest threads until the rest hold at most this many bytes
            (results, inputs and transcripts).
        min_idle: The ``max_bytes`` cap never removes a thread active more recently than
            this (a thread an agent is working on). Default: 1 hour.
        keep: Thread ids never removed.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    older_than: timedelta | None = None
    max_bytes: int | None = Field(default=None, ge=0)
    min_idle: timedelta = timedelta(hours=1)
    keep: frozenset[str] = frozenset()

    @field_validator("older_than", "min_idle", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return parse_duration(value) if isinstance(value, str) else value

    @field_validator("older_than", "min_idle")
    @classmethod
    def _positive(cls, value: timedelta | None) -> timedelta | None:
        if value is not None and value < timedelta(0):
            raise ValueError("a duration cannot be negative")
        return value

    @model_validator(mode="after")
    def _something(self) -> Retention:
        if self.older_than is None and self.max_bytes is None:
            raise ValueError(
                "say what is past retention: older_than (e.g. '7d'), max_bytes, or both"
            )
        return self
