"""Values a policy resolves against a window: what each step protects, in numbers.

A :class:`~ctxfs._policy._settings.ContextPolicy` states its settings as fractions, token counts
and message counts; the engine works on what they come to for one window.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KeepWindow"]


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
