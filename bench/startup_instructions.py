"""Instructions (user space, ``perf stat -e instructions:u``) of ``cluster up``'s start, per
source tree: the parent's imports and ``serve()`` to serving, the workloads' process's
imports, and the whole start to nodes Ready in one process (``--workloads-in-process``'s
shape: the server's imports and start, the workloads' imports, then the workloads' start
against it until they say ``nodes-ready``; the process ends there). Unlike wall or CPU
time they do not move with the machine's load (about 0.1 % run to run at load 15), so a
change of a few percent shows.

    .venv/bin/python bench/startup_instructions.py [--runs 3] [--root DIR ...]

Each tree runs from its own bytecode (compiled first, as its ``make`` install does), under
PYTHONDONTWRITEBYTECODE, with the collector off as ``cluster up`` starts; the trees are
interleaved run by run. Needs ``perf`` (linux-tools) and a kernel that lets it count.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import ROOT, summary

PARENT = """
import gc; gc.disable()
import setpoint.cli.main, setpoint.cli.cluster, setpoint.cli.eventloop, setpoint.cli.supervisor
import uvloop
from setpoint.cluster import serve
from setpoint.cluster.authentication import kubeconfig

async def main():
    async with serve(None, port=0):
        pass

uvloop.run(main())
"""

CHILD = """
import gc; gc.disable()
import importlib
from setpoint.workloads.manager import enabled_areas
from setpoint.workloads.supervised import settings_from_json
for name in enabled_areas(settings_from_json("{}")):
    importlib.import_module(name)
"""


WHOLE = """
import gc; gc.disable()
import asyncio, importlib, os
import uvloop
from setpoint.client import Client, load_kubeconfig
from setpoint.cluster import serve
from setpoint.workloads import supervised
from setpoint.workloads.manager import enabled_areas
from setpoint.workloads.settings import WorkloadSettings

settings = WorkloadSettings()
for name in enabled_areas(settings):
    importlib.import_module(name)

def say(line):
    if line.startswith(("nodes-", "error")):
        os._exit(0 if line == "nodes-ready" else 1)  # the count ends at nodes Ready

async def main():
    async with serve(None, port=0) as running:
        gc.freeze(); gc.enable()
        client = Client(load_kubeconfig(running.kubeconfig),
                        field_manager="kube-controller-manager", max_connections=25)
        await supervised.run_with(client, settings, asyncio.Event(), say)

uvloop.run(main())
"""


def instructions(root: Path, program: str) -> int:
    done = subprocess.run(
        ["perf", "stat", "-e", "instructions:u", "-x", ",", sys.executable, "-c", program],
        cwd=root, capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"})
    line = next(x for x in done.stderr.splitlines() if "instructions" in x)
    return int(line.split(",")[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--root", type=Path, action="append", default=[],
                        help="another source tree to count beside this one")
    args = parser.parse_args()
    roots = [ROOT, *args.root]
    for root in roots:
        subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", "setpoint"],
                       cwd=root, check=True)
    results: dict[str, list[float]] = {}
    for _ in range(args.runs):
        for root in roots:
            for name, program in (("parent_serving", PARENT), ("child_imports", CHILD),
                                  ("whole_to_nodes_ready", WHOLE)):
                results.setdefault(f"{root.name}:{name}_Minstr", []).append(
                    instructions(root, program) / 1e6)
    print(json.dumps({k: summary(v) for k, v in results.items()}, indent=2))


if __name__ == "__main__":
    main()
