"""ctxfs side by side with Deep Agents, LangChain's SummarizationMiddleware and no management.

Usage::

    python benchmarks/bench_side_by_side.py --trajectories ../shared/data/trajectories [--json]

Needs the ``bench`` extra (``pip install -e '.[bench]'``): ``deepagents`` and ``langchain``.

Every trace in the folder (read with :func:`ctxfs.replay.read_trace`) is replayed at
budgets of 16k, 32k, 64k and 128k tokens through four systems in lockstep, the way an agent loop
lives it (the steps of :func:`ctxfs.replay.replay`, the loop behind ``ctxfs replay``): each
tool result goes through the system's tool-result hook as it arrives (ctxfs
``offload_tool_result``; Deep Agents ``FilesystemMiddleware`` ``wrap_tool_call``; LangChain
and no management have none), and before each assistant turn the system's before-model hook
runs on its current state (ctxfs ``ContextEngine.compact``; Deep Agents
``FilesystemMiddleware.wrap_model_call`` around its ``SummarizationMiddleware.wrap_model_call``;
LangChain ``SummarizationMiddleware`` ``before_model``; no management copies the list). The
messages the model would be sent become the state.

Two settings, one replay each (``--settings``): ``own``, each system at its own defaults (what
a user gets: ctxfs ``ContextPolicy(max_input_tokens=budget)``, Deep Agents as
``create_deep_agent`` builds its middleware; LangChain is left out there, since its default
never summarizes), and ``mapped``, the peers set to ctxfs's defaults (see ``_peers.py``):
summarize at 85 % of the budget, keep ctxfs's recent share, show the summary model at most
8,000 tokens, offload tool results over 20,000 tokens, move/clip tool inputs of 2,000+
characters outside the last 20 messages once at 85 %. Every system summarizes with the same
deterministic stand-in model (a fixed summary of about 300 tokens), which meters the tokens
it is sent and answers; with ``--summary extractive`` ctxfs uses its extractive summary
instead. Peers count tokens their own way (``count_tokens_approximately``)
unless ``--peer-counter exact``.

Reported per system: peak tokens at any model call and calls over the budget (all counted
with the same exact tokenizer, ``ctxfs.TiktokenCounter``, system prompt included), total
input tokens over the run, the prompt cache (a provider that caches the longest prefix
shared with the previous request: cached and uncached tokens, hit rate, prefix breaks), the
summary model's tokens, the cost (uncached 1.25, cached 0.1, summary input 1, output 5; and
with OpenAI-style weights, uncached 1), summaries made, bytes of the original history no
longer in the context byte-exact ("removed"), and bytes of those that cannot be read back
byte-exact from the system's own storage ("lost": ctxfs resolves its pointers and
transcripts; Deep Agents' backend files are searched for the text, verbatim or XML-escaped
as its history file writes it; LangChain keeps nothing), and the goals against Deep Agents.
Then, for the mapped settings, the per-turn cost of each before-model hook on the longest
thread, with the four systems' turns interleaved in one run, as ratios to no management's
copy.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from _peers import CTXFS_POLICY, FACTORIES, SETTINGS, STORAGE, SUMMARY, SYSTEMS
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxfs import TiktokenCounter, read_trace
from ctxfs._compaction._request import shared_prefix
from ctxfs._messages import message_text
from ctxfs._replay._run import IN_VIEW_CHARS, in_view, plan_in_view, todos_of

BUDGETS = (16_000, 32_000, 64_000, 128_000)
CLAUDE_CODE_FILE_TOOLS = {"Write": "write_file", "Edit": "edit_file"}
"""Claude Code's file tools, which take the same arguments as ctxfs's and Deep Agents'
(``file_path``, ``content``; ``file_path``, ``old_string``, ``new_string``)."""


def rename_file_tools(history: list[BaseMessage]) -> list[BaseMessage]:
    """The history with Claude Code's ``Write``/``Edit`` calls named ``write_file``/``edit_file``.

    Both ctxfs (tool-input offload) and Deep Agents (argument truncation) act only on tools
    of those names; renaming lets the benchmark exercise that step on real edits.
    """
    out: list[BaseMessage] = []
    for m in history:
        if isinstance(m, AIMessage) and any(
            c["name"] in CLAUDE_CODE_FILE_TOOLS for c in m.tool_calls
        ):
            calls = [
                {**c, "name": CLAUDE_CODE_FILE_TOOLS.get(c["name"], c["name"])}
                for c in m.tool_calls
            ]
            m = m.model_copy(update={"tool_calls": calls})
        elif isinstance(m, ToolMessage) and m.name in CLAUDE_CODE_FILE_TOOLS:
            m = m.model_copy(update={"name": CLAUDE_CODE_FILE_TOOLS[m.name]})
        out.append(m)
    return out


STEADY_BUDGET = 1_000_000
"""A window no trace reaches: the overhead run at it measures the per-turn check alone."""


@dataclass
class Outcome:
    trace: str
    budget: int
    system: str
    calls: int = 0
    peak: int = 0
    over_budget: int = 0
    summaries: int = 0
    input_tokens: int = 0
    removed_bytes: int = 0
    lost_bytes: int = 0
    errors: int = 0
    cached_tokens: int = 0
    prefix_breaks: int = 0
    summary_input: int = 0
    summary_output: int = 0
    task_in_view: int = 0
    user_pairs: int = 0
    user_in_view: int = 0
    plan_calls: int = 0
    plan_in_view: int = 0
    hook_seconds: list[float] = field(default_factory=list, repr=False)


def replay(
    name: str,
    history: list[BaseMessage],
    budget: int,
    systems: tuple[str, ...],
    measure: TiktokenCounter,
    exact_peers: bool,
) -> dict[str, Outcome]:
    """Replays one trace through every system in lockstep; returns one outcome per system."""
    live = {
        s: FACTORIES[s](budget, name, TiktokenCounter() if exact_peers else None) for s in systems
    }
    out = {s: Outcome(name, budget, s) for s in systems}
    sent: dict[str, list[BaseMessage]] = {s: [] for s in systems}  # each one's last request
    users: list[str] = []  # the first IN_VIEW_CHARS of every user message so far
    plan: list[dict[str, Any]] | None = None  # the latest todo list the run wrote: live state
    turn = 0
    try:
        for message in history:
            if isinstance(message, AIMessage):  # a model call is about to happen
                order = systems[turn % len(systems) :] + systems[: turn % len(systems)]
                for s in order:  # rotate who goes first, so drift hits all alike
                    live[s].plan = plan  # ctxfs puts it back after a summary; the peers do not
                    gc.disable()
                    started = time.perf_counter()
                    context = live[s].before_model()
                    elapsed = time.perf_counter() - started
                    gc.enable()
                    o = out[s]
                    o.hook_seconds.append(elapsed)
                    tokens = measure.count_messages(context)
                    o.calls += 1
                    o.peak = max(o.peak, tokens)
                    o.over_budget += tokens > budget
                    o.input_tokens += tokens
                    # a provider caches the longest prefix shared with the previous request
                    shared = shared_prefix(sent[s], context)
                    o.cached_tokens += measure.count_messages(context[:shared])
                    o.prefix_breaks += shared < len(sent[s])
                    sent[s] = list(context)
                    seen = in_view(users, context)
                    o.task_in_view += seen[0] if seen else 1
                    o.user_pairs += len(seen)
                    o.user_in_view += sum(seen)
                    if plan is not None:
                        o.plan_calls += 1
                        o.plan_in_view += plan_in_view(plan, context)
                turn += 1
                plan = todos_of(message) or plan
            if isinstance(message, HumanMessage) and message_text(message).strip():
                users.append(message_text(message).strip()[:IN_VIEW_CHARS])
            for s in systems:
                live[s].add(message)
        for s in systems:
            loss = live[s].lost(history)
            out[s].removed_bytes, out[s].lost_bytes = loss.removed, loss.lost
            out[s].summaries = live[s].summaries
            out[s].errors = getattr(live[s], "overflow_errors", 0)
            model = live[s].model
            if model is not None:
                out[s].summary_input = model.meter["input"]
                out[s].summary_output = model.meter["output"]
    finally:
        for system in live.values():
            system.close()
    return out


def _k(n: int) -> str:
    return f"{n / 1000:,.1f}k"


def _m(n: int) -> str:
    return f"{n / 1e6:,.2f}M"


def _time(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def print_per_trace(results: list[dict[str, Outcome]], systems: tuple[str, ...]) -> None:
    head = f"{'trace':42} {'budget':>6} " + " ".join(
        f"{s + ' peak/summ/breaks/lost':>33}" for s in systems
    )
    print(head)
    for row in results:
        first = next(iter(row.values()))
        cells = []
        for s in systems:
            o = row[s]
            flag = "!" if o.over_budget else " "
            cells.append(
                f"{_k(o.peak):>9}{flag} {o.summaries:>3} {o.prefix_breaks:>6} {o.lost_bytes:>11,}"
            )
        print(f"{first.trace[:42]:42} {first.budget // 1000:>5}k " + " ".join(cells))
    print("(! = at least one model call over the budget)\n")


PRICES = {"uncached": 1.25, "cached": 0.1, "summary_input": 1.0, "summary_output": 5.0}
"""Relative price per token: uncached input as a provider that charges for cache writes
(Anthropic: 1.25), cached input 0.1, and the summary model's input and output."""
OPENAI_PRICES = {**PRICES, "uncached": 1.0}
"""The same with OpenAI-style weights: no charge for writing the cache."""


