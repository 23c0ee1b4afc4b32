"""What the compaction steps work with: the workspace, the token counter, and their caches.

The steps are functions over values (:mod:`~ctxfs._compaction._results`,
:mod:`~ctxfs._compaction._inputs`, :mod:`~ctxfs._compaction._apply`,
:mod:`~ctxfs._compaction._batch`, :mod:`~ctxfs._compaction._escalation`); the engine hands
each of them its :class:`Means` and its :class:`~ctxfs._policy._budget.Budget`, and holds its
lock around them (the token counter's caches are not thread-safe).

A step that users may also run alone has its public method beside it, in a mixin of the
engine (:class:`~ctxfs._compaction._results.ResultMethods`,
:class:`~ctxfs._compaction._inputs.InputMethods`,
:class:`~ctxfs._compaction._apply.ClearingMethods`), on :class:`EngineState`: what the engine
gives such a method.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from ctxfs._compaction._request import SentRequests
from ctxfs._pointers._recovery import RecoveryTool
from ctxfs._tokens import TokenCounter
from ctxfs._workspace._workspace import Workspace

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from ctxfs._policy._budget import Budget
    from ctxfs._policy._settings import ContextPolicy, ToolInputOffload

__all__ = ["EngineState", "InputScan", "Means"]

_ARG_COUNTS = 4_096
"""The most argument token counts a :class:`Means` keeps (then it starts again)."""


@dataclass(frozen=True, slots=True)
class InputScan:
    """The last input scan of a history (:func:`ctxfs._compaction._inputs.input_frees`):
    the settings it ran with, the counter's record of the tool calls it looked at, and the
    messages that had arguments to consider."""

    settings: ToolInputOffload
    calls: list[object]
    movable: list[int]


@dataclass(frozen=True, slots=True)
class Means:
    """One engine's workspace, token counter and clock, and the caches its steps share.

    Attributes:
        workspace: Where content is saved.
        counter: What counts tokens.
        clock: The time recorded in the transcript index (``None``: now, UTC).
        arg_counts: Token counts of old tool arguments (looked at on every call until their
            batch goes).
        tools: ctxfs's recovery tools on the workspace, by output budget (``None``: the
            default), to repeat re-reads with.
        sent: Per thread, what the last compaction returned (what the provider cached).
    """

    workspace: Workspace
    counter: TokenCounter
    clock: Callable[[], datetime] | None = None
    arg_counts: dict[str, int] = field(default_factory=dict)
    tools: dict[int | None, dict[str, RecoveryTool]] = field(default_factory=dict)
    sent: SentRequests = field(default_factory=SentRequests)
    input_scans: dict[str | None, InputScan] = field(default_factory=dict)
    """The last input scan of each history (see :func:`ctxfs._compaction._inputs.input_frees`)."""

    def arg_tokens(self, value: str) -> int:
        """The tokens of an argument, counted once."""
        tokens = self.arg_counts.get(value)
        if tokens is None:
            if len(self.arg_counts) >= _ARG_COUNTS:
                self.arg_counts.clear()
            tokens = self.arg_counts[value] = self.counter.count_text(value)
        return tokens


class EngineState:
    """What :class:`~ctxfs.ContextEngine` gives the public methods of its steps (the base
    of their mixins): its lock, its :class:`Means`, and its budget for the window."""

    if TYPE_CHECKING:
        _lock: threading.RLock
        _means: Means

        def _resolve(self, model: BaseChatModel | None) -> Budget[ContextPolicy]: ...
