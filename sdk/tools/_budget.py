"""How much one tool call may return, in tokens, and how a page is cut to fit.

The recovery tools (``read_file``, ``grep``, ``glob``, ``ls``) are exempt from result
offloading (offloading a read-back would loop), so their output must be bounded by the tool
itself. Each call returns at most :attr:`OutputBudget.max_tokens` tokens, counted exactly
with the workspace tools' counter; a page is cut at a line or entry boundary and ends with
the note that says how to go on.

Counting is kept cheap: when the counter has a byte bound (as
:class:`~ctxfs.TiktokenCounter` does), output that is surely small is never tokenized; a
larger page is counted entry by entry only until the budget is reached, then counted once
exactly as a whole (entries and note together) and shrunk if tokens merged differently at
entry boundaries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Final

from ctxfs._tokens import TokenCounter

__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "MAX_CHARS_PER_TOKEN",
    "MIN_OUTPUT_TOKENS",
    "OutputBudget",
]

DEFAULT_MAX_OUTPUT_TOKENS: Final = 25_000
"""Most tokens one tool call returns when the tools are built without ``max_output_tokens``:
about a quarter of a 100k window, and a few thousand lines of code or prose per page."""

MIN_OUTPUT_TOKENS: Final = 100
"""The smallest ``max_output_tokens`` accepted: room for a paging note and some content."""

MAX_CHARS_PER_TOKEN: Final = 128
"""The most characters one cl100k_base token covers (a run of 128 spaces). A page of ``N``
tokens never spans more than ``N`` times this many characters, so cutting what is read to
that many characters first never drops anything that would have fitted."""

_CLIPPED: Final = "… [output clipped at the {tokens}-token limit of one tool call]"


class OutputBudget:
    """The token budget of one tool call, and the counter it is measured with.

    Example:
        >>> from ctxfs import TiktokenCounter
        >>> budget = OutputBudget(100, TiktokenCounter())
        >>> shown, text = budget.fit([f"line {n}" for n in range(1000)], lambda n: ["..."])
        >>> budget.count(text) <= 100 and text.endswith("\\n...")
        True

    Args:
        max_tokens: Most tokens of one tool call's output, notes included; or a function
            returning it, asked at every call (for a window learned later, from the model).
        counter: What counts them.

    Raises:
        ValueError: ``max_tokens`` is under :data:`MIN_OUTPUT_TOKENS`.
    """

    def __init__(self, max_tokens: int | Callable[[], int], counter: TokenCounter) -> None:
        self._limit = max_tokens
        if not callable(max_tokens):
            _check(max_tokens)
        self._counter = counter
        # Duck-typed, as the engine does: a byte bound is an optional extra of a counter.
        self._bound: Callable[[str], int] | None = getattr(counter, "upper_bound", None)

    @property
    def max_tokens(self) -> int:
        """Most tokens of one tool call's output, notes included."""
        limit = self._limit
        if callable(limit):
            value = limit()
            _check(value)
            return value
        return limit

    @property
    def described(self) -> str:
        """The limit as a tool description states it: ``"25000 tokens"``, or, when it is
        asked at every call, what it follows."""
        if callable(self._limit):
            return "the token limit of one call (a share of the context window)"
        return f"{self._limit} tokens"

    def fixed(self) -> OutputBudget:
        """This budget with its limit asked once: one tool call uses one value throughout."""
        if not callable(self._limit):
            return self
        return OutputBudget(self.max_tokens, self._counter)

    @property
    def max_chars(self) -> int:
        """Most characters a page within the budget can have (see :data:`MAX_CHARS_PER_TOKEN`)."""
        return self.max_tokens * MAX_CHARS_PER_TOKEN

    def count(self, text: str) -> int:
        """The exact tokens of ``text``."""
        return self._counter.count_text(text)

    def fits(self, text: str) -> bool:
        """Whether ``text`` is within the budget (tokenized only when the bound cannot tell)."""
        if self._bound is not None and self._bound(text) <= self.max_tokens:
            return True
        return self.count(text) <= self.max_tokens

    def fit(self, entries: Iterable[str], notes: Callable[[int], Sequence[str]]) -> tuple[int, str]:
        """The most leading entries that fit, one per line, followed by their notes.

        Args:
            entries: The lines (or groups of lines) of the output, in order; consumed only
                as far as the budget reaches.
            notes: The closing lines when the first ``n`` entries are shown (what was
                skipped, how to read on).

        Returns:
            How many entries are shown, and the text: within the budget, unless even no
            entry at all with its notes is over it (then ``0`` and that text; the caller
            cuts the first entry or :meth:`clip` s the text).
        """
        limit = self.max_tokens
        source = iter(entries)
        taken: list[str] = []
        if self._bound is not None:
            # Cheap pass: while the byte bound alone proves the entries fit, count nothing.
            used = 0
            for entry in source:
                taken.append(entry)
                used += self._bound(entry) + 1
                if used > limit:
                    break
            else:
                text = _join(taken, notes(len(taken)))
                if self._bound(text) <= limit:
                    return len(taken), text
        costs = [self.count(entry) + 1 for entry in taken]
        reserve = self.count("\n".join(notes(len(taken))))
        total = sum(costs)
        if total + reserve <= limit:
            for entry in source:
                cost = self.count(entry) + 1
                taken.append(entry)
                costs.append(cost)
                total += cost
                if total + reserve > limit:
                    break
        shown = len(taken)
        while shown and total + reserve > limit:
            shown -= 1
            total -= costs[shown]
        while True:
            text = _join(taken[:shown], notes(shown))
            excess = self.count(text) - limit
            if excess <= 0 or shown == 0:
                return shown, text
            dropped = 0
            while shown and dropped < excess:
                shown -= 1
                dropped += costs[shown]

    def longest_prefix(self, text: str, render: Callable[[str], str]) -> str | None:
        """The longest prefix ``p`` of ``text`` whose ``render(p)`` fits, or ``None``.

        For an entry too large to be shown whole: ``render`` builds the whole output around
        a piece of it (with its marker and notes). Needs about ``log2(len(text))`` counts of
        that output, of at most :attr:`max_chars` characters each.
        """
        if not self.fits(render(text[:1])):
            return None
        text = text[: self.max_chars]  # no longer prefix can fit (see MAX_CHARS_PER_TOKEN)
        low, high = 1, len(text)  # render(text[:low]) fits
        if self.fits(render(text)):
            return text
        while high - low > 1:
            middle = (low + high) // 2
            if self.fits(render(text[:middle])):
                low = middle
            else:
                high = middle
        return text[:low]

    def clip(self, text: str) -> str:
        """``text`` if it fits; otherwise its longest prefix that fits with a marker.

        The tools' outputs fit by construction; this is the last guard, for texts no page
        logic shaped (an error that quotes a huge argument, a note that names huge paths).
        """
        if self.fits(text):
            return text
        marker = "\n" + _CLIPPED.format(tokens=self.max_tokens)
        head = text[: self.max_chars]
        # Grow a prefix geometrically from a size that is nearly always within the budget,
        # so a huge text is never tokenized as a whole.
        good, size = 0, max(1, self.max_tokens // 2)
        while size < len(head) and self.fits(head[:size] + marker):
            good, size = size, size * 2
        high = min(size, len(head))
        if self.fits(head[:high] + marker):
            good = high
        else:
            while high - good > 1:
                middle = (good + high) // 2
                if self.fits(head[:middle] + marker):
                    good = middle
                else:
                    high = middle
        return head[:good] + marker


def _join(entries: Sequence[str], notes: Sequence[str]) -> str:
    return "\n".join([*entries, *notes])


def _check(max_tokens: int) -> None:
    if max_tokens < MIN_OUTPUT_TOKENS:
        raise ValueError(
            f"max_output_tokens must be at least {MIN_OUTPUT_TOKENS} (room for a paging "
            f"note and some content), got {max_tokens}"
        )
