"""What a compaction comes to: the result and its events, as functions over values.

- :class:`Fixed`: the parts of a request given apart from the messages (system, tools);
- :class:`SentRequests`: per thread, the messages the last compaction returned, which is
  what the provider cached, to price a prefix change (:class:`~ctxfs._events.PrefixChanged`);
- :func:`compaction_result`: the :class:`~ctxfs._events.CompactionResult`, with a
  :class:`~ctxfs._events.ContextOverBudget` when the request is still over its limit;
- :func:`forced`: the policy at its hardest, for a request the provider refused;
  :func:`requested`: a summary now (``compact_now``), which :func:`summarized_or_refused`
  checks was made.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage

from ctxfs._compaction._means import Offered
from ctxfs._compaction._prefix import shared_prefix
from ctxfs._events import (
    CompactionResult,
    ContextEvent,
    ContextOverBudget,
    PrefixChanged,
    Summarized,
)
from ctxfs._policy._settings import (
    ContextPolicy,
    KeepRecent,
    KeepToolResults,
    SummaryTrigger,
    Threshold,
)
from ctxfs._tokens import TokenCounter

__all__ = [
    "WORTH_COMPACTING",
    "Fixed",
    "NothingToCompact",
    "SentRequests",
    "compaction_result",
    "forced",
    "requested",
    "summarized_or_refused",
]

_SENT_THREADS = 256
"""The most threads whose last request an engine remembers (the oldest is forgotten)."""


@dataclass(frozen=True, slots=True)
class Fixed:
    """Tokens of the parts of a request given apart from the messages.

    Attributes:
        system: Of the system message.
        tools: Of the tool schemas.
        offered: ctxfs's recovery tools among the tools, by name.
    """

    system: int = 0
    tools: int = 0
    offered: Offered = field(default_factory=dict)

    @property
    def tokens(self) -> int:
        """Both together."""
        return self.system + self.tools


class SentRequests:
    """Per thread, the messages the last compaction returned (at most 256 threads)."""

    def __init__(self) -> None:
        self._sent: dict[str, list[BaseMessage]] = {}

    def record(
        self,
        thread_id: str,
        original: Sequence[BaseMessage],
        messages: list[BaseMessage],
        counter: TokenCounter,
    ) -> list[PrefixChanged]:
        """Keeps ``messages`` as the thread's last request; says what a changed prefix cost."""
        changed: list[PrefixChanged] = []
        shared = shared_prefix(original, messages)
        if shared < len(original):
            # What the provider holds is the part of the previous request this one still
            # starts with; messages appended since were never cached.
            previous = self._sent.get(thread_id)
            held = shared_prefix(previous, original) if previous is not None else len(original)
            given_up = counter.count_messages(original[shared:held]) if held > shared else 0
            changed.append(PrefixChanged(first_changed=shared, tokens_given_up=given_up))
        self._sent.pop(thread_id, None)
        if len(self._sent) >= _SENT_THREADS:
            del self._sent[next(iter(self._sent))]
        self._sent[thread_id] = messages
        return changed


def compaction_result(
    policy: ContextPolicy,
    messages: list[BaseMessage],
    events: Sequence[ContextEvent],
    before: int,
    after: int,
    fixed: Fixed,
    why_not: str | None,
) -> CompactionResult:
    """The result of a compaction that left ``after`` tokens of messages."""
    target = policy.summary_target_tokens
    extra = fixed.tokens
    reached = after + extra <= target
    request, limit = after + extra, policy.request_limit_tokens
    if request > limit:
        reason = why_not or _why_not_compacted(policy)
        if extra > limit:  # nothing compaction does can help: say so first
            reason = (
                f"the system prompt and tool schemas alone are {extra:,} tokens (system "
                f"{fixed.system:,}, tools {fixed.tools:,}), over the limit {limit:,}"
            )
        over = ContextOverBudget(
            tokens=request,
            limit=limit,
            system=fixed.system,
            tools=fixed.tools,
            messages=after,
            reason=reason,
        )
        events = [*events, over]
    return CompactionResult(
        messages=messages,
        events=tuple(events),
        tokens_before=before,
        tokens_after=after,
        fixed_tokens=extra,
        target=target,
        reached_target=reached,
        reason=None if reached else why_not,
    )


WORTH_COMPACTING = 1_000
"""The fewest tokens :meth:`ContextEngine.compact_now <ctxfs.ContextEngine.compact_now>`
summarizes: below it a summary would save about what it costs to write and to send."""


class NothingToCompact(ValueError):
    """A compaction asked for now found nothing worth compacting; nothing was changed."""


def summarized_or_refused(result: CompactionResult) -> CompactionResult:
    """``result`` if it summarized; else :class:`NothingToCompact` saying why."""
    if any(isinstance(event, Summarized) for event in result.events):
        return result
    why = result.reason or "no summary was made"
    raise NothingToCompact(f"nothing worth compacting now: {why}")


def requested(policy: ContextPolicy) -> ContextPolicy:
    """The policy with its summary trigger fired: a summary now, keeping the recent window."""
    summarization = policy.summarization.model_copy(update={"trigger": SummaryTrigger(tokens=1)})
    return policy.model_copy(update={"summarization": summarization})


def forced(policy: ContextPolicy) -> ContextPolicy:
    """The policy at its hardest: every step fires, only the latest block is kept."""
    clearing = policy.clearing.model_copy(
        update={
            "trigger": Threshold(tokens=1),
            "keep": KeepToolResults(results=0),
            "clear_at_least": Threshold(tokens=1),
        }
    )
    summarization = policy.summarization.model_copy(
        update={"trigger": SummaryTrigger(tokens=1), "keep": KeepRecent(messages=1)}
    )
    inputs = policy.tool_inputs.model_copy(
        update={"trigger": Threshold(tokens=1), "keep_messages": 0}
    )
    return policy.model_copy(
        update={
            "clearing": clearing,
            "summarization": summarization,
            "tool_inputs": inputs,
            "high_water": Threshold(tokens=1),
            "low_water": Threshold(tokens=1),
        }
    )


def _why_not_compacted(policy: ContextPolicy) -> str:
    if not policy.summarization.enabled:
        return "summarization is off, and the lossless steps could not free enough"
    return "compaction could not free enough"
