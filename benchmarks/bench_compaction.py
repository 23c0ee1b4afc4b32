"""Compaction on real agent runs: budgets held, summaries made, tokens saved, nothing lost.

Usage::

    python benchmarks/bench_compaction.py --trajectories ../shared/data/trajectories
    python benchmarks/bench_compaction.py --trajectories ../shared/data/trajectories \
        --budgets 32000 64000 --compare-clearing

Each trace is replayed as an agent loop would see it, at budgets of 32k, 64k and 128k tokens
(``ContextPolicy(max_input_tokens=budget)`` with every other setting at its default (all
four steps, clearing included), and the
extractive summarizer: no model), by :func:`ctxfs.replay.replay`, the loop behind
``ctxfs replay``: each tool result goes through result offload as it arrives, and the
history is compacted before each assistant turn; :func:`ctxfs.replay.check_recovery` then
reads everything removed back from the workspace. Reported per trace and
budget: the peak context at any model call (must stay within the budget), the number of
summaries, the total input tokens over the run against no management, and the share of the
removed content (archived, offloaded or cleared) that is recoverable byte-exact from the
workspace (must be 100 %). Trace files are read in place, never copied.

``--compare-clearing`` replays every trace twice per budget, without and with the clearing
step (``clearing={"enabled": True}``, its other settings at their defaults unless the
``--clear-*`` options say otherwise), and reports summaries, clearing batches and total input
tokens side by side, with the totals per budget.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from ctxfs import (
    ContextEngine,
    ContextPolicy,
    Summarized,
    TiktokenCounter,
    ToolResultCleared,
    Workspace,
    check_recovery,
    read_trace,
    replay,
)

BUDGETS = (32_000, 64_000, 128_000)


@dataclass
class Outcome:
    trace: str
    budget: int
    calls: int
    peak: int
    over_budget: int
    summaries: int
    clearings: int
    cleared: int
    tokens_managed: int
    tokens_unmanaged: int
    removed_bytes: int
    recovered_bytes: int
    seconds: float
    cached: int = 0
    breaks: int = 0


def run(
    name: str,
    history: list[BaseMessage],
    budget: int,
    clearing: dict[str, Any] | None = None,
) -> Outcome:
    """Replays one trace at one budget (:func:`ctxfs.replay.replay`) and checks recovery."""
    label = "clear" if clearing and clearing.get("enabled") else "plain"
    ws = Workspace(f"memory://bench-{name}-{budget}-{label}")
    policy = ContextPolicy(max_input_tokens=budget, clearing=clearing or {})
    engine = ContextEngine(ws, policy, TiktokenCounter())
    start = time.perf_counter()
    result = replay(history, engine, thread_id=name)
    seconds = time.perf_counter() - start
    recovery = check_recovery(result, ws)
    batches = [sum(isinstance(e, ToolResultCleared) for e in c.events) for c in result.calls]
    return Outcome(
        trace=name,
        budget=budget,
        calls=len(result.calls),
        peak=result.peak_tokens,
        over_budget=result.calls_over_budget,
        summaries=sum(isinstance(e, Summarized) for e in result.events),
        clearings=sum(n > 0 for n in batches),
        cleared=sum(batches),
        tokens_managed=result.total_input_tokens,
        tokens_unmanaged=result.baseline_total_input_tokens,
        removed_bytes=recovery.removed_bytes,
        recovered_bytes=recovery.recovered_bytes,
        seconds=seconds,
        cached=result.cached_tokens,
        breaks=result.prefix_breaks,
    )


def compare_clearing(traces: list[Path], budgets: list[int], clearing: dict[str, Any]) -> None:
    """Summaries and input tokens without and with the clearing step, per trace and budget."""
    print(
        f"{'trace':45} {'budget':>7} {'summ':>4} {'+clr':>4} {'batches':>7} {'cleared':>7} "
        f"{'input tokens':>13} {'+clearing':>13} {'change':>7} {'peak+clr':>8} {'recov':>6}"
    )
    totals: dict[int, list[tuple[Outcome, Outcome]]] = {b: [] for b in budgets}
    for path in traces:
        history = read_trace(path)
        for budget in budgets:
            off = run(path.stem, history, budget, {"enabled": False})
            on = run(path.stem, history, budget, clearing)
            totals[budget].append((off, on))
            change = on.tokens_managed / off.tokens_managed - 1 if off.tokens_managed else 0.0
            share = on.recovered_bytes / on.removed_bytes if on.removed_bytes else 1.0
            print(
                f"{path.stem[:45]:45} {budget:>7,} {off.summaries:>4} {on.summaries:>4} "
                f"{on.clearings:>7} {on.cleared:>7} {off.tokens_managed:>13,} "
                f"{on.tokens_managed:>13,} {change:>7.1%} {on.peak:>8,} {share:>6.1%}"
            )
    print()
    for budget, pairs in totals.items():
        s_off = sum(off.summaries for off, _ in pairs)
        s_on = sum(on.summaries for _, on in pairs)
        t_off = sum(off.tokens_managed for off, _ in pairs)
        t_on = sum(on.tokens_managed for _, on in pairs)
        removed = sum(on.removed_bytes for _, on in pairs)
        recovered = sum(on.recovered_bytes for _, on in pairs)
        over = sum(on.over_budget for _, on in pairs)
        print(
            f"budget {budget:>7,}: summaries {s_off} -> {s_on} with clearing "
            f"({s_on / s_off if s_off else 0:.0%} of summarization alone), clearing batches "
            f"{sum(on.clearings for _, on in pairs)} ({sum(on.cleared for _, on in pairs)} "
            f"results), input tokens {t_off:,} -> {t_on:,} ({1 - t_on / t_off:.1%} fewer), "
            f"calls over budget {over}, recoverable byte-exact "
            f"{recovered / removed if removed else 1:.2%}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trajectories", type=Path, required=True, help="folder of *.jsonl")
    parser.add_argument("--budgets", type=int, nargs="*", default=list(BUDGETS))
    parser.add_argument(
        "--compare-clearing",
        action="store_true",
        help="replay each trace without and with the clearing step, side by side",
    )
    parser.add_argument("--clear-trigger", type=float, help="clearing trigger, a fraction")
    parser.add_argument("--clear-keep", type=int, help="clearing keeps the last N results")
    parser.add_argument("--clear-at-least", type=float, help="smallest batch, a fraction")
    args = parser.parse_args()
    traces = sorted(args.trajectories.glob("*.jsonl"))
    if args.compare_clearing:
        clearing: dict[str, Any] = {"enabled": True}
        if args.clear_trigger is not None:
            clearing["trigger"] = {"fraction": args.clear_trigger}
        if args.clear_keep is not None:
            clearing["keep"] = {"results": args.clear_keep}
        if args.clear_at_least is not None:
            clearing["clear_at_least"] = {"fraction": args.clear_at_least}
        compare_clearing(traces, args.budgets, clearing)
        return
    print(
        f"{'trace':45} {'budget':>7} {'calls':>5} {'peak':>7} {'over':>4} {'summ':>4} "
        f"{'input tokens':>13} {'unmanaged':>11} {'saved':>6} {'removed B':>10} "
        f"{'recov':>6} {'sec':>5}"
    )
    totals: dict[int, list[Outcome]] = {b: [] for b in args.budgets}
    for path in traces:
        history = read_trace(path)
        for budget in args.budgets:
            o = run(path.stem, history, budget)
            totals[budget].append(o)
            saved = 1 - o.tokens_managed / o.tokens_unmanaged if o.tokens_unmanaged else 0.0
            share = o.recovered_bytes / o.removed_bytes if o.removed_bytes else 1.0
            print(
                f"{o.trace[:45]:45} {budget:>7,} {o.calls:>5} {o.peak:>7,} {o.over_budget:>4} "
                f"{o.summaries:>4} {o.tokens_managed:>13,} {o.tokens_unmanaged:>11,} "
                f"{saved:>6.1%} {o.removed_bytes:>10,} {share:>6.1%} {o.seconds:>5.1f}"
            )
    print()
    for budget, outcomes in totals.items():
        managed = sum(o.tokens_managed for o in outcomes)
        plain = sum(o.tokens_unmanaged for o in outcomes)
        removed = sum(o.removed_bytes for o in outcomes)
        recovered = sum(o.recovered_bytes for o in outcomes)
        cached = sum(o.cached for o in outcomes)
        uncached = managed - cached
        print(
            f"budget {budget:>7,}: peak {max(o.peak for o in outcomes):,} "
            f"(calls over budget: {sum(o.over_budget for o in outcomes)}), "
            f"summaries {sum(o.summaries for o in outcomes)}, input tokens {managed:,} vs "
            f"{plain:,} unmanaged ({1 - managed / plain:.1%} saved), removed {removed:,} bytes, "
            f"recoverable byte-exact {recovered / removed if removed else 1:.2%}"
        )
        print(
            f"  prompt cache: {cached:,} cached, {uncached:,} uncached "
            f"({cached / managed if managed else 0:.1%} hit), "
            f"{sum(o.breaks for o in outcomes)} prefix breaks; cost at uncached 1.25 / cached "
            f"0.1: {(1.25 * uncached + 0.1 * cached) / 1e6:.2f}M, at 1 / 0.1: "
            f"{(uncached + 0.1 * cached) / 1e6:.2f}M"
        )


if __name__ == "__main__":
    main()