def cost(row: dict[str, Any], prices: dict[str, float]) -> float:
    """What a run's tokens cost at ``prices`` (per token, relative)."""
    return (
        prices["uncached"] * row["uncached_tokens"]
        + prices["cached"] * row["cached_tokens"]
        + prices["summary_input"] * row["summary_input"]
        + prices["summary_output"] * row["summary_output"]
    )


def summarize(results: list[dict[str, Outcome]], systems: tuple[str, ...]) -> list[dict[str, Any]]:
    rows = []
    budgets = sorted({next(iter(r.values())).budget for r in results})
    for budget in budgets:
        at = [r for r in results if next(iter(r.values())).budget == budget]
        for s in systems:
            os_ = [r[s] for r in at]
            removed = sum(o.removed_bytes for o in os_)
            lost = sum(o.lost_bytes for o in os_)
            row: dict[str, Any] = {
                "budget": budget,
                "system": s,
                "peak": max(o.peak for o in os_),
                "traces_over_budget": sum(o.over_budget > 0 for o in os_),
                "calls_over_budget": sum(o.over_budget for o in os_),
                "calls": sum(o.calls for o in os_),
                "summaries": sum(o.summaries for o in os_),
                "input_tokens": sum(o.input_tokens for o in os_),
                "cached_tokens": sum(o.cached_tokens for o in os_),
                "uncached_tokens": sum(o.input_tokens - o.cached_tokens for o in os_),
                "prefix_breaks": sum(o.prefix_breaks for o in os_),
                "summary_input": sum(o.summary_input for o in os_),
                "summary_output": sum(o.summary_output for o in os_),
                "removed_bytes": removed,
                "lost_bytes": lost,
                "errors": sum(o.errors for o in os_),
                "task_in_view": sum(o.task_in_view for o in os_)
                / max(1, sum(o.calls for o in os_)),
                "user_in_view": sum(o.user_in_view for o in os_)
                / max(1, sum(o.user_pairs for o in os_)),
                "task_in_view_worst": min(o.task_in_view / max(1, o.calls) for o in os_),
                "plan_in_view": sum(o.plan_in_view for o in os_)
                / max(1, sum(o.plan_calls for o in os_)),
                "plan_calls": sum(o.plan_calls for o in os_),
                "user_in_view_worst": min(
                    (o.user_in_view / o.user_pairs for o in os_ if o.user_pairs), default=1.0
                ),
            }
            row["cost"] = cost(row, PRICES)
            row["cost_openai"] = cost(row, OPENAI_PRICES)
            rows.append(row)
    return rows


