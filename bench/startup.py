"""Start-up of the embedded cluster: in-process ``serve()`` and ``setpoint cluster up``.

    .venv/bin/python bench/startup.py [--runs 5] [--root DIR ...]

Measured, each against a bare interpreter's start in the same run (the machine's speed):

- ``serve()`` in this process, to ready;
- ``cluster up --no-workloads``, process start to ready;
- ``cluster up`` with its default nodes, process start to "ready" (printed once its nodes
  are Ready), three ways: from cached bytecode, as an installed wheel runs; with
  PYTHONDONTWRITEBYTECODE set (this image sets it) and the project's bytecode as the tree's
  own ``make`` install leaves it (compiled, if its Makefile runs ``compileall``; else none);
  and with PYTHONDONTWRITEBYTECODE and no bytecode of the project's modules at all (a bare
  ``pip install -e``), where every start compiles every module it imports;
- beside each ``cluster up`` time, CPU seconds (the scheduler's count, to the nanosecond):
  the parent's when it says it serves (``_serving_cpu_s``: its interpreter, command line,
  imports and ``serve()``), and the parent's and its workloads' process's together when it
  says "ready" (``_cpu_s``); steadier than wall time on a loaded machine.

``--root`` times the ``setpoint`` of other source trees too (a checkout of the code before a
change, say), interleaved with this one run by run, so that drift on the machine hits all
alike.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import ROOT, bare_interpreter_s, child_environment, summary
from bench.procstats import children


async def in_process() -> float:
    from setpoint.cluster import serve

    started = time.perf_counter()
    async with serve():
        return time.perf_counter() - started


def cpu_seconds(pid: int, *, descendants: bool = False) -> float:
    """The CPU a process (with ``descendants``: and its children, theirs...) has run, to the
    nanosecond: the scheduler's own count of every thread (``/proc/PID/task/*/schedstat``),
    where ``/proc/PID/stat`` counts in clock ticks of 10 ms, too coarse for a start."""
    total = 0.0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0]) / 1e9
        except FileNotFoundError:
            continue  # a thread that ended meanwhile
    if descendants:
        total += sum(cpu_seconds(child, descendants=True) for child in children(pid))
    return total


def process(root: Path, no_workloads: bool, bytecode: bool = True) -> dict[str, float]:
    """Seconds from starting ``cluster up`` in ``root`` to its "Press Ctrl+C" line (``""``),
    and CPU seconds: of the parent when it printed that it serves (``_serving_cpu``), and of
    the parent and its workloads' process together at the end (``_cpu``)."""
    env = child_environment()
    if not bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        args = [sys.executable, "-m", "setpoint.cli.main", "cluster", "up", "--memory",
                "--port", "0", "--kubeconfig", str(Path(tmp) / "kubeconfig")]
        if no_workloads:
            args.append("--no-workloads")
        started = time.perf_counter()
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, env=env, cwd=root)
        assert proc.stdout is not None
        measured: dict[str, float] = {}
        for line in proc.stdout:
            if line.startswith(b"setpoint cluster serving"):
                measured["_serving_cpu"] = cpu_seconds(proc.pid)
            if line.startswith(b"Press Ctrl+C"):
                break
        else:
            raise RuntimeError(f"cluster up in {root} ended before it was ready")
        measured[""] = time.perf_counter() - started
        measured["_cpu"] = cpu_seconds(proc.pid, descendants=True)
        proc.terminate()
        proc.wait(timeout=30)
        return measured


def drop_bytecode(root: Path) -> None:
    """Remove the cached bytecode of the project's own modules under ``root``."""
    for cache in (root / "setpoint").rglob("__pycache__"):
        shutil.rmtree(cache, ignore_errors=True)


def install_bytecode(root: Path) -> None:
    """The project's bytecode as ``root``'s own ``make`` install leaves it: compiled, as its
    Makefile's ``compileall`` does, if it has one; none otherwise (a bare editable install)."""
    drop_bytecode(root)
    makefile = root / "Makefile"
    if makefile.exists() and "compileall" in makefile.read_text():
        subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", "setpoint"],
                       cwd=root, check=True)


def record(results: dict[str, list[float]], key: str, measured: dict[str, float]) -> None:
    """A ``cluster up`` run's measures (:func:`process`) under ``key`` and its suffixes."""
    for suffix, value in measured.items():
        results.setdefault(key.removesuffix("_s") + suffix + "_s", []).append(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--root", type=Path, action="append", default=[],
                        help="another source tree to time beside this one")
    args = parser.parse_args()
    roots = [ROOT, *args.root]
    import setpoint.cluster  # noqa: F401  (imports are not part of an in-process start)

    results: dict[str, list[float]] = {"bare_python_s": [], "in_process_s": []}
    # without bytecode first, then as installed: every cached run after writes the cache
    for root in roots:
        drop_bytecode(root)
    for _ in range(args.runs):
        for root in roots:
            record(results, f"{root.name}:nodes_ready_no_bytecode_s",
                   process(root, no_workloads=False, bytecode=False))
    for root in roots:
        install_bytecode(root)
    for _ in range(args.runs):
        for root in roots:
            record(results, f"{root.name}:nodes_ready_as_installed_s",
                   process(root, no_workloads=False, bytecode=False))
    for root in roots:
        process(root, no_workloads=False)  # untimed: caches the bytecode
    for _ in range(args.runs):
        results["bare_python_s"].append(bare_interpreter_s())
        results["in_process_s"].append(asyncio.run(in_process()))
        for root in roots:
            record(results, f"{root.name}:no_workloads_s", process(root, no_workloads=True))
            record(results, f"{root.name}:nodes_ready_s", process(root, no_workloads=False))
    print(json.dumps({"cores": os.cpu_count(), "load_1min": os.getloadavg()[0],
                      **{k: summary(v) for k, v in results.items()}}, indent=2))


if __name__ == "__main__":
    main()
