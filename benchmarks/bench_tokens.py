"""Token accounting and result-offload benchmarks (a script, not a test).

Usage::

    python benchmarks/bench_tokens.py --trajectories ../shared/data/trajectories

Prints (a) the cost of the tool-result offload path for a small and a 1 MB result, (b) the cost
of re-checking a 2,000-message history after one new message (cached ctxfs vs recount from
scratch vs langchain_core's ``count_tokens_approximately``), and (c) the accuracy of
characters/4 against exact counts on real agent traces. Trace files are read in place.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.utils import count_tokens_approximately

from ctxfs import ContextEngine, ContextPolicy, TiktokenCounter, Workspace


def _best_of(fn: Callable[[], object], *, repeat: int, number: int) -> float:
    """Best per-call time in seconds over ``repeat`` rounds of ``number`` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return min(times)


def load_trace(path: Path) -> list[BaseMessage]:
    """Converts one trace (see the trajectories README) into langchain messages."""
    messages: list[BaseMessage] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record: dict[str, Any] = json.loads(line)
        role, content = record["role"], record.get("content") or ""
        if role == "system":
            messages.append(SystemMessage(content))
        elif role == "user":
            messages.append(HumanMessage(content))
        elif role == "assistant":
            calls = [
                {"name": c["name"], "args": c["args"], "id": c["id"], "type": "tool_call"}
                for c in record.get("tool_calls") or []
            ]
            messages.append(AIMessage(content=content, tool_calls=calls))
        else:
            messages.append(
                ToolMessage(content, tool_call_id=record["tool_call_id"], name=record.get("name"))
            )
    return messages


def _chars(messages: list[BaseMessage]) -> int:
    """Characters as the README counts them: content plus JSON-encoded tool args."""
    total = 0
    for m in messages:
        total += len(m.text)
        if isinstance(m, AIMessage):
            total += sum(len(json.dumps(c["args"], ensure_ascii=False)) for c in m.tool_calls)
    return total


def bench_offload_path() -> None:
    print("(a) tool-result offload path (default policy: 20,000-token threshold)")
    engine = ContextEngine(Workspace("memory://bench"), ContextPolicy(max_input_tokens=200_000))
    small = ToolMessage("total 12\n-rw-r--r-- 1 user 420 main.py\n", tool_call_id="s", name="bash")
    per_call = _best_of(
        lambda: engine.offload_tool_result(small, thread_id="t"), repeat=5, number=20_000
    )
    print(f"    small result (40 B, not tokenized): {per_call * 1e6:8.2f} µs per call")
    line = "2024-05-01T12:00:00Z INFO worker-3 processed batch 1234 in 56 ms status=ok\n"
    big_text = line * (1_000_000 // len(line))
    counter = 0

    def offload_big() -> None:
        nonlocal counter
        counter += 1  # a fresh id each time, so every run really writes
        msg = ToolMessage(big_text, tool_call_id=f"b{counter}", name="bash")
        engine.offload_tool_result(msg, thread_id="t")

    per_big = _best_of(offload_big, repeat=5, number=3)
    tokenize = _best_of(lambda: TiktokenCounter().count_text(big_text), repeat=3, number=1)
    print(
        f"    1 MB result (offloaded):            {per_big * 1e3:8.2f} ms per call "
        f"(of which tokenizing ≈ {tokenize * 1e3:.2f} ms)"
    )


def bench_history_check(base: list[BaseMessage]) -> None:
    print("(b) re-checking a 2,000-message history after one new message")
    history = [m.model_copy() for m in (base * (2_000 // max(1, len(base)) + 1))[:2_000]]
    cached = TiktokenCounter()
    cached.count_messages(history)  # the history was counted before
    new = HumanMessage("Please also run the tests and report what fails.")
    history.append(new)
    rounds = 5
    t_cached = _best_of(lambda: cached.count_messages(history), repeat=rounds, number=10)
    t_scratch = _best_of(lambda: TiktokenCounter().count_messages(history), repeat=rounds, number=1)
    t_approx = _best_of(lambda: count_tokens_approximately(history), repeat=rounds, number=3)
    print(f"    ctxfs cached (1 new message tokenized): {t_cached * 1e3:9.3f} ms")
    print(f"    ctxfs recount from scratch (exact):     {t_scratch * 1e3:9.3f} ms")
    print(f"    count_tokens_approximately (chars/4):   {t_approx * 1e3:9.3f} ms")
    print(
        f"    ratios: scratch/cached = {t_scratch / t_cached:,.0f}x, "
        f"approximate/cached = {t_approx / t_cached:,.1f}x"
    )


def bench_accuracy(directory: Path) -> list[BaseMessage]:
    print(f"(c) accuracy on real traces in {directory}: exact cl100k_base vs characters/4")
    print(
        f"    {'trace':46} {'msgs':>5} {'exact':>9} {'chars/4':>9} {'err':>7}"
        f" {'lc_approx':>9} {'err':>7}"
    )
    errors: list[tuple[float, str]] = []
    lc_errors: list[float] = []
    longest: list[BaseMessage] = []
    for path in sorted(directory.glob("*.jsonl")):
        messages = load_trace(path)
        if len(messages) > len(longest):
            longest = messages
        exact = TiktokenCounter().count_messages(messages)
        approx = _chars(messages) / 4
        lc = count_tokens_approximately(messages)
        err = (approx - exact) / exact
        lc_err = (lc - exact) / exact
        errors.append((err, path.stem))
        lc_errors.append(lc_err)
        print(
            f"    {path.stem[:46]:46} {len(messages):5} {exact:9,} {approx:9,.0f} {err:+7.1%}"
            f" {lc:9,} {lc_err:+7.1%}"
        )
    if errors:
        worst = max(errors, key=lambda e: abs(e[0]))
        print(f"    worst chars/4 error: {worst[0]:+.1%} ({worst[1]})")
        print(f"    mean |chars/4 error|: {statistics.mean(abs(e) for e, _ in errors):.1%}")
        print(f"    worst count_tokens_approximately error: {max(lc_errors, key=abs):+.1%}")
    return longest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=Path, help="folder of *.jsonl traces")
    args = parser.parse_args()
    bench_offload_path()
    base: list[BaseMessage] = []
    if args.trajectories:
        base = bench_accuracy(args.trajectories)
    if not base:
        base = [HumanMessage(f"synthetic message {i} " * 20) for i in range(100)]
    bench_history_check(base)


if __name__ == "__main__":
    main()
