"""Run the whole test suite again and again to find the tests that fail by chance.

    .venv/bin/python tools/hunt_flaky.py --runs 10            # what `make hunt` runs
    .venv/bin/python tools/hunt_flaky.py --runs 3 -- tests/workloads

Every other run (the 2nd, 4th, ...) is a "busy" run: a second process keeps every core
loaded, as on a busy CI machine, and the tests run in a random order (modules shuffled
and the tests inside each module, by pytest-random-order; the seed is printed and kept,
so an order that failed can be run again with ``--random-order-seed``). The other runs
use the file order on a quiet machine. Each run writes a JUnit report to the output
directory; the summary lists every test that failed in any run with the runs it failed
in. The exit status is 1 when any run failed.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import random
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _spin() -> None:
    while True:
        pass


@contextlib.contextmanager
def loaded_cores(busy: bool) -> Iterator[None]:
    """Keep every core busy (one spinning process a core) while the block runs."""
    if not busy:
        yield
        return
    spinners = [multiprocessing.Process(target=_spin, daemon=True)
                for _ in range(os.cpu_count() or 2)]
    for spinner in spinners:
        spinner.start()
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.join()


def failures_in(report: Path) -> list[str]:
    """The node ids of the tests a JUnit report records as failed or errored."""
    if not report.exists():
        return ["<no report: pytest did not finish>"]
    failed = []
    for case in ElementTree.parse(report).iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(f"{case.get('classname')}::{case.get('name')}")
    return failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "hunt")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    failed_in: dict[str, list[int]] = defaultdict(list)
    for run in range(1, args.runs + 1):
        busy = run % 2 == 0
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   f"--junitxml={args.out / f'run-{run}.xml'}", *args.pytest_args]
        what = "quiet machine, file order"
        if busy:
            seed = random.randrange(2**31)
            command += ["--random-order", "--random-order-bucket=module",
                        f"--random-order-seed={seed}"]
            what = f"cores loaded, random order (seed {seed})"
        print(f"run {run}/{args.runs}: {what}", flush=True)
        started = time.monotonic()
        with loaded_cores(busy), open(args.out / f"run-{run}.log", "w") as log:
            code = subprocess.call(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        failed = failures_in(args.out / f"run-{run}.xml") if code else []
        if code and not failed:
            failed = [f"<pytest exited {code} with no failed test: see the log>"]
        for test in failed:
            failed_in[test].append(run)
        print(f"  exit {code} in {time.monotonic() - started:.0f} s; "
              f"{len(failed)} failed; log {args.out / f'run-{run}.log'}", flush=True)
    if not failed_in:
        print(f"all {args.runs} runs passed")
        return 0
    print("failed:")
    for test, runs in sorted(failed_in.items()):
        print(f"  {test}  (runs {', '.join(map(str, runs))})")
    return 1


if __name__ == "__main__":
    sys.exit(main())
