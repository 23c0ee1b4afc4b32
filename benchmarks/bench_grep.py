"""grep throughput: ctxfs vs ripgrep on a local tree, and concurrent vs serial reads on S3.

Not a test: prints ratios measured in one run (timings on a shared machine are noisy, ratios
less so). Usage::

    python benchmarks/bench_grep.py [--files 20000] [--mb 200] [--s3-objects 1000]

Needs ``rg`` for the local comparison (the ``bench`` extra installs the ``ripgrep`` wheel
next to the interpreter; a ``rg`` on ``PATH`` is used otherwise) and the ``dev`` extra
(moto server, s3fs) for the S3 one.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ctxfs import Workspace
from ctxfs.sandbox import Limits

WORDS = [
    "request",
    "handler",
    "timeout",
    "retry",
    "socket",
    "buffer",
    "parser",
    "token",
    "index",
    "cache",
    "worker",
    "queue",
    "session",
    "commit",
    "branch",
    "module",
    "import",
    "return",
    "value",
    "error",
    "warning",
    "debug",
    "trace",
]


def make_tree(root: Path, files: int, total_mb: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    per_file = total_mb * 2**20 // files
    for n in range(files):
        folder = root / f"pkg{n % 100:02d}" / f"mod{n % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = []
        size = 0
        while size < per_file:
            line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14)))
            if rng.random() < 0.0005:
                line += " NEEDLE_4242 found"
            if rng.random() < 0.0005:
                line += " Connection Refused by peer"
            lines.append(line)
            size += len(line) + 1
        (folder / f"file{n}.txt").write_text("\n".join(lines) + "\n")


def timed(fn):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def _cpu() -> float:
    """CPU seconds (user and system) of this process and of the children it waited for."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def measured(fn):  # type: ignore[no-untyped-def]
    """Wall seconds, CPU seconds (this process and its children) and the value of ``fn()``."""
    cpu = _cpu()
    wall, value = timed(fn)
    return wall, _cpu() - cpu, value


def _rg() -> str | None:
    beside = Path(sys.executable).with_name("rg")
    return str(beside) if beside.exists() else shutil.which("rg")


