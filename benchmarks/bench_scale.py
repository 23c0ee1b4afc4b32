"""Long threads: the cost of a compaction and of a summary, and what grows, at 1k to 50k messages.

Usage::

    python benchmarks/bench_scale.py
    python benchmarks/bench_scale.py --marks 1000 10000 50000 --window 16000 --workspace ./ws

One synthetic agent thread (seeded, so every run sends the same messages) is driven through
:class:`ctxfs.ContextEngine` as an agent loop would: each tool result goes through result
offload as it arrives, and the history is compacted before each assistant turn, in a
``--window``-token context (16k by default) with every other setting at its default (the
extractive summarizer: no model). The thread writes files, runs commands and gets results of
every size, some far over the offload threshold, so each summary has files, offloaded paths
and earlier segments to name.

At each mark (a number of messages sent so far, and the 500th summary: ``--summaries``) it
reports:

- the per-call cost of a compaction that does not summarize (median of the calls since the
  previous mark) and of one that summarizes and commits a segment to the transcript index
  (median of the last 20);
- the size of the transcript index: every file of the thread's transcript folder except the
  segments themselves (``index.json`` and the per-segment records);
- the size of the checkpoint: the compacted message list as JSON (``messages_to_dict``), and
  the summary message in it.

Costs are the process's CPU time by default (``--clock cpu``: what other work on a shared
machine does is left out, and so are waits for the disk); ``--clock wall`` times the wall
clock. Then the ratios against the first mark, within the same run: per-call costs should stay near
1 however long the thread; the index may grow at most linearly (its bytes per message stay
flat) and the checkpoint should not grow at all.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_to_dict,
)

from ctxfs import (
    ContextEngine,
    ContextPolicy,
    Summarized,
    TranscriptArchive,
    Workspace,
    is_summary,
)

THREAD = "scale-thread"
_WORDS = [
    *("alpha", "beta", "gamma", "delta", "parser", "lexer", "token", "buffer", "index"),
    *("segment", "commit", "retry", "worker", "request", "handler", "config", "module"),
    *("import", "return", "error", "value", "state", "cache", "file", "path", "line"),
]


def _text(rng: random.Random, chars: int) -> str:
    """About ``chars`` characters of lines of words."""
    out: list[str] = []
    size = 0
    while size < chars:
        line = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 14)))
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)


def _result_size(rng: random.Random) -> int:
    roll = rng.random()
    if roll < 0.80:
        return rng.randint(100, 800)
    if roll < 0.95:
        return rng.randint(2_000, 6_000)
    return rng.randint(12_000, 40_000)  # over the offload threshold


def turns(seed: int) -> Any:
    """Yields the messages of one endless thread, a turn at a time (AI call, tool result)."""
    rng = random.Random(seed)
    n = 0
    while True:
        batch: list[BaseMessage] = []
        if n % 10 == 0:
            batch.append(HumanMessage(f"request {n}: " + _text(rng, rng.randint(40, 300))))
        call_id = f"call_{n:06d}"
        if n % 4 == 3:
            path = f"/src/module_{rng.randint(0, 400):03d}.py"
            content = _text(rng, rng.randint(200, 1_500))
            call = {"name": "write_file", "args": {"file_path": path, "content": content}}
            result = f"Created {path} ({len(content)} bytes)"
        else:
            call = {"name": "bash", "args": {"command": f"run step {n} " + rng.choice(_WORDS)}}
            result = _text(rng, _result_size(rng))
        batch.append(
            AIMessage(
                f"step {n}: " + _text(rng, rng.randint(20, 200)),
                tool_calls=[{**call, "id": call_id}],
            )
        )
        batch.append(ToolMessage(result, tool_call_id=call_id, name=call["name"]))
        n += 1
        yield batch


@dataclass
class Mark:
    label: str
    messages: int
    summaries: int
    compact_ms: float
    summary_ms: float
    index_bytes: int
    checkpoint_bytes: int
    summary_bytes: int


def _index_bytes(workspace: Workspace, folder: str) -> int:
    """Bytes of the thread's transcript folder other than the segments (.jsonl and .md)."""
    if not workspace.exists(folder):
        return 0
    return sum(
        info.size or 0
        for info in workspace.store.walk(workspace.resolve(folder))
        if not info.path.endswith((".jsonl", ".md"))
    )


