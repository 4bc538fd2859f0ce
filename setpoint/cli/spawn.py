"""Spawning ``cluster up``'s workloads' process, before anything else.

The child's start (its interpreter and imports, then the manager's start against the
server) is the critical path of ``cluster up`` (docs/benchmarks.md, Start-up): it is spawned
as soon as the command line is parsed, before this process imports asyncio, its event loop
and the server, so this module imports only what a spawn needs.
:class:`setpoint.cli.supervisor.WorkloadsProcess` takes the child over on the event loop.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import setpoint
from setpoint.parentdeath import child_environment


def _child_environment() -> dict[str, str]:
    """This environment, with this process's ``setpoint`` first on the path: the child runs
    the same code whatever its working directory; and the child dies with this process
    (even killed with SIGKILL before the child reads its stdin)."""
    root = str(Path(setpoint.__file__).resolve().parent.parent)
    path = os.environ.get("PYTHONPATH")
    return child_environment({**os.environ,
                              "PYTHONPATH": root + (os.pathsep + path if path else "")})


def spawn_workloads(settings: Mapping[str, Any]) -> subprocess.Popen[bytes]:
    """Start the child now, with these :class:`~setpoint.workloads.settings.WorkloadSettings`
    fields (the others keep their defaults): it imports, then waits for
    :meth:`~setpoint.cli.supervisor.WorkloadsProcess.serve`. Called before any event loop
    runs; the loop then takes it over with ``WorkloadsProcess``."""
    return subprocess.Popen(
        [sys.executable, "-m", "setpoint.workloads.supervised", json.dumps(dict(settings))],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_child_environment(),
        # a process group of its own: a terminal's Ctrl+C (sent to the foreground group)
        # reaches only the parent, which stops the child in order (controllers before the
        # server), instead of a KeyboardInterrupt in the middle of the child's imports
        process_group=0)