def print_cache(rows: list[dict[str, Any]]) -> None:
    """The prompt cache and the cost, per budget and system."""
    print(
        f"{'budget':>6} {'system':11} {'input':>8} {'uncached':>8} {'hit':>6} {'breaks':>6} "
        f"{'summ':>4} {'summary in/out':>15} {'cost':>7} {'openai':>7}"
    )
    for r in rows:
        hit = r["cached_tokens"] / r["input_tokens"] if r["input_tokens"] else 0.0
        print(
            f"{r['budget'] // 1000:>5}k {r['system']:11} {_m(r['input_tokens']):>8} "
            f"{_m(r['uncached_tokens']):>8} {hit:>6.1%} {r['prefix_breaks']:>6} "
            f"{r['summaries']:>4} {_m(r['summary_input']) + '/' + _m(r['summary_output']):>15} "
            f"{_m(round(r['cost'])):>7} {_m(round(r['cost_openai'])):>7}"
        )
    print()


COST_GOALS = {32_000: 0.70, 64_000: 0.70, 128_000: 0.85}
"""Issue 26: ctxfs's cost at most this share of Deep Agents', summed over the traces."""
GOAL_BUDGETS = (32_000, 64_000)
"""The budgets the input and summary goals against Deep Agents are set at."""


def print_goals(rows: list[dict[str, Any]]) -> None:
    """ctxfs against Deep Agents in the same run (issue 26): cost <= 0.70x at 32k and 64k and
    <= 0.85x at 128k, input <= 1.0x and at most half the summaries at 32k and 64k; no call over
    the window and no byte lost at every budget."""
    by = {(r["budget"], r["system"]): r for r in rows}
    for budget in sorted({r["budget"] for r in rows}):
        ours, theirs = by.get((budget, "ctxfs")), by.get((budget, "deepagents"))
        if ours is None:
            continue
        checks = [
            (
                "calls over the window",
                ours["calls_over_budget"],
                "== 0",
                ours["calls_over_budget"] == 0,
            ),
            ("bytes lost", ours["lost_bytes"], "== 0", ours["lost_bytes"] == 0),
        ]
        goals: list[tuple[str, float]] = []
        if budget in COST_GOALS:
            goals.append(("cost", COST_GOALS[budget]))
        if budget in GOAL_BUDGETS:
            goals += [("input_tokens", 1.0), ("summaries", 0.5)]
        if theirs is not None:
            for key, limit in goals:
                ratio = ours[key] / theirs[key] if theirs[key] else float("inf")
                checks.append(
                    (f"{key} vs Deep Agents", round(ratio, 3), f"<= {limit}", ratio <= limit)
                )
        for name, value, goal, met in checks:
            verdict = "met" if met else "NOT met"
            print(f"{budget // 1000:>5}k {name:26} {value!s:>8} {goal:>7}  {verdict}")
            if not met and theirs is not None:
                print(f"{'':7}why: {_why(name, ours, theirs)}")
    print()


