"""Are ctxfs's defaults chosen on the runs as a whole, or on one of them? Leave-one-out.

Usage::

    python benchmarks/bench_defaults.py --trajectories ../shared/data/trajectories

Needs the ``bench`` extra, like ``bench_side_by_side.py``, whose replay it uses: each trace at
each budget through ctxfs (once per candidate setting below) and through Deep Agents at its own
defaults (once), the stand-in summary model and the same cost weights (uncached input 1.25,
cached 0.1, summary input 1, output 5).

Each candidate is a set of ctxfs settings beside the budget; the first is ctxfs's defaults.
For each trace in turn (the held-out run), a candidate is chosen on the *other* runs, as a
default would be chosen without ever seeing that run: the one that misses the fewest of issue
26's goals there against Deep Agents (cost at most 0.70x at 32k and 64k and 0.85x at 128k;
input at most 1.0x and at most half the summaries at 32k and 64k), then the cheapest (cost
summed over the budgets). The held-out
run is then scored with it. Printed: the candidates' sums over all runs
against Deep Agents; per held-out run, the candidate chosen and its cost there against the
defaults'; and how often the defaults were the choice. If the defaults are chosen in every
fold, no single run decides them; the held-out sum says what a choice made without each run
costs on that run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from _peers import CTXFS_POLICY, SETTINGS
from bench_side_by_side import PRICES, Outcome, replay

from ctxfs import TiktokenCounter, read_trace

_INPUTS_BEFORE = {"keep_messages": 20, "min_chars": 2_000}
_CLEARING_BEFORE = {"trigger": None, "clear_at_least": {"fraction": 0.05}}

CANDIDATES: dict[str, dict[str, Any]] = {
    "defaults": {},
    "issue 13's: 70/30, clear in compactions only, inputs 20/2000": {
        "high_water": {"fraction": 0.7},
        "low_water": {"fraction": 0.3},
        "clearing": _CLEARING_BEFORE,
        "tool_inputs": _INPUTS_BEFORE,
    },
    "clear in compactions only": {"clearing": _CLEARING_BEFORE},
    "70/30": {"high_water": {"fraction": 0.7}, "low_water": {"fraction": 0.3}},
    "75/35": {"high_water": {"fraction": 0.75}},
    "90/50": {"high_water": {"fraction": 0.9}, "low_water": {"fraction": 0.5}},
    "frees per rewrite 0.25": {"clearing": {"frees_per_rewrite": 0.25}},
    "frees per rewrite 1": {"clearing": {"frees_per_rewrite": 1.0}},
    "frees per rewrite 2": {"clearing": {"frees_per_rewrite": 2.0}},
    "frees per rewrite 0 (at least 5 %)": {
        "clearing": {"frees_per_rewrite": 0.0, "clear_at_least": {"fraction": 0.05}}
    },
    "clear at least 5 %": {"clearing": {"clear_at_least": {"fraction": 0.05}}},
    "clear at least 1 %": {"clearing": {"clear_at_least": {"fraction": 0.01}}},
    "clearing trigger 30 %": {"clearing": {"trigger": {"fraction": 0.3}}},
    "inputs 20/2000": {"tool_inputs": _INPUTS_BEFORE},
    "inputs 20/500": {"tool_inputs": {"keep_messages": 20}},
    "inputs 10/2000": {"tool_inputs": {"min_chars": 2_000}},
    "summary keeps 5 %": {"summarization": {"keep": {"fraction": 0.05}}},
    "clearing spares 8": {"clearing": {"keep": {"results": 8}}},
}
"""ctxfs settings beside the budget (``ContextPolicy`` fields), each a change from the
defaults: the water marks as high / low (% of the request budget, default 80 / 35), clearing
between compactions (default: from 10 % of the window, a batch freeing at least 2 % of it
and half a token per token the cache writes again; "in compactions only" is the rule before
issue 26), tool inputs as the most recent messages never touched / the shortest argument
moved (default 10 / 500 characters), the share of the window a summary keeps, and how many
recent tool results clearing spares (by default the last 4 within a quarter of the window;
set explicitly, without that bound)."""

COST_GOALS = {32_000: 0.70, 64_000: 0.70, 128_000: 0.85}
"""Issue 26's cost goals against Deep Agents, summed over the runs."""
GOALS = {"input": 1.0, "summaries": 0.5}
"""Issue 26's other goals against Deep Agents, at 32k and 64k."""
GOAL_BUDGETS = (32_000, 64_000)

BUDGETS = (32_000, 64_000, 128_000)


