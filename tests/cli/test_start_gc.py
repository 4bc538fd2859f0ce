"""``cluster up`` and its workloads' process start without the cyclic garbage collector and
run with it.

Both starts are mostly imports, where the collector (run every 700 allocations) has little
to free and took about a tenth of the CPU (issue 12, docs/benchmarks.md, Start-up). What
matters for behaviour is that it runs again afterwards, or a long-running server or
simulation would never free a reference cycle: the server from the moment it serves, the
workloads once their imports are done. Each is run in a fresh interpreter (the CLI in
process with ``click.echo`` observed; the workloads' program with its event loop replaced).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CLUSTER_UP = textwrap.dedent("""
    import gc, json, os, signal, sys
    import click
    from setpoint.cli.main import cli

    seen = []
    echo = click.echo

    def observed(message=None, *args, **kwargs):
        seen.append([str(message).split(" ")[0], gc.isenabled()])
        if str(message).startswith("Press Ctrl+C"):
            os.kill(os.getpid(), signal.SIGINT)
        echo(message, *args, **kwargs)

    click.echo = observed
    cli(["cluster", "up", "--memory", "--port", "0", "--no-workloads",
         "--kubeconfig", sys.argv[1]], standalone_mode=False)
    print(json.dumps({"seen": seen, "after": gc.isenabled()}), file=sys.stderr)
""")

WORKLOADS = textwrap.dedent("""
    import gc, json, runpy, sys
    import uvloop

    def run(main):  # the program's event loop: not needed to see the collector's state
        main.close()
        print(json.dumps([gc.isenabled(), gc.get_threshold()]), file=sys.__stdout__)

    uvloop.run = run
    sys.argv = ["supervised", "{}"]
    runpy.run_module("setpoint.workloads.supervised", run_name="__main__")
""")


def test_cluster_up_collects_garbage_from_the_moment_it_serves(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", CLUSTER_UP, str(tmp_path / "kubeconfig")],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stderr.strip().splitlines()[-1])
    states = dict(result["seen"])
    assert states["setpoint"] is False  # "setpoint cluster serving at ...": still starting
    assert states["ready"] is True
    assert result["after"] is True


def test_the_workloads_program_collects_garbage_once_its_imports_are_done() -> None:
    done = subprocess.run([sys.executable, "-c", WORKLOADS], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0] is True


def test_the_workloads_program_lets_short_lived_objects_die_young() -> None:
    """The workloads' objects live for a request or an event, and at Python's default young
    threshold (700) they reached the oldest generation, whose full collections walk every
    cached pod: 21% of the process's CPU at 10,000 pods (docs/benchmarks.md, Workloads,
    sixth pass). The process runs its collector with a larger young generation."""
    done = subprocess.run([sys.executable, "-c", WORKLOADS], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    enabled, thresholds = json.loads(done.stdout)
    assert enabled is True
    assert thresholds[0] >= 10_000
