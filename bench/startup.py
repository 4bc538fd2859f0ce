"""Start-up of the embedded API server: in-process ``serve()`` and ``setpoint cluster up``.

    .venv/bin/python bench/startup.py [--runs 5]

The command is timed as an installed package runs, from cached bytecode (see
``child_environment``); an untimed first start writes that cache.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import child_environment


async def in_process() -> float:
    from setpoint.cluster import serve

    started = time.perf_counter()
    async with serve():
        return time.perf_counter() - started


def process(no_workloads: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        args = [sys.executable, "-m", "setpoint.cli.main", "cluster", "up", "--memory",
                "--port", "0", "--kubeconfig", str(Path(tmp) / "kubeconfig")]
        if no_workloads:
            args.append("--no-workloads")
        started = time.perf_counter()
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, env=child_environment())
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith(b"Press Ctrl+C"):
                break
        elapsed = time.perf_counter() - started
        proc.terminate()
        proc.wait(timeout=10)
        return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    import setpoint.cluster  # noqa: F401  (imports are not part of an in-process start)

    process(no_workloads=True)  # untimed: caches the bytecode
    results = {
        "in_process_s": [asyncio.run(in_process()) for _ in range(runs)],
        "process_s": [process(no_workloads=True) for _ in range(runs)],
        "bare_python_s": [],
    }
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        results["bare_python_s"].append(time.perf_counter() - started)
    print(json.dumps({k: {"median": statistics.median(v), "min": min(v), "max": max(v)}
                      for k, v in results.items()}, indent=2))


if __name__ == "__main__":
    main()
