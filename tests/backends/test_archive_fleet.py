"""A fleet on one S3 bucket (issue 23): 8 processes x 4 threads, with forks, SIGKILLs and
lost replies. Afterwards nothing is lost, no request was over its window, and a fresh
process reads the archive: every line of every worker is its chain's segments (walked
through the record files) followed by its context."""

from __future__ import annotations

import json
import random
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import messages_from_dict

from ctxfs import TranscriptArchive, Workspace
from tests._zygote import Child, Zygote
from tests.backends.test_cas_processes import atomic_s3  # noqa: F401  (the fixture)
from tests.sdk._branch_check import check_branch, named_segments, own_chain, records

WORKER = Path(__file__).with_name("_fleet_worker.py")
PROCESSES = 8
STEPS = 10
THREADS = ("t0", "t1", "t2", "t3")


@pytest.mark.slow
def test_eight_processes_on_four_threads_lose_nothing_and_stay_within_the_window(
    atomic_s3: dict[str, Any],  # noqa: F811
    tmp_path: Path,
    zygote: Zygote,
) -> None:
    target = f"s3://ctxfs-cas/{tmp_path.name}"
    rng = random.Random(23)
    configs = []
    for n in range(PROCESSES):
        configs.append(
            {
                "target": target,
                "storage_options": atomic_s3,
                "who": f"w{n}",
                "steps": STEPS,
                "state": str(tmp_path / f"w{n}.json"),
                "lost": sorted(rng.sample(range(1, 60), 6)),
                "kill": rng.choice([None, 3, 6, 10]) if n % 2 else None,
            }
        )

    def start(config: dict[str, Any]) -> Child:
        return zygote.popen([sys.executable, str(WORKER), json.dumps(config)])

    running = {n: start(config) for n, config in enumerate(configs)}
    reports: list[dict[str, Any]] = []
    kills = 0
    while running:
        for n, worker in list(running.items()):
            out, err = worker.communicate(timeout=600)
            del running[n]
            if worker.returncode == -signal.SIGKILL:
                kills += 1  # killed at a transcript write: run again, it resumes
                running[n] = start({**configs[n], "kill": None})
                continue
            assert worker.returncode == 0, err[-3000:]
            reports.append(json.loads(out.splitlines()[-1]))
    assert kills, "no worker was killed"
    assert all(not r["failures"] for r in reports), [r["failures"] for r in reports]
    assert max(r["largest"] for r in reports) <= 8_000

    # a fresh process's view, straight from the store
    ws = Workspace(target, storage_options=atomic_s3)
    lines = 0
    for config in configs:
        with open(config["state"], encoding="utf-8") as file:
            state = json.load(file)
        for line in state["lines"]:
            everything = messages_from_dict(line["everything"])
            context = messages_from_dict(line["context"])
            check_branch(ws, line["thread"], everything, context)
            named = named_segments(context, line["thread"])
            if named:
                assert named == own_chain(ws, line["thread"], named[-1])[-len(named) :]
            lines += 1
    assert lines >= PROCESSES
    branches = 0
    for thread in THREADS:
        archive = TranscriptArchive(ws, thread)
        indexed = {s.number for s in archive.segments()}
        assert indexed <= set(records(ws, thread))
        for segment in archive.segments():  # every indexed segment reads back, verified
            assert archive.read_segment(segment)
        branches += len(archive.branches())
    assert branches > len(THREADS)  # forks happened, and each is a branch of its own
    print(f"fleet: {kills} kills, {lines} lines, {branches} branches on {len(THREADS)} threads")
