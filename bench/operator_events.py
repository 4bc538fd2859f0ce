"""The Widget operator's own cost per event, counted in instructions: steadier than time.

    .venv/bin/python bench/operator_events.py [--n 300] [--runs 3] [--root DIR ...]
    .venv/bin/python bench/operator_events.py --n 300 --runs 1 --profile DIR   # + stacks

The end-to-end benchmark (``bench/operator.py``) times the operator against the floor on a
loaded, shared machine, where CPU per event moves 2x with the load. This one counts what
the operator's process does, not how long it takes: ``setpoint run
examples.widget.operator:manager`` runs under ``perf stat -e
instructions:u,instructions:k,task-clock`` with counting switched on only around the
measured phases (``--control``), against a fresh ``setpoint cluster up --memory`` in its
own process (no proxy in between). Per tree and run:

1. the operator starts; 20 Widgets are created and reconciled first (discovery, pydantic's
   deferred validators, the connections: what any long-running operator has behind it);
2. counting on; N Widgets are created 16 at a time and waited for until all are ready;
   then ``spec.message`` changes on all N and the wait is for every ConfigMap to hold the
   new message and every Widget's ``status.observedGeneration`` to follow; counting off
   once the operator has been quiet (no new watch event) for half a second;
3. printed: user-space instructions and CPU milliseconds (task-clock) per event, an event
   being one Widget created or changed (2N), as bench/operator.py counts them; the
   kernel's instructions for the process (its sends, receives and waits) beside them.

Trees (``--root``, each a source tree such as ``git archive main | tar -x -C DIR``; the
working tree when none is given) are interleaved run by run. Instruction counts move about
1 % run to run at any load, so a cut of a few microseconds per event shows; the CPU time
beside them moves with the load as every timing here does. With ``--profile DIR`` the
operator also runs under ``bench/cpu_sampler.py`` (a stack per ms of its CPU, in the
measured phases), read by ``bench/profile_top.py``; its instruction counts then include
the sampler's own.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import call_counts, cpu_sampler
from bench.common import ROOT, Server, bare_interpreter_s, run_concurrently
from bench.operator import (
    CONCURRENCY,
    Tracker,
    change_widget,
    create_widget,
    define_widgets,
)

WARM_UP = 20


class Counting:
    """``perf stat`` around one process, counting switched on and off through its FIFOs."""

    def __init__(self, workdir: Path, command: list[str], cwd: Path, env: dict[str, str],
                 log: Path) -> None:
        self.ctl, self.ack, self.out = workdir / "ctl", workdir / "ack", workdir / "perf.txt"
        os.mkfifo(self.ctl)
        os.mkfifo(self.ack)
        self.proc = subprocess.Popen(
            ["perf", "stat", "-x", ",", "-e", "instructions:u,instructions:k,task-clock",
             "-D", "-1", "--control", f"fifo:{self.ctl},{self.ack}", "-o", str(self.out), "--",
             *command], cwd=cwd, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
        # opening a FIFO blocks until the other end opens: perf opens both at its start
        self._ctl = open(self.ctl, "w")  # noqa: SIM115 (kept open for the run)
        self._ack = open(self.ack)  # noqa: SIM115

    def switch(self, on: bool) -> None:
        self._ctl.write("enable\n" if on else "disable\n")
        self._ctl.flush()
        self._ack.readline()

    def stop(self) -> dict[str, float]:
        """Stop the operator (perf, its parent, then ends and writes its counts) and read
        what was counted."""
        self._ctl.close()
        self._ack.close()
        for child in _children(self.proc.pid):
            os.kill(child, 15)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        counts: dict[str, float] = {}
        for line in self.out.read_text().splitlines():
            parts = line.split(",")
            if len(parts) > 2 and parts[0].replace(".", "").isdigit():
                counts[parts[2]] = float(parts[0])
        return counts


def operator_command(kubeconfig: Path, sampler_out: Path | None, calls: bool = False,
                     ) -> list[str]:
    launcher = ["-m", "setpoint.cli.main"] if sampler_out is None \
        else call_counts.launcher(sampler_out) if calls \
        else cpu_sampler.launcher(sampler_out)
    return [sys.executable, *launcher, "run", "examples.widget.operator:manager",
            "--kubeconfig", str(kubeconfig)]


async def quiet(tracker: Tracker, period: float = 0.5) -> None:
    """Until no watch event has arrived for ``period`` seconds."""
    while True:
        tracker.changed.clear()
        try:
            await asyncio.wait_for(tracker.changed.wait(), period)
        except TimeoutError:
            return


async def run_one(root: Path, n: int, profile: Path | None, label: str,
                  py_spy: Path | None = None, calls: bool = False,
                  rate: int = 250) -> dict[str, float]:
    server = Server().start()
    workdir = Path(tempfile.mkdtemp(prefix="setpoint-bench-opev-"))
    sampler_out = None if profile is None or py_spy is not None \
        else profile / f"{label}.pstats" if calls else profile / f"{label}.cpu.txt"
    counting: Counting | None = None
    try:
        async with server.session(limit=CONCURRENCY * 2) as api:
            await define_widgets(api)
            tracker = Tracker(api)
            await tracker.start()
            counting = Counting(
                workdir, operator_command(server.kubeconfig, sampler_out, calls), root,
                {**os.environ, "PYTHONPATH": str(root)}, workdir / "operator.log")

            create = functools.partial(create_widget, api)

            change = functools.partial(change_widget, api)

            for i in range(n, n + WARM_UP):
                await create(i)
            await tracker.until(lambda: len(tracker.ready) >= WARM_UP, 120.0)
            await quiet(tracker)
            counting.switch(True)
            if sampler_out is not None:
                _sampler(counting.proc.pid)
            spy = None
            if py_spy is not None and profile is not None:
                operator_pid = str(_children(counting.proc.pid)[0])
                spy = subprocess.Popen(
                    [str(py_spy), "record", "--native", "--format", "raw", "--rate", str(rate),
                     "--pid", operator_pid, "-o", str(profile / f"{label}.py-spy.txt")]
                    if py_spy.name == "py-spy" else
                    # perf: which libraries (the interpreter, TLS, JSON, pydantic) the
                    # instructions are spent in (perf report --sort dso,sym)
                    ["perf", "record", "-e", "instructions:u", "-c", "200000", "-p",
                     operator_pid, "-o", str(profile / f"{label}.perf.data")],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            started = time.perf_counter()
            await run_concurrently(n, CONCURRENCY, create)
            await tracker.until(lambda: len(tracker.ready) >= n + WARM_UP, 60.0 + 0.3 * n)
            await run_concurrently(n, CONCURRENCY, change)
            await tracker.until(lambda: sum(m == "two" for m in tracker.messages.values())
                                >= n, 60.0 + 0.3 * n)
            await tracker.until(lambda: sum(g >= 2 for g in tracker.observed.values()) >= n,
                                60.0 + 0.3 * n)
            await quiet(tracker)
            wall = time.perf_counter() - started
            if spy is not None:
                spy.send_signal(2)  # py-spy writes its file on SIGINT
                spy.wait(timeout=60)
            if sampler_out is not None:
                _sampler(counting.proc.pid)
                deadline = time.perf_counter() + 30
                while not sampler_out.exists() and time.perf_counter() < deadline:
                    await asyncio.sleep(0.05)
            counting.switch(False)
            await tracker.stop()
    finally:
        counts = counting.stop() if counting is not None else {}
        server.stop()
    events = 2 * n
    return {"instructions_per_event": counts.get("instructions:u", 0.0) / events,
            "kernel_instructions_per_event": counts.get("instructions:k", 0.0) / events,
            "cpu_ms_per_event": counts.get("task-clock", 0.0) / events,
            "seconds": wall}


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(child) for child in f.read().split()]


def _sampler(perf_pid: int) -> None:
    """Toggle the CPU sampler of the operator under ``perf`` (its only child)."""
    for child in _children(perf_pid):
        os.kill(child, 10)  # SIGUSR1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--root", type=Path, action="append",
                        help="a source tree to measure (repeatable; default: this one)")
    parser.add_argument("--profile", type=Path,
                        help="also sample the operator's stacks per ms of CPU into DIR")
    parser.add_argument("--py-spy", type=Path,
                        help="with --profile: sample with this py-spy (native frames too) "
                             "instead of the in-process sampler; `--py-spy perf`: perf "
                             "record of user-space instructions")
    parser.add_argument("--py-spy-rate", type=int, default=250,
                        help="with --py-spy: samples a second")
    parser.add_argument("--calls", action="store_true",
                        help="with --profile: count calls with cProfile (bench/call_counts.py)"
                             " instead of sampling")
    args = parser.parse_args()
    roots = args.root or [ROOT]
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    print(f"load {os.getloadavg()[0]:.1f}, bare interpreter "
          f"{bare_interpreter_s() * 1000:.0f} ms")
    results: dict[Path, list[dict[str, float]]] = {root: [] for root in roots}
    for run in range(args.runs):
        for i, root in enumerate(roots):
            result = asyncio.run(run_one(root, args.n, args.profile, f"tree{i}-{run}",
                                         args.py_spy, args.calls, args.py_spy_rate))
            results[root].append(result)
            print(f"{root}: run {run}: {result['instructions_per_event'] / 1e6:.3f} M "
                  f"instructions (kernel "
                  f"{result['kernel_instructions_per_event'] / 1e6:.3f} M), "
                  f"{result['cpu_ms_per_event']:.3f} ms CPU per event "
                  f"({result['seconds']:.1f} s)", flush=True)
    print(f"load {os.getloadavg()[0]:.1f}, bare interpreter "
          f"{bare_interpreter_s() * 1000:.0f} ms")
    first = statistics.median(r["instructions_per_event"] for r in results[roots[0]])
    for root in roots:
        ins = [r["instructions_per_event"] for r in results[root]]
        cpu = [r["cpu_ms_per_event"] for r in results[root]]
        kernel = [r["kernel_instructions_per_event"] for r in results[root]]
        print(f"{root}: median {statistics.median(ins) / 1e6:.3f} M instructions "
              f"({min(ins) / 1e6:.3f}-{max(ins) / 1e6:.3f}; "
              f"{statistics.median(ins) / first:.3f}x the first tree; kernel "
              f"{statistics.median(kernel) / 1e6:.3f} M), "
              f"{statistics.median(cpu):.3f} ms CPU per event")


if __name__ == "__main__":
    main()