def _parts(row: dict[str, Any]) -> str:
    """A row's cost in its parts: uncached and cached input, the summary model."""
    summary = PRICES["summary_input"] * row["summary_input"]
    summary += PRICES["summary_output"] * row["summary_output"]
    uncached = round(PRICES["uncached"] * row["uncached_tokens"])
    cached = round(PRICES["cached"] * row["cached_tokens"])
    return (
        f"{_m(round(row['cost']))} = uncached {_m(uncached)} + cached {_m(cached)}"
        f" + summaries {_m(round(summary))}"
    )


def _why(name: str, ours: dict[str, Any], theirs: dict[str, Any]) -> str:
    """What a missed goal is made of, in the run's own numbers."""
    if name.startswith("cost"):
        return f"ctxfs {_parts(ours)}; Deep Agents {_parts(theirs)}"
    if name.startswith("summaries"):
        return (
            f"{ours['summaries']} summaries against {theirs['summaries']}, "
            f"{ours['prefix_breaks']} prefix breaks against {theirs['prefix_breaks']}"
        )
    if name.startswith("input"):
        return f"{_m(ours['input_tokens'])} against {_m(theirs['input_tokens'])}"
    if name.startswith("calls"):
        return f"peak {_k(ours['peak'])} in a budget of {ours['budget'] // 1000}k"
    return f"{ours['lost_bytes']:,} bytes cannot be read back byte-exact"


def print_retention(rows: list[dict[str, Any]]) -> None:
    """Goal retention: the task statement (first user message) and every user message, in view
    when their first IN_VIEW_CHARS characters are in the request verbatim; the share of model
    calls (task) and of (call, earlier user message) pairs (user), over all runs and on the
    run where it is lowest; and the share of calls after the run first wrote a todo list with
    every item of its latest list in view (in a message or in the call that wrote it)."""
    print(
        f"{'budget':>6} {'system':11} {'task in view':>12} {'worst run':>9} {'user in view':>12} "
        f"{'worst run':>9} {'plan in view':>12} {'calls':>6}"
    )
    for r in rows:
        plan = f"{r['plan_in_view']:.1%}" if r["plan_calls"] else "-"
        print(
            f"{r['budget'] // 1000:>5}k {r['system']:11} {r['task_in_view']:>12.1%} "
            f"{r['task_in_view_worst']:>9.1%} {r['user_in_view']:>12.1%} "
            f"{r['user_in_view_worst']:>9.1%} {plan:>12} {r['plan_calls']:>6}"
        )
    print()