def rg_files(args: list[str], root: Path) -> set[str]:
    out = subprocess.run(
        [_rg() or "rg", "--files-with-matches", "--no-messages", *args, str(root)],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return {"/" + str(Path(p).relative_to(root)) for p in out.splitlines()}


def bench_local(files: int, mb: int, tree: Path | None = None, runs: int = 3) -> None:
    if _rg() is None:
        print("rg not found: install the bench extra (the 'ripgrep' wheel) for the comparison")
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = tree or Path(tmp) / "tree"
        if not root.exists():
            print(f"generating {files} files / {mb} MB ...", flush=True)
            make_tree(root, files, mb)
        # The time limits are lifted: on a loaded machine the default 5 s of matching can
        # run out in wall time, and this measures speed, not the limits.
        ws = Workspace(root, limits=Limits(regex_timeout=3_600, search_timeout=3_600))
        cases = [
            ("literal", "NEEDLE_4242", ["-F", "NEEDLE_4242"], {"fixed_strings": True}),
            ("regex", r"Conn\w+ Re[a-z]+ by", [r"Conn\w+ Re[a-z]+ by"], {}),
            (
                "case-insensitive",
                "connection refused",
                ["-i", "connection refused"],
                {"ignore_case": True},
            ),
        ]
        rg_files(["-F", "warm"], root)  # warm the page cache for both
        print(f"load average {_load()}; best of {runs} runs, rg, rg -j1 and ctxfs interleaved")
        print(
            "| pattern | rg wall | rg CPU | rg -j1 wall | ctxfs wall | ctxfs CPU "
            "| wall vs rg | wall vs rg -j1 | CPU vs rg | same hits |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        for name, pattern, rg_args, kwargs in cases:
            best = {key: [float("inf"), float("inf")] for key in ("rg", "rg1", "ws")}
            hits: dict[str, set[str]] = {}
            for _ in range(runs):
                for key, run in (
                    ("rg", lambda a=rg_args: rg_files(a, root)),
                    ("rg1", lambda a=rg_args: rg_files(["-j1", *a], root)),
                    ("ws", lambda p=pattern, k=kwargs: ws.grep(p, "/", **k)),
                ):
                    wall, cpu, value = measured(run)
                    best[key] = [min(best[key][0], wall), min(best[key][1], cpu)]
                    hits[key] = value if isinstance(value, set) else {f.path for f in value.files}
            (rg_wall, rg_cpu), (rg1_wall, _), (ws_wall, ws_cpu) = (
                best["rg"],
                best["rg1"],
                best["ws"],
            )
            print(
                f"| {name} | {rg_wall:.3f} s | {rg_cpu:.3f} s | {rg1_wall:.3f} s | "
                f"{ws_wall:.3f} s | {ws_cpu:.3f} s | {ws_wall / rg_wall:.1f}x | "
                f"{ws_wall / rg1_wall:.1f}x | {ws_cpu / rg_cpu:.1f}x | "
                f"{hits['ws'] == hits['rg'] == hits['rg1']} ({len(hits['ws'])} files) |",
                flush=True,
            )
        print(f"load average {_load()}")


def _load() -> str:
    return " ".join(f"{n:.1f}" for n in os.getloadavg())


def bench_s3(objects: int) -> None:
    import boto3

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # A separate process: an in-process server would share the GIL with the client and
    # serialise everything, hiding any client-side concurrency.
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        endpoint = f"http://127.0.0.1:{port}"
        _wait_for(endpoint)
        creds = {"aws_access_key_id": "x", "aws_secret_access_key": "x"}
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", **creds)
        client.create_bucket(Bucket="bench")
        rng = random.Random(3)
        for n in range(objects):
            body = "\n".join(" ".join(rng.choice(WORDS) for _ in range(10)) for _ in range(40))
            if n % 50 == 0:
                body += "\nNEEDLE_4242\n"
            client.put_object(Bucket="bench", Key=f"ws/d{n % 10}/obj{n}.txt", Body=body)
        options = {"endpoint_url": endpoint, "key": "x", "secret": "x"}
        ws = Workspace("s3://bench/ws", storage_options=options)
        t_ws, result = timed(lambda: ws.grep("NEEDLE_4242", "/", fixed_strings=True))

        def serial() -> set[str]:
            hits = set()
            for info in ws.store.walk("/"):
                if b"NEEDLE_4242" in ws.store.read_bytes(info.path):
                    hits.add(info.path)
            return hits

        t_serial, hits_serial = timed(serial)
        same = {f.path for f in result.files} == hits_serial
        print(
            f"S3 {objects} objects: ctxfs grep {t_ws:.2f} s, one-by-one reads {t_serial:.2f} s, "
            f"speed-up {t_serial / t_ws:.1f}x, same hits: {same} ({len(hits_serial)} files)"
        )
    finally:
        server.terminate()
        server.wait()


def _wait_for(endpoint: str) -> None:
    import urllib.request

    for _ in range(100):
        try:
            urllib.request.urlopen(endpoint, timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"moto server at {endpoint} did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--s3-objects", type=int, default=1_000)
    parser.add_argument("--tree", type=Path, help="a folder to keep the generated tree in")
    parser.add_argument("--runs", type=int, default=3, help="runs of each case (best kept)")
    parser.add_argument("--skip-local", action="store_true")
    parser.add_argument("--skip-s3", action="store_true")
    args = parser.parse_args()
    if not args.skip_local:
        bench_local(args.files, args.mb, args.tree, args.runs)
    if not args.skip_s3:
        bench_s3(args.s3_objects)


if __name__ == "__main__":
    main()
