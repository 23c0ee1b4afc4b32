"""ContextMiddleware: per-turn overhead on long threads, and checkpoint size with large results.

Not a test: prints what one run measured. Usage::

    python benchmarks/bench_middleware.py [SIZE ...] [--turns 20] [--clock cpu|wall|instructions]
    python benchmarks/bench_middleware.py 2000 10000 50000 --skip-checkpoints
    python benchmarks/bench_middleware.py 2000 10000 50000 --turns 3 --clock instructions

1. Overhead: for each SIZE (messages; 2,000, 10,000 and 50,000 by default), a
   ``create_agent`` agent whose thread already holds that many messages (far under the
   window, so nothing is compacted) answers ``--turns`` more user turns; the median time per
   turn with ``ContextMiddleware`` is set against the median without it. Each turn is a full
   ``invoke``: load the checkpoint, run the hooks, call the (scripted, instant) model, save.
   The model is instant, so the ratio is the worst case: with a real model the turn is
   seconds long and the overhead a far smaller share. The two agents' turns are interleaved.
   ``--clock cpu`` (the default) times the process's CPU time, every thread of it, so a
   machine busy with other work slows both agents alike instead of adding its waits to one;
   ``--clock wall`` times the wall clock; ``--clock instructions`` counts the instructions
   executed, under valgrind's callgrind (see ``_instructions.py``: the script runs itself
   again under it), which a loaded machine does not move. Each turn starts after a full
   garbage collection (``--no-settle``: not), so that neither agent pays for a collection of
   what the other left.
2. Checkpoint size: ``--long-turns`` tool calls, each returning ``--result-chars`` characters,
   with a SQLite checkpointer: the latest checkpoint's size and the database file's size,
   with and without ctxfs.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _instructions import instructions, rerun_under_callgrind, under_callgrind
from langchain.agents import create_agent
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from ctxfs import ContextPolicy, Workspace
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.testing import ScriptedChatModel, long_history, tool_call


@tool
def status() -> str:
    """Returns a one-line status."""
    return "ok"


def _overhead_agent(with_ctxfs: bool, replies: int, messages: int = 0) -> Any:
    model = ScriptedChatModel(responses=[f"answer {n}" for n in range(replies)])
    middleware = []
    if with_ctxfs:
        # A window the thread stays far under (about 110 tokens a message), so that nothing
        # is compacted and the turn measures ctxfs's bookkeeping alone.
        policy = ContextPolicy(max_input_tokens=max(2_000_000, 400 * messages))
        middleware = [ContextMiddleware(Workspace("memory://bench"), policy)]
    return create_agent(model, [status], middleware=middleware, checkpointer=InMemorySaver())


def measure_overhead(
    messages: int, turns: int, clock: Callable[[], float] = time.process_time, settle: bool = True
) -> tuple[float, float]:
    """Median seconds per turn without and with ctxfs, turns interleaved.

    With ``settle``, a full garbage collection (not timed) precedes each turn: the two agents
    share one process, and a full collection scans both, so without it each turn would pay
    for whatever the turns before it left, whichever agent made it.
    """
    config: Any = {"configurable": {"thread_id": "bench"}}
    agents = {flag: _overhead_agent(flag, turns + 2, messages) for flag in (False, True)}
    for agent in agents.values():
        agent.update_state(config, {"messages": long_history((messages - 1) // 2)})
        agent.invoke({"messages": [("user", "warm up")]}, config)
    times: dict[bool, list[float]] = {False: [], True: []}
    for n in range(turns):
        for flag in (False, True) if n % 2 else (True, False):
            if settle:
                gc.collect()
            started = clock()
            agents[flag].invoke({"messages": [("user", f"question {n}")]}, config)
            times[flag].append(clock() - started)
    kept = {flag: len(agent.get_state(config).values["messages"]) for flag, agent in agents.items()}
    if kept[True] != kept[False]:
        raise RuntimeError(f"ctxfs compacted the thread ({kept}): the turns are not comparable")
    return statistics.median(times[False]), statistics.median(times[True])


def measure_checkpoints(turns: int, result_chars: int, with_ctxfs: bool) -> tuple[int, int]:
    """Bytes of the latest checkpoint and of the SQLite file after a long run."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    line = "2024-06-01T00:00:00Z INFO worker settle batch ok in 12 ms txn=TX-123456\n"
    text = (line * (result_chars // len(line) + 1))[:result_chars]

    @tool
    def fetch(n: int) -> str:
        """Returns a large result."""
        return f"result {n}\n{text}"

    replies: list[Any] = [tool_call("fetch", {"n": n}) for n in range(turns)]
    model = ScriptedChatModel(responses=[*replies, "done"])
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "checkpoints.sqlite"
        connection = sqlite3.connect(db, check_same_thread=False)
        saver = SqliteSaver(connection)
        middleware = []
        if with_ctxfs:
            policy = ContextPolicy(
                max_input_tokens=1_000_000, tool_results={"threshold": {"tokens": 1_000}}
            )
            middleware = [ContextMiddleware(Workspace(Path(folder) / "ws"), policy)]
        agent = create_agent(model, [fetch], middleware=middleware, checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "long"}, "recursion_limit": 10 * turns}
        agent.invoke({"messages": [("user", "fetch everything")]}, config)
        latest = saver.get_tuple(config)
        assert latest is not None
        _, blob = saver.serde.dumps_typed(latest.checkpoint["channel_values"])
        connection.close()
        return len(blob), db.stat().st_size


_CLOCKS: dict[str, Callable[[], float]] = {
    "cpu": time.process_time,
    "wall": time.perf_counter,
    "instructions": instructions,
}
_UNITS = {"cpu": (1e3, "ms"), "wall": (1e3, "ms"), "instructions": (1e-6, "M instructions")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", type=int, nargs="*", default=[2_000, 10_000, 50_000])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--clock", choices=sorted(_CLOCKS), default="cpu")
    parser.add_argument("--long-turns", type=int, default=200)
    parser.add_argument("--result-chars", type=int, default=20_000)
    parser.add_argument("--skip-checkpoints", action="store_true")
    parser.add_argument(
        "--no-settle", action="store_true", help="no full garbage collection before each turn"
    )
    args = parser.parse_args()
    if args.clock == "instructions" and not under_callgrind():
        rerun_under_callgrind()

    scale, unit = _UNITS[args.clock]
    print(f"Per turn ({args.clock}, median of {args.turns} turns each, in {unit}):")
    print("| thread | without ctxfs | with ctxfs | overhead |")
    print("|---|---|---|---|")
    rows: list[tuple[int, float, float]] = []
    for size in args.sizes:
        without, with_ = measure_overhead(
            size, args.turns, _CLOCKS[args.clock], settle=not args.no_settle
        )
        rows.append((size, without, with_))
        print(
            f"| {size:,} messages | {without * scale:,.1f} | {with_ * scale:,.1f} "
            f"| {(with_ / without - 1) * 100:+.1f} % ({(with_ - without) * scale:+,.1f}) |",
            flush=True,
        )
    if len(rows) > 1:
        (first, base_a, ctx_a), (last, base_b, ctx_b) = rows[0], rows[-1]
        grown = ((ctx_b - base_b) - (ctx_a - base_a)) / (last - first)
        print(
            f"per message of the thread, from {first:,} to {last:,}: the turn without ctxfs "
            f"grows by {(base_b - base_a) / (last - first) * scale:,.4f} {unit}, "
            f"ctxfs's overhead by {grown * scale:+,.4f} {unit}"
        )
    print("(goal: under 5 % at every size)")
    if args.skip_checkpoints:
        return

    print(
        f"\nCheckpoint size after {args.long_turns} tool calls of "
        f"{args.result_chars:,} characters each (SQLite):"
    )
    for flag in (False, True):
        latest, total = measure_checkpoints(args.long_turns, args.result_chars, flag)
        label = "with ctxfs   " if flag else "without ctxfs"
        print(
            f"  {label}  latest checkpoint {latest / 1e6:8.2f} MB   database {total / 1e6:9.2f} MB"
        )


if __name__ == "__main__":
    main()