def print_summary(rows: list[dict[str, Any]]) -> None:
    base = {r["budget"]: r["input_tokens"] for r in rows if r["system"] == "none"}
    print(
        f"{'budget':>6} {'system':11} {'peak':>8} {'traces over':>11} {'calls over':>10} "
        f"{'summaries':>9} {'input tokens':>12} {'vs none':>8} {'removed B':>11} "
        f"{'lost B':>11} {'lost %':>7}"
    )
    for r in rows:
        plain = base.get(r["budget"])
        saved = f"{r['input_tokens'] / plain - 1:+.1%}" if plain else "-"
        share = f"{r['lost_bytes'] / r['removed_bytes']:.1%}" if r["removed_bytes"] else "-"
        print(
            f"{r['budget'] // 1000:>5}k {r['system']:11} {_k(r['peak']):>8} "
            f"{r['traces_over_budget']:>11} {r['calls_over_budget']:>10} {r['summaries']:>9} "
            f"{_m(r['input_tokens']):>12} {saved:>8} {r['removed_bytes']:>11,} "
            f"{r['lost_bytes']:>11,} {share:>7}"
        )
    print()


def overhead(
    name: str,
    history: list[BaseMessage],
    budgets: list[int],
    systems: tuple[str, ...],
    measure: TiktokenCounter,
    exact_peers: bool,
    known: dict[int, dict[str, Outcome]],
) -> list[dict[str, Any]]:
    """Per-turn hook cost on one thread: median and total, as ratios to no management."""
    rows = []
    for budget in budgets:
        run = known.get(budget) or replay(name, history, budget, systems, measure, exact_peers)
        none = run["none"].hook_seconds
        for s in systems:
            times = run[s].hook_seconds
            rows.append(
                {
                    "trace": name,
                    "budget": budget,
                    "system": s,
                    "turns": len(times),
                    "median_seconds": statistics.median(times),
                    "total_seconds": sum(times),
                    "max_seconds": max(times),
                    "median_ratio": statistics.median(times) / statistics.median(none),
                    "total_ratio": sum(times) / sum(none),
                    "summaries": run[s].summaries,
                }
            )
    return rows


