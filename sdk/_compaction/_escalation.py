"""One compaction, in order of escalation, and what it comes to: functions over values.

:func:`escalate` is the whole of one compaction as a generator: it takes the engine's
:class:`~ctxfs._compaction._means.Means`, the policy's
:class:`~ctxfs._policy._budget.Budget` for the window and the request's
:class:`~ctxfs._compaction._request.Fixed` parts, yields a prompt whenever the summary model
must answer, and returns the :class:`~ctxfs._events.CompactionResult`. The engine's sync and
async drivers answer the prompts; nothing else differs between them.

1. The lossless steps as one batch (:mod:`ctxfs._compaction._batch`): at the high-water
   mark, old inputs and old results down to the low-water mark; below it, the steps whose
   explicit trigger is reached.
2. The summary (:mod:`ctxfs._summary._step`), only when the lossless steps left the request
   above the summary water mark or a summarization trigger still fires; the transcript is
   archived first, and if it cannot be, the input comes back unchanged.
3. The lossless steps once more on the summarized history, chosen by its own count as the
   next compaction would choose them, so that compacting the result again changes nothing.
4. The result (:func:`compaction_result`), with a :class:`~ctxfs._events.ContextOverBudget`
   when the request is still over its limit, and a :class:`~ctxfs._events.PrefixChanged`
   pricing what the provider's cache gave up.

How hard it compacts is the budget it is given: the policy's, :func:`forced` for a request
the provider refused, :func:`requested` for a summary asked for now.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from langchain_core.messages import BaseMessage

from ctxfs._archive._transcripts import TranscriptArchive
from ctxfs._compaction._batch import batch, lossless
from ctxfs._compaction._means import Means
from ctxfs._compaction._oversized import offload_oversized
from ctxfs._compaction._request import Fixed, Offered
from ctxfs._compaction._results import offload_unseen
from ctxfs._errors import WorkspaceError
from ctxfs._events import (
    ArchiveFailed,
    ArchiveRepaired,
    CompactionResult,
    ContextEvent,
    ContextOverBudget,
    OffloadResult,
    Summarized,
)
from ctxfs._messages import same_objects
from ctxfs._policy._budget import Budget
from ctxfs._policy._settings import (
    ContextPolicy,
    KeepRecent,
    KeepToolResults,
    SummaryTrigger,
    Threshold,
)
from ctxfs._summary._body import ModelAnswer
from ctxfs._summary._step import summarize_steps
from ctxfs._workspace._workspace import Workspace

__all__ = [
    "WORTH_COMPACTING",
    "NothingToCompact",
    "compaction_result",
    "escalate",
    "forced",
    "opened",
    "reach_in",
    "requested",
    "summarized_or_refused",
]

WORTH_COMPACTING = 1_000
"""The fewest tokens :meth:`~ctxfs.ContextEngine.compact_now` summarizes: below it a summary
would save about what it costs to write and to send."""


def escalate(
    means: Means,
    messages: Sequence[BaseMessage],
    thread_id: str,
    budget: Budget[ContextPolicy],
    fixed: Fixed,
    plan: Sequence[Mapping[str, Any]] | str | None = None,
    *,
    at_least: int = 0,
    asked: bool = False,
) -> Generator[str, ModelAnswer, CompactionResult]:
    """One compaction of ``messages``; yields a prompt whenever the summary model must answer.

    Args:
        means: The engine's workspace, counter, clock and caches.
        messages: The history; never mutated.
        thread_id: The conversation; names the folders written.
        budget: The policy's numbers for the window (see :func:`forced`, :func:`requested`).
        fixed: The parts of the request given apart from the messages.
        plan: The live plan, put back after a summary.
        at_least: Summarize only if the messages to archive hold at least this many tokens.
        asked: The caller asked for this compaction (``force``, ``compact_now``): a summary
            is made even where it cannot help (see ``summarize_steps``).

    Returns:
        (as the generator's return value) The compaction's result.
    """
    policy = budget.policy
    extra = fixed.tokens
    original = list(messages)
    # One compaction at the high-water mark; below it only explicit step triggers act.
    # Counted once: the lossless steps are given the count instead of counting again.
    counted, counts, calls = _counted(means, original)
    compacting = counted + extra >= budget.high_water
    if compacting:
        inputs, cleared = batch(means, original, thread_id, budget, extra, fixed.offered, counted)
    else:
        inputs, cleared = lossless(
            means, original, thread_id, budget, extra, fixed.offered, counted, counts, calls
        )
    current, events = cleared.messages, [*inputs.events, *cleared.events]
    before, tokens = inputs.tokens_before, cleared.tokens_after

    def result(
        messages: list[BaseMessage], events: Sequence[ContextEvent], after: int, why: str | None
    ) -> CompactionResult:
        changed = means.sent.record(thread_id, original, messages, means.counter)
        return compaction_result(budget, messages, [*events, *changed], before, after, fixed, why)

    # Summarize only when the lossless steps could not reach the low-water mark, and left
    # less than half the gap between the marks before the next compaction. Still over the
    # limit after that, the request would be refused: once, the lossless steps reach into
    # the protected recent window (:func:`reach_in`), and the summary is weighed again.
    enabled = policy.summarization.enabled
    why: str | None = "summarization is off" if not enabled else "no summarization trigger fired"
    for last in (False, True):
        if last:
            if tokens + extra <= budget.request_limit:
                break
            reached = reach_in(means, current, thread_id, budget, extra, fixed.offered)
            if reached is None:
                break
            current, tokens = reached.messages, reached.tokens_after
            events += reached.events
            # Weighed again as the next compaction would weigh it, from what is left now.
            compacting = tokens + extra >= budget.high_water
        short = compacting and tokens + extra > budget.summary_water
        if not (short and enabled) and not budget.summary_fires(tokens + extra, len(current)):
            continue
        outcome = yield from summarize_steps(
            current,
            budget=budget,
            counter=means.counter,
            archive=TranscriptArchive(means.workspace, thread_id, clock=means.clock),
            thread_id=thread_id,
            tokens=tokens,
            fixed=extra,
            plan=plan,
            notes=_notes(means.workspace, policy),
            at_least=at_least,
            asked=asked,
        )
        repaired = [ArchiveRepaired(reason=reason) for reason in outcome.repairs]
        if outcome.failed is not None:
            # Nothing is dropped: the input comes back as it was, with only the failure.
            event = ArchiveFailed(reason=f"{outcome.failed}; nothing was dropped")
            why = f"the transcript could not be archived ({outcome.failed}), so nothing was dropped"
            return result(original, [*repaired, event], before, why)
        why = outcome.why_not
        events += repaired
        if outcome.event is None:
            continue
        # As the next compaction would run them: a summary made on a messages trigger can
        # leave the request above the high-water mark (its summary and pins added), and
        # there the next compaction plans a batch, not only the explicit triggers.
        settled = means.counter.count_messages(outcome.messages)
        steps = batch if settled + extra >= budget.high_water else lossless
        again, final = steps(
            means, outcome.messages, thread_id, budget, extra, fixed.offered, settled
        )
        events += [outcome.event, *again.events, *final.events]
        current, tokens = final.messages, final.tokens_after
    return result(current, events, tokens, why)


def reach_in(
    means: Means,
    messages: list[BaseMessage],
    thread_id: str,
    budget: Budget[ContextPolicy],
    extra: int,
    offered: Offered,
) -> OffloadResult | None:
    """A request over its limit: the lossless steps with the protected window opened.

    Old inputs and results of the recent window go to files too (:func:`opened`, oldest
    first, down to the low-water mark), then the results the model has not read yet, with a
    preview (:func:`~ctxfs._compaction._results.offload_unseen`), and last the large texts
    no step makes smaller, message contents and botched calls' arguments, the user's words
    after the model's (:func:`~ctxfs._compaction._oversized.offload_oversized`). Everything
    moved is saved first; ``None`` when nothing moved.
    """
    inputs, cleared = batch(means, messages, thread_id, opened(budget), extra, offered)
    unseen = offload_unseen(means, cleared.messages, thread_id, budget, extra, offered)
    texts = offload_oversized(means, unseen.messages, thread_id, budget, extra)
    events = (*inputs.events, *cleared.events, *unseen.events, *texts.events)
    if same_objects(texts.messages, messages):
        return None if not events else replace(texts, events=events)
    return replace(texts, events=events, tokens_before=inputs.tokens_before)


def _counted(
    means: Means, messages: list[BaseMessage]
) -> tuple[int, list[int] | None, list[object] | None]:
    """The history's tokens, and each message's and the record of its tool calls when the
    counter keeps them (ctxfs's counters do: below the high-water mark, clearing's plan and
    the input scan read them there instead of looking at every message on every call)."""
    record_of = getattr(means.counter, "_record_of", None)
    if record_of is None:
        return means.counter.count_messages(messages), None, None
    counts, calls = record_of(messages)
    return sum(counts), counts, calls


def _notes(workspace: Workspace, policy: ContextPolicy) -> tuple[str, str] | None:
    """The agent's notes file, ``(path, text)``, when the policy pins one and it is there."""
    path = policy.pinning.notes_path
    if path is None:
        return None
    try:
        return path, workspace.read_text(path)
    except (WorkspaceError, UnicodeDecodeError, ValueError):
        return None  # no notes yet, or not text: nothing to put back


def compaction_result(
    budget: Budget[ContextPolicy],
    messages: list[BaseMessage],
    events: Sequence[ContextEvent],
    before: int,
    after: int,
    fixed: Fixed,
    why_not: str | None,
) -> CompactionResult:
    """The result of a compaction that left ``after`` tokens of messages."""
    target = budget.summary_target
    extra = fixed.tokens
    reached = after + extra <= target
    request, limit = after + extra, budget.request_limit
    if request > limit:
        reason = why_not or _why_not_compacted(budget.policy)
        if extra > limit:  # nothing compaction does can help: say so first
            added = f", added by other middleware {fixed.added:,}" if fixed.added else ""
            reason = (
                f"the system prompt and tool schemas alone are {extra:,} tokens (system "
                f"{fixed.system:,}, tools {fixed.tools:,}{added}), over the limit {limit:,}"
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


def _why_not_compacted(policy: ContextPolicy) -> str:
    if not policy.summarization.enabled:
        return "summarization is off, and the lossless steps could not free enough"
    return "compaction could not free enough"


class NothingToCompact(ValueError):
    """A compaction asked for now found nothing worth compacting; nothing was changed."""


def summarized_or_refused(result: CompactionResult) -> CompactionResult:
    """``result`` when it holds a summary; else :class:`NothingToCompact` saying why."""
    if any(isinstance(event, Summarized) for event in result.events):
        return result
    why = result.reason or "no summary was made"
    raise NothingToCompact(f"nothing worth compacting now: {why}")


def requested(budget: Budget[ContextPolicy]) -> Budget[ContextPolicy]:
    """The budget with its summary trigger fired: a summary now, keeping the recent window."""
    policy = budget.policy
    summarization = policy.summarization.model_copy(update={"trigger": SummaryTrigger(tokens=1)})
    return Budget.of(policy.model_copy(update={"summarization": summarization}), budget.window)


def opened(budget: Budget[ContextPolicy]) -> Budget[ContextPolicy]:
    """The budget with the lossless steps' protected window opened: any old input and any
    result may go to a file (down to the policy's low-water mark, oldest first)."""
    return Budget.of(budget.policy.model_copy(update=_lossless_open(budget.policy)), budget.window)


def forced(budget: Budget[ContextPolicy]) -> Budget[ContextPolicy]:
    """The budget at its hardest: every step fires, only the latest block is kept."""
    policy = budget.policy
    summarization = policy.summarization.model_copy(
        update={"trigger": SummaryTrigger(tokens=1), "keep": KeepRecent(messages=1)}
    )
    hardest = policy.model_copy(
        update={
            **_lossless_open(policy),
            "summarization": summarization,
            "high_water": Threshold(tokens=1),
            "low_water": Threshold(tokens=1),
        }
    )
    return Budget.of(hardest, budget.window)


def _lossless_open(policy: ContextPolicy) -> dict[str, Any]:
    """The settings that let clearing and input offload take any result and any input."""
    clearing = policy.clearing.model_copy(
        update={
            "trigger": Threshold(tokens=1),
            "keep": KeepToolResults(results=0),
            "clear_at_least": Threshold(tokens=1),
            "frees_per_rewrite": 0.0,
        }
    )
    inputs = policy.tool_inputs.model_copy(
        update={"trigger": Threshold(tokens=1), "keep_messages": 0}
    )
    return {"clearing": clearing, "tool_inputs": inputs}
