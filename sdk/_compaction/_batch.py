"""The lossless steps as one batch: old inputs and old results, planned together, applied at once.

A provider's prompt cache breaks once per compaction: the batch changes the prefix once.
At the high-water mark the plan is a frozen :class:`Batch` (:func:`plan_batch`), applied by
:func:`batch`; below it, :func:`lossless` runs the steps whose explicit trigger is reached.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage

from ctxfs._compaction._apply import apply_clearing, clear_results
from ctxfs._compaction._clearing import ResultToClear, plan_clearing
from ctxfs._compaction._inputs import input_frees, offload_inputs
from ctxfs._compaction._means import Means
from ctxfs._compaction._request import Offered
from ctxfs._events import OffloadResult
from ctxfs._policy._budget import Budget
from ctxfs._policy._settings import ContextPolicy

__all__ = ["Batch", "batch", "lossless", "plan_batch"]


@dataclass(frozen=True, slots=True)
class Batch:
    """A compaction's lossless steps, planned over one history.

    Attributes:
        upto: Old inputs are offloaded in the messages before this index.
        results: The old results to clear (all before ``upto``), as planned by
            :func:`~ctxfs._compaction._clearing.plan_clearing`.
    """

    upto: int
    results: tuple[ResultToClear, ...]


def plan_batch(
    means: Means,
    messages: Sequence[BaseMessage],
    thread_id: str,
    budget: Budget[ContextPolicy],
    extra: int,
    before: int,
) -> Batch | None:
    """The batch down to the low-water mark, or ``None`` when there is nothing to do.

    Every candidate is priced first (what its pointer frees); the batch then takes every
    candidate before the first message at which the running total reaches the low-water
    mark, or all of them when it never does. ``before`` is what ``messages`` count.
    """
    need = before + extra - budget.low_water
    if need <= 0:
        return None
    policy = budget.policy
    frees: dict[int, int] = {}
    if policy.tool_inputs.enabled:
        for i, freed in input_frees(means, messages, thread_id, budget):
            frees[i] = frees.get(i, 0) + freed
    results: tuple[ResultToClear, ...] = ()
    if policy.clearing.enabled:
        plan = plan_clearing(
            messages,
            budget=budget,
            counter=means.counter,
            thread_id=thread_id,
            tokens=before + extra,
            go=True,
        )
        results = plan.results
        for item in results:
            frees[item.index] = frees.get(item.index, 0) + item.tokens - item.estimate
    if not frees:
        return None
    upto, total = len(messages), 0
    for i in sorted(frees):
        total += frees[i]
        if total >= need:
            upto = i + 1
            break
    return Batch(upto=upto, results=tuple(item for item in results if item.index < upto))


def batch(
    means: Means,
    messages: list[BaseMessage],
    thread_id: str,
    budget: Budget[ContextPolicy],
    extra: int,
    offered: Offered,
    before: int | None = None,
) -> tuple[OffloadResult, OffloadResult]:
    """A compaction's lossless steps (see :func:`plan_batch`), applied at once so the prefix
    changes once: the inputs, then the results. ``before``: what ``messages`` count, when
    the caller knows it (counted here otherwise)."""
    if before is None:
        before = means.counter.count_messages(messages)
    plan = plan_batch(means, messages, thread_id, budget, extra, before)
    if plan is None:
        unchanged = OffloadResult(messages=messages, tokens_before=before, tokens_after=before)
        return unchanged, unchanged
    inputs = offload_inputs(means, messages, thread_id, budget, extra, go=True, upto=plan.upto)
    cleared = apply_clearing(means, inputs.messages, thread_id, plan.results, offered)
    return inputs, cleared


def lossless(
    means: Means,
    messages: list[BaseMessage],
    thread_id: str,
    budget: Budget[ContextPolicy],
    extra: int,
    offered: Offered,
    before: int | None = None,
    counts: Sequence[int] | None = None,
    calls: list[object] | None = None,
) -> tuple[OffloadResult, OffloadResult]:
    """Below the high-water mark: the steps whose explicit trigger is reached, as one
    batch, so the prefix changes once.

    With clearing on, the batch goes when what it frees together is worth the cache
    break (see :func:`ctxfs._compaction._clearing.batch_goes`): inputs never move on
    their own, a call after the results. ``before``: as for :func:`batch`; ``counts``
    and ``calls``: the tokens of each message and the counter's record of its tool calls,
    when the caller has them.
    """
    policy = budget.policy
    if not policy.clearing.enabled:
        inputs = offload_inputs(means, messages, thread_id, budget, extra)
        return inputs, clear_results(means, inputs.messages, thread_id, budget, extra, offered)
    if before is None:
        before = means.counter.count_messages(messages)
    unchanged = OffloadResult(messages=messages, tokens_before=before, tokens_after=before)
    if before + extra < budget.clearing_trigger:
        return unchanged, unchanged
    moves: list[tuple[int, int]] = []
    if policy.tool_inputs.enabled and before + extra >= budget.input_trigger:
        moves = list(input_frees(means, messages, thread_id, budget, calls))
    plan = plan_clearing(
        messages,
        counts,
        budget=budget,
        counter=means.counter,
        thread_id=thread_id,
        tokens=before + extra,
        also_frees=sum(freed for _, freed in moves),
        also_from=moves[0][0] if moves else None,
    )
    if not plan.go:
        return unchanged, unchanged
    inputs = offload_inputs(means, messages, thread_id, budget, extra, go=True)
    cleared = clear_results(means, inputs.messages, thread_id, budget, extra, offered, go=True)
    return inputs, cleared
