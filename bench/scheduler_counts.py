"""How many scheduling cycles the workloads benchmark costs the scheduler, and how long they
take, measured inside the server process.

Runs ``cluster up --workloads-in-process`` (the scheduler must run in the process whose
functions are wrapped; by default the workloads run in a child process, where nothing was
counted) with the scheduler's ``schedule()`` and its DefaultPreemption diagnosis wrapped to
count and time every call, and the nodes each cycle filtered (nothing else changes), runs
the benchmark's simulation once against it (:func:`bench.workloads.simulate`) and prints the
counts with the timings. "server CPU" is then both the API server's and the workloads'.

    .venv/bin/python bench/scheduler_counts.py [--grace 5] [--deployments 100]
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import base64
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import ROOT, Server


def serve_counted(out: Path, cli_args: list[str]) -> None:
    """Run the setpoint CLI with the scheduler instrumented; write the counts at exit."""
    import setpoint.workloads.scheduler.algorithm as algorithm
    import setpoint.workloads.scheduler.scheduler as scheduler
    from setpoint.cli.main import main as cli

    counts = {"cycles": 0, "failed": 0, "nodes_filtered": 0, "schedule_s": 0.0,
              "preemption": 0, "preemption_s": 0.0}
    schedule, preemption = algorithm.schedule, algorithm._preemption

    def counted_schedule(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        decision = schedule(*args, **kwargs)
        counts["schedule_s"] += time.perf_counter() - started
        counts["cycles"] += 1
        counts["failed"] += decision.node is None
        counts["nodes_filtered"] += getattr(decision, "processed", 0) or len(args[1])
        return decision

    def counted_preemption(*args: Any) -> str:
        started = time.perf_counter()
        message = preemption(*args)
        counts["preemption_s"] += time.perf_counter() - started
        counts["preemption"] += 1
        return message

    # the name the scheduler module imported, which its cycles call (not re-exported)
    scheduler.schedule = counted_schedule  # type: ignore[attr-defined]
    algorithm._preemption = counted_preemption  # type: ignore[assignment]
    atexit.register(lambda: out.write_text(json.dumps(counts)))
    sys.argv = ["setpoint", *cli_args]
    cli()


def start_counted(server: Server, out: Path) -> None:
    """Start ``server`` as :meth:`Server.start` does, through :func:`serve_counted`."""
    server.proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(out), "cluster", "up", "--memory", "--port",
         "0", "--kubeconfig", str(server.kubeconfig), "--workloads-in-process", *server.extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=ROOT)
    assert server.proc.stdout is not None
    for line in server.proc.stdout:
        if line.startswith(b"Press Ctrl+C"):
            break
    else:
        raise RuntimeError("server did not start")
    config = yaml.safe_load(server.kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    server.url = cluster["server"]
    server.token = config["users"][0]["user"]["token"]
    server.ca = base64.b64decode(cluster["certificate-authority-data"]).decode()


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--serve":
        serve_counted(Path(sys.argv[2]), sys.argv[3:])
        return
    import bench.workload_objects
    from bench.workload_objects import NODES
    from bench.workloads import ServerLog, simulate

    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grace", type=int, default=5)
    parser.add_argument("--deployments", type=int, default=100)
    parser.add_argument("--exact-timing", action="store_true")
    parser.add_argument("--nodes", type=int, help="default: one per 100 pods, at least 10")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "counts.json"
        nodes = args.nodes or max(NODES, -(-args.deployments * 10 // 100))
        bench.workload_objects.NODES = nodes  # what simulate() waits for
        server = Server("--nodes", str(nodes))
        start_counted(server, out)
        ServerLog(server)
        result: dict[str, Any] = {"grace": args.grace}
        try:
            asyncio.run(simulate(server, args.deployments, args.grace, result,
                                 args.exact_timing))
        finally:
            server.stop()  # SIGTERM: the server stops cleanly and writes the counts
        counts = json.loads(out.read_text())
    cpu = result["ready_cpu_s"] + result["rollout_cpu_s"]
    print(json.dumps({**counts, "server_cpu_s": round(cpu, 2),
                      "ready_s": round(result["ready_s"], 2),
                      "rollout_s": round(result["rollout_s"], 2)}))
    per = 1000 * counts["preemption_s"] / max(counts["preemption"], 1)
    print(f"grace {args.grace}: {counts['cycles']} scheduling cycles, {counts['failed']} "
          f"failed, {counts['nodes_filtered']} nodes filtered; schedule() "
          f"{counts['schedule_s']:.1f} s of {cpu:.1f} s server CPU, of "
          f"which the preemption diagnosis {counts['preemption_s']:.1f} s "
          f"({per:.2f} ms per failed cycle)")


if __name__ == "__main__":
    main()
