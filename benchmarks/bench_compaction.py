"""Compaction on real agent runs: budgets held, summaries made, tokens saved, nothing lost.

Usage::

    python benchmarks/bench_compaction.py --trajectories ../shared/data/trajectories
    python benchmarks/bench_compaction.py --trajectories ../shared/data/trajectories \
        --budgets 32000 64000 --compare-clearing

Each trace is replayed as an agent loop would see it, at budgets of 32k, 64k and 128k tokens
(``ContextPolicy(max_input_tokens=budget)`` with every other setting at its default, and the
extractive summarizer: no model): each tool result goes through result offload as it
arrives, and the history is compacted before each assistant turn. Reported per trace and
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
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from ctxfs import Workspace
from ctxfs.archive import TranscriptArchive
from ctxfs.engine import ContextEngine
from ctxfs.events import Summarized, ToolResultCleared
from ctxfs.offload import pointer_path
from ctxfs.policy import ContextPolicy
from ctxfs.summary import is_summary
from ctxfs.tokens import TiktokenCounter

BUDGETS = (32_000, 64_000, 128_000)


def load_trace(path: Path) -> list[BaseMessage]:
    """Converts one trace (see the trajectories README) into langchain messages with ids."""
    messages: list[BaseMessage] = []
    for n, line in enumerate(path.read_bytes().decode("utf-8").split("\n")):
        if not line.strip():
            continue
        record: dict[str, Any] = json.loads(line)
        role, content, mid = record["role"], record.get("content") or "", f"m{n}"
        if role == "system":
            messages.append(SystemMessage(content, id=mid))
        elif role == "user":
            messages.append(HumanMessage(content, id=mid))
        elif role == "assistant":
            calls = [
                {"name": c["name"], "args": c.get("args") or {}, "id": c["id"]}
                for c in record.get("tool_calls") or []
            ]
            messages.append(AIMessage(content, tool_calls=calls, id=mid))
        else:
            messages.append(
                ToolMessage(
                    content, tool_call_id=record["tool_call_id"], name=record.get("name"), id=mid
                )
            )
    return messages


def _text(message: BaseMessage) -> str:
    """What must come back byte-exact: the content and the tool-call arguments."""
    parts = [message.content if isinstance(message.content, str) else json.dumps(message.content)]
    if isinstance(message, AIMessage):
        parts += [
            json.dumps(c["args"], ensure_ascii=False, sort_keys=True) for c in message.tool_calls
        ]
    return "\x00".join(parts)


def _resolve(message: BaseMessage, ws: Workspace) -> BaseMessage:
    if isinstance(message, ToolMessage) and isinstance(message.content, str):
        path = pointer_path(message.content)
        if path:
            return message.model_copy(update={"content": ws.read_text(path)})
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = []
        for call in message.tool_calls:
            args = {}
            for key, value in call["args"].items():
                path = pointer_path(value) if isinstance(value, str) else None
                args[key] = ws.read_text(path) if path else value
            calls.append({**call, "args": args})
        return message.model_copy(update={"tool_calls": calls})
    return message


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


def replay(
    name: str,
    history: list[BaseMessage],
    budget: int,
    clearing: dict[str, Any] | None = None,
) -> Outcome:
    counter = TiktokenCounter()
    label = "clear" if clearing and clearing.get("enabled") else "plain"
    ws = Workspace(f"memory://bench-{name}-{budget}-{label}")
    policy = ContextPolicy(max_input_tokens=budget, clearing=clearing or {})
    engine = ContextEngine(ws, policy, counter)
    state: list[BaseMessage] = []
    unmanaged: list[BaseMessage] = []
    calls = peak = over = summaries = clearings = cleared = managed = plain = 0
    start = time.perf_counter()
    for message in history:
        if isinstance(message, AIMessage):  # a model call is about to happen
            result = engine.compact(state, thread_id=name)
            state = result.messages
            summaries += sum(isinstance(e, Summarized) for e in result.events)
            batch = sum(isinstance(e, ToolResultCleared) for e in result.events)
            clearings += batch > 0
            cleared += batch
            calls += 1
            peak = max(peak, result.tokens_after)
            over += result.tokens_after > budget
            managed += result.tokens_after
            plain += counter.count_messages(unmanaged)
        if isinstance(message, ToolMessage):
            state = [*state, engine.offload_tool_result(message, thread_id=name)]
        else:
            state = [*state, message]
        unmanaged.append(message)
    seconds = time.perf_counter() - start

    # recoverability: system + archived + kept, every pointer resolved, against the original
    archived = TranscriptArchive(ws, name).read_all()
    system = [m for m in state if isinstance(m, SystemMessage)]
    kept = [m for m in state if not isinstance(m, SystemMessage) and not is_summary(m)]
    rebuilt = [_resolve(m, ws) for m in [*system, *archived, *kept]]
    in_context = {m.id: _text(m) for m in state}
    removed = recovered = 0
    assert len(rebuilt) == len(history), f"{name}: {len(rebuilt)} != {len(history)} messages"
    for original, back in zip(history, rebuilt, strict=True):
        text = _text(original)
        if in_context.get(original.id) == text:
            continue  # still in the context as it was: nothing removed
        size = len(text.encode("utf-8"))
        removed += size
        recovered += size if _text(back) == text and back.id == original.id else 0
    return Outcome(
        trace=name,
        budget=budget,
        calls=calls,
        peak=peak,
        over_budget=over,
        summaries=summaries,
        clearings=clearings,
        cleared=cleared,
        tokens_managed=managed,
        tokens_unmanaged=plain,
        removed_bytes=removed,
        recovered_bytes=recovered,
        seconds=seconds,
    )


def compare_clearing(traces: list[Path], budgets: list[int], clearing: dict[str, Any]) -> None:
    """Summaries and input tokens without and with the clearing step, per trace and budget."""
    print(
        f"{'trace':45} {'budget':>7} {'summ':>4} {'+clr':>4} {'batches':>7} {'cleared':>7} "
        f"{'input tokens':>13} {'+clearing':>13} {'change':>7} {'peak+clr':>8} {'recov':>6}"
    )
    totals: dict[int, list[tuple[Outcome, Outcome]]] = {b: [] for b in budgets}
    for path in traces:
        history = load_trace(path)
        for budget in budgets:
            off = replay(path.stem, history, budget)
            on = replay(path.stem, history, budget, clearing)
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
        history = load_trace(path)
        for budget in args.budgets:
            o = replay(path.stem, history, budget)
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
        print(
            f"budget {budget:>7,}: peak {max(o.peak for o in outcomes):,} "
            f"(calls over budget: {sum(o.over_budget for o in outcomes)}), "
            f"summaries {sum(o.summaries for o in outcomes)}, input tokens {managed:,} vs "
            f"{plain:,} unmanaged ({1 - managed / plain:.1%} saved), removed {removed:,} bytes, "
            f"recoverable byte-exact {recovered / removed if removed else 1:.2%}"
        )


if __name__ == "__main__":
    main()
