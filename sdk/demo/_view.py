"""How the demo shows each turn: a live rich table, or plain lines (``--no-live``, CI, pipes).

A turn is one model call: the context size the model was sent against the budget, what the
model did, and what ctxfs did around it (offloaded results and inputs, summaries, with the
workspace paths). Both views are fed the same :class:`Turn` records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Protocol

from ctxfs._events import ContextEvent, ContextMeasured
from ctxfs._events import describe_event as describe

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live

__all__ = ["LiveView", "PlainView", "Turn", "View", "describe_event"]

_BAR = 24


@dataclass(slots=True)
class Turn:
    """One model call and what happened around it.

    Attributes:
        number: 1-based turn number.
        tokens_before: Context tokens before compaction.
        tokens: Context tokens the model was sent.
        budget: The policy's ``max_input_tokens``.
        without: Tokens the model would have been sent without ctxfs: everything offloaded,
            cleared and summarized so far put back.
        action: What the model did (a tool call or its answer), once known.
        notes: What ctxfs did, one line each.
    """

    number: int
    tokens_before: int
    tokens: int
    budget: int
    without: int = 0
    action: str = ""
    notes: list[str] = field(default_factory=list)


class View(Protocol):
    """Where the demo reports progress."""

    def update(self, turns: Sequence[Turn]) -> None:
        """Shows the turns so far (the last one may still change)."""

    def message(self, text: str, *, title: str | None = None) -> None:
        """Shows a block of text (a summary, the final answer)."""

    def close(self) -> None:
        """Finishes the display."""


def describe_event(event: ContextEvent) -> str | None:
    """One line about what ctxfs did, or ``None`` for events not worth a line."""
    if isinstance(event, ContextMeasured):
        return None
    return describe(event)


def _bar(tokens: int, budget: int) -> str:
    filled = min(_BAR, round(_BAR * tokens / budget)) if budget else 0
    return "█" * filled + "░" * (_BAR - filled)


def _context(turn: Turn) -> str:
    text = f"{turn.tokens:,}/{turn.budget:,}"
    if turn.tokens_before != turn.tokens:
        text = f"{turn.tokens_before:,} -> {text}"
    return text


def _without(turn: Turn) -> str:
    return f"(without ctxfs: {turn.without:,})" if turn.without > turn.tokens else ""


def _line(turn: Turn) -> str:
    return (
        f"turn {turn.number:>2}  context {_context(turn):>22} tokens {_without(turn):>24}  "
        f"{turn.action}"
    )


class PlainView:
    """Plain lines on a stream: one block per turn, printed when the next one starts."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._printed = 0
        self._pending: list[Turn] = []

    def update(self, turns: Sequence[Turn]) -> None:
        """Prints every turn that is complete (all but the last)."""
        self._flush(turns[:-1])
        self._pending = list(turns)

    def _flush(self, turns: Sequence[Turn]) -> None:
        for turn in turns[self._printed :]:
            print(_line(turn), file=self._stream)
            for note in turn.notes:
                print(f"          ctxfs: {note}", file=self._stream)
        self._printed = max(self._printed, len(turns))

    def message(self, text: str, *, title: str | None = None) -> None:
        """Prints a titled block after the turns that are complete."""
        done = self._pending if self._pending and self._pending[-1].action else self._pending[:-1]
        self._flush(done)
        if title:
            print(f"\n== {title} ==", file=self._stream)
        print(text, file=self._stream)

    def close(self) -> None:
        """Prints the last turn."""
        self._flush(self._pending)


class LiveView:
    """A live rich table, redrawn after every step of the agent."""

    def __init__(self, console: Console) -> None:
        from rich.live import Live

        self._console = console
        self._live: Live = Live(console=console, auto_refresh=False, transient=False)
        self._live.start()
        self._turns: list[Turn] = []

    def update(self, turns: Sequence[Turn]) -> None:
        """Redraws the table."""
        from rich.table import Table
        from rich.text import Text

        self._turns = list(turns)
        table = Table(title="ctxfs demo: context per model call", expand=True)
        table.add_column("#", justify="right", width=3)
        table.add_column("context / budget", width=_BAR + 2)
        table.add_column("model", ratio=2, overflow="fold")
        table.add_column("ctxfs", ratio=3, overflow="fold")
        for turn in turns[-14:]:
            share = turn.tokens / turn.budget if turn.budget else 0
            colour = "red" if share > 0.85 else "yellow" if share > 0.6 else "green"
            context = Text(_bar(turn.tokens, turn.budget), style=colour)
            context.append(f"\n{_context(turn)}")
            if turn.without > turn.tokens:
                context.append(f"\nwithout ctxfs {turn.without:,}", style="dim")
            notes = "\n".join(turn.notes)
            table.add_row(str(turn.number), context, turn.action, Text(notes, style="cyan"))
        self._live.update(table, refresh=True)

    def message(self, text: str, *, title: str | None = None) -> None:
        """Prints a panel above the table."""
        from rich.panel import Panel

        self._live.console.print(Panel(text, title=title, expand=True))

    def close(self) -> None:
        """Stops the live display, then logs every turn in order (the table shows the last)."""
        self._live.stop()
        self._console.print("\nEvery turn, in order:", highlight=False)
        for turn in self._turns:
            self._console.print(_line(turn), highlight=False, markup=False)
            for note in turn.notes:
                self._console.print(f"          ctxfs: {note}", highlight=False, markup=False)