def print_overhead(rows: list[dict[str, Any]]) -> None:
    print(
        f"{'budget':>7} {'system':11} {'turns':>5} {'summ':>4} {'median/turn':>12} "
        f"{'x none':>8} {'total':>10} {'x none':>8} {'slowest turn':>12}"
    )
    for r in rows:
        print(
            f"{r['budget'] // 1000:>6}k {r['system']:11} {r['turns']:>5} {r['summaries']:>4} "
            f"{_time(r['median_seconds']):>12} {r['median_ratio']:>7,.0f}x "
            f"{_time(r['total_seconds']):>10} {r['total_ratio']:>7,.0f}x "
            f"{_time(r['max_seconds']):>12}"
        )
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trajectories", type=Path, required=True, help="folder of *.jsonl")
    parser.add_argument("--budgets", type=int, nargs="*", default=list(BUDGETS))
    parser.add_argument("--systems", nargs="*", default=list(SYSTEMS), choices=SYSTEMS)
    parser.add_argument(
        "--peer-counter",
        choices=("default", "exact"),
        default="default",
        help="how the peers count tokens for their own decisions: their default "
        "(count_tokens_approximately) or the same exact tokenizer as ctxfs",
    )
    parser.add_argument(
        "--storage",
        choices=("memory", "disk"),
        default="memory",
        help="where ctxfs and Deep Agents store what they move out: memory (ctxfs memory://, "
        "Deep Agents StoreBackend on an InMemoryStore) or disk (temporary folders; Deep "
        "Agents FilesystemBackend)",
    )
    parser.add_argument(
        "--summary",
        choices=("fixed", "extractive"),
        default="fixed",
        help="fixed: every system summarizes with the same stand-in model, which answers one "
        "fixed text (what stays in view is what each keeps by construction); extractive: "
        "ctxfs uses its extractive summary instead (the peers have none and keep the stand-in)",
    )
    parser.add_argument(
        "--overhead-trace", help="trace (file stem) for the overhead table; default: longest"
    )
    parser.add_argument(
        "--file-tools",
        choices=("as-recorded", "renamed"),
        default="as-recorded",
        help="renamed: Claude Code's Write/Edit calls become write_file/edit_file, the names "
        "whose large arguments ctxfs offloads and Deep Agents truncates",
    )
    parser.add_argument(
        "--settings",
        nargs="*",
        choices=("own", "mapped"),
        default=["own", "mapped"],
        help="own: each system at its own defaults (what a user gets); mapped: the peers set "
        "to ctxfs's defaults (see _peers.py)",
    )
    parser.add_argument(
        "--no-overhead", action="store_true", help="skip the per-turn hook timing table"
    )
    parser.add_argument(
        "--ctxfs-policy",
        type=json.loads,
        default={},
        help="ctxfs settings beside the budget, as JSON "
        '(e.g. \'{"low_water": {"fraction": 0.4}}\')',
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    args = parser.parse_args()
    CTXFS_POLICY.update(args.ctxfs_policy)
    policy_text = json.dumps(args.ctxfs_policy) if args.ctxfs_policy else "defaults"
    systems = tuple(s for s in SYSTEMS if s in args.systems)
    if "none" not in systems:
        parser.error("--systems must include none (the baseline)")
    traces = sorted(args.trajectories.glob("*.jsonl"))
    if not traces:
        parser.error(f"no *.jsonl traces in {args.trajectories}")
    exact = args.peer_counter == "exact"
    STORAGE["mode"] = args.storage
    SUMMARY["mode"] = args.summary
    measure = TiktokenCounter()

    histories = {p.stem: read_trace(p) for p in traces}
    if args.file_tools == "renamed":
        histories = {n: rename_file_tools(h) for n, h in histories.items()}
    long_name = args.overhead_trace or max(
        histories, key=lambda n: sum(isinstance(m, AIMessage) for m in histories[n])
    )
    document: dict[str, Any] = {
        "peer_counter": args.peer_counter,
        "storage": args.storage,
        "summary": args.summary,
        "file_tools": args.file_tools,
        "budgets": args.budgets,
        "ctxfs_policy": args.ctxfs_policy,
    }
    for mode in args.settings:
        SETTINGS["mode"] = mode
        # LangChain's own default never summarizes (no trigger): at its defaults it is none
        chosen = tuple(s for s in systems if mode == "mapped" or s != "langchain")
        results: list[dict[str, Outcome]] = []
        started = time.perf_counter()
        for name, history in histories.items():
            for budget in args.budgets:
                results.append(replay(name, history, budget, chosen, measure, exact))
                print(f"  {mode}: {name} {budget // 1000}k done", file=sys.stderr)
        print(
            f"settings: {mode}; replayed {len(traces)} traces x {len(args.budgets)} budgets in "
            f"{time.perf_counter() - started:.0f} s; peer token counting: {args.peer_counter}; "
            f"storage: {args.storage}; ctxfs summary: {args.summary}; file tools: "
            f"{args.file_tools}; ctxfs settings: {policy_text}\n"
        )
        print_per_trace(results, chosen)
        rows = summarize(results, chosen)
        print_summary(rows)
        print_cache(rows)
        print_retention(rows)
        print_goals(rows)
        per_trace = [
            {k: v for k, v in asdict(o).items() if k != "hook_seconds"}
            for r in results
            for o in r.values()
        ]
        document[mode] = {"per_trace": per_trace, "totals": rows}
        if mode != "mapped" or args.no_overhead:
            continue
        known = {
            next(iter(r.values())).budget: r
            for r in results
            if next(iter(r.values())).trace == long_name
        }
        print(f"per-turn before-model hook on {long_name} (turns interleaved, one run):")
        hooks = overhead(
            long_name,
            histories[long_name],
            [*args.budgets, STEADY_BUDGET],
            chosen,
            measure,
            exact,
            known,
        )
        print_overhead(hooks)
        document["overhead"] = hooks
    if args.json:
        print(json.dumps(document, indent=1))


if __name__ == "__main__":
    main()