def price(o: Outcome) -> float:
    """One replay's cost at the side-by-side weights."""
    return (
        PRICES["uncached"] * (o.input_tokens - o.cached_tokens)
        + PRICES["cached"] * o.cached_tokens
        + PRICES["summary_input"] * o.summary_input
        + PRICES["summary_output"] * o.summary_output
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=Path, required=True, help="folder of *.jsonl")
    parser.add_argument("--budgets", type=int, nargs="*", default=list(BUDGETS))
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    args = parser.parse_args()
    traces = sorted(args.trajectories.glob("*.jsonl"))
    if len(traces) < 2:
        parser.error(f"leave-one-out needs at least two *.jsonl traces in {args.trajectories}")
    SETTINGS["mode"] = "own"
    measure = TiktokenCounter()
    histories = {p.stem: read_trace(p) for p in traces}
    names = list(histories)

    # outcome[candidate or "deepagents"][(trace, budget)]
    outcome: dict[str, dict[tuple[str, int], Outcome]] = {}
    outcome["deepagents"] = {
        (n, b): replay(n, histories[n], b, ("deepagents",), measure, False)["deepagents"]
        for n in names
        for b in args.budgets
    }
    for label, settings in CANDIDATES.items():
        CTXFS_POLICY.clear()
        CTXFS_POLICY.update(settings)
        outcome[label] = {
            (n, b): replay(n, histories[n], b, ("ctxfs",), measure, False)["ctxfs"]
            for n in names
            for b in args.budgets
        }
        print(f"  replayed {label}", file=sys.stderr)
    CTXFS_POLICY.clear()

    def total(label: str, runs: list[str], budget: int | None = None) -> dict[str, float]:
        picked = [
            o
            for (n, b), o in outcome[label].items()
            if n in runs and (budget is None or b == budget)
        ]
        return {
            "cost": sum(price(o) for o in picked),
            "input": sum(o.input_tokens for o in picked),
            "summaries": sum(o.summaries for o in picked),
        }

    def missed(label: str, runs: list[str]) -> int:
        """How many goals the candidate misses on these runs, over the budgets."""
        count = 0
        for b in args.budgets:
            mine, theirs = total(label, runs, b), total("deepagents", runs, b)
            goals = dict(GOALS) if b in GOAL_BUDGETS else {}
            if b in COST_GOALS:
                goals["cost"] = COST_GOALS[b]
            count += sum(mine[k] > limit * theirs[k] for k, limit in goals.items())
        return count

    print("over all runs, each budget against Deep Agents at its own defaults:")
    header = f"{'candidate':60}" + "".join(
        f" {f'{b // 1000}k cost / input / summaries':>34}" for b in args.budgets
    )
    print(header + f" {'goals missed':>12}")
    sums: dict[str, Any] = {}
    for label in ["deepagents", *CANDIDATES]:
        cells = []
        for b in args.budgets:
            mine, theirs = total(label, names, b), total("deepagents", names, b)
            cells.append(
                f"{mine['cost'] / theirs['cost']:>8.3f}x {mine['input'] / theirs['input']:>8.3f}x "
                f"{int(mine['summaries']):>4}/{int(theirs['summaries']):<4}"
            )
            sums.setdefault(label, {})[b] = mine
        gone = missed(label, names) if label != "deepagents" else 0
        print(f"{label[:60]:60}" + "".join(f" {c:>34}" for c in cells) + f" {gone:>12}")
    print()

    default = next(iter(CANDIDATES))
    folds = []
    print(f"{'held-out run':46} {'chosen on the other runs':60} {'its cost':>9} {'defaults':>9}")
    for held in names:
        rest = [n for n in names if n != held]
        chosen = min(
            CANDIDATES, key=lambda label: (missed(label, rest), total(label, rest)["cost"])
        )
        mine, base = total(chosen, [held])["cost"], total(default, [held])["cost"]
        folds.append(
            {
                "held_out": held,
                "chosen": chosen,
                "missed_on_the_rest": missed(chosen, rest),
                "cost": mine,
                "defaults_cost": base,
            }
        )
        print(f"{held[:46]:46} {chosen[:60]:60} {mine / 1e6:>8.3f}M {base / 1e6:>8.3f}M")
    picked_default = sum(f["chosen"] == default for f in folds)
    held_cost = sum(f["cost"] for f in folds)
    default_cost = sum(f["defaults_cost"] for f in folds)
    print(
        f"\nthe defaults chosen in {picked_default} of {len(folds)} folds; held-out runs, summed: "
        f"{held_cost / 1e6:.3f}M with the choice made without each, "
        f"{default_cost / 1e6:.3f}M with the defaults"
    )
    if args.json:
        print(json.dumps({"budgets": args.budgets, "folds": folds, "sums": sums}, indent=1))


if __name__ == "__main__":
    main()