def run(
    marks: list[int],
    window: int,
    workspace_url: str,
    seed: int,
    summaries_mark: int,
    clock: Callable[[], float] = time.process_time,
) -> list[Mark]:
    workspace = Workspace(workspace_url)
    engine = ContextEngine(workspace, ContextPolicy(max_input_tokens=window))
    folder = TranscriptArchive(workspace, THREAD).directory
    state: list[BaseMessage] = [SystemMessage("You are a coding agent working on a parser.")]
    sent = 0
    summaries = 0
    plain: list[float] = []
    summarizing: list[float] = []
    results: list[Mark] = []
    pending = sorted(marks)
    at_summaries = summaries_mark <= 0
    started = time.perf_counter()

    def mark(label: str) -> None:
        summary = next((m for m in state if is_summary(m)), None)
        results.append(
            Mark(
                label=label,
                messages=sent,
                summaries=summaries,
                compact_ms=1_000 * statistics.median(plain) if plain else float("nan"),
                summary_ms=1_000 * statistics.median(summarizing[-20:])
                if summarizing
                else float("nan"),
                index_bytes=_index_bytes(workspace, folder),
                checkpoint_bytes=len(json.dumps(messages_to_dict(state))),
                summary_bytes=len(json.dumps(messages_to_dict([summary]))) if summary else 0,
            )
        )
        plain.clear()
        elapsed = time.perf_counter() - started
        print(f"  {label}: {sent:,} messages, {summaries} summaries ({elapsed:,.0f} s)", flush=True)

    for batch in turns(seed):
        ai, result = batch[-2], batch[-1]
        state += batch[:-2]
        sent += len(batch) - 2
        start = clock()
        compacted = engine.compact([*state, ai], thread_id=THREAD)
        took = clock() - start
        if any(isinstance(e, Summarized) for e in compacted.events):
            summaries += 1
            summarizing.append(took)
        else:
            plain.append(took)
        assert isinstance(result, ToolMessage)
        state = [*compacted.messages, engine.offload_tool_result(result, thread_id=THREAD)]
        sent += 2
        if summaries >= summaries_mark and not at_summaries:
            at_summaries = True
            mark(f"{summaries_mark} summaries")
        while pending and sent >= pending[0]:
            pending.pop(0)
            mark(f"{sent // 1000}k messages" if sent >= 1000 else f"{sent} messages")
        if not pending and at_summaries:
            break
        if not pending and sent >= 4 * max(marks):
            break  # that many summaries are out of reach at this window
    return results


_CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}x" if base else "-"


def report(results: list[Mark], window: int) -> None:
    base = results[0]
    print()
    print(f"Window {window:,} tokens; ratios against {base.label}, in this run.")
    print()
    print(
        "| mark | messages | summaries | compaction (ms) | summary + commit (ms) | "
        "index | index per message | checkpoint | summary message |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for m in sorted(results, key=lambda r: r.messages):
        print(
            f"| {m.label} | {m.messages:,} | {m.summaries} | {m.compact_ms:.2f} "
            f"({_ratio(m.compact_ms, base.compact_ms)}) | {m.summary_ms:.1f} "
            f"({_ratio(m.summary_ms, base.summary_ms)}) | {m.index_bytes / 1e3:,.0f} kB "
            f"({_ratio(m.index_bytes, base.index_bytes)}) | "
            f"{m.index_bytes / m.messages:,.0f} B | {m.checkpoint_bytes / 1e3:,.1f} kB "
            f"({_ratio(m.checkpoint_bytes, base.checkpoint_bytes)}) | "
            f"{m.summary_bytes / 1e3:,.1f} kB |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--marks", type=int, nargs="+", default=[1_000, 10_000, 50_000])
    parser.add_argument("--window", type=int, default=16_000, help="max_input_tokens")
    parser.add_argument(
        "--workspace", default="memory://bench-scale", help="a folder, memory://name or s3://..."
    )
    parser.add_argument(
        "--summaries", type=int, default=500, help="also a mark at this many summaries (0: none)"
    )
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument(
        "--clock",
        choices=sorted(_CLOCKS),
        default="cpu",
        help="cpu: the process's CPU time (a loaded machine's waits left out); wall: the "
        "wall clock, waits for the disk included",
    )
    args = parser.parse_args()
    also = f" (and {args.summaries} summaries)" if args.summaries > 0 else ""
    print(f"Driving one thread to {max(args.marks):,} messages{also}...")
    results = run(
        args.marks, args.window, args.workspace, args.seed, args.summaries, _CLOCKS[args.clock]
    )
    report(results, args.window)


if __name__ == "__main__":
    main()
