"""``cluster up``'s side of the workloads: a child process, or a task of its own loop.

The child (``setpoint.workloads.supervised``) is spawned first thing, so that it imports the
SDK and the simulation on the other core while this process starts the API server. It never
outlives this process: its stdin is a pipe from here, and its end of file (closed by
:meth:`WorkloadsProcess.stop`, or by the kernel when this process dies, even by SIGKILL)
stops it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import setpoint

STOP_TIMEOUT = 30.0
"""How long the workloads get to stop (their controllers finish their reconciles) before
the child is killed."""


def _child_environment() -> dict[str, str]:
    """This environment, with this process's ``setpoint`` first on the path: the child runs
    the same code whatever its working directory."""
    root = str(Path(setpoint.__file__).resolve().parent.parent)
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}


class WorkloadsProcess:
    """The workloads in a child process, talking with the API server over its API."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self._process = process
        self.messages: asyncio.Queue[str] = asyncio.Queue()
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def spawn(cls, settings: Any) -> WorkloadsProcess:
        """Start the child with these :class:`~setpoint.workloads.settings.WorkloadSettings`
        (any dataclass with its fields): it imports, then waits for :meth:`serve`."""
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "setpoint.workloads.supervised",
            json.dumps(dataclasses.asdict(settings)),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            env=_child_environment())
        return cls(process)

    @property
    def pid(self) -> int:
        return self._process.pid

    async def _read(self) -> None:
        """The child's lines into :attr:`messages`; ``exited CODE`` when it ends."""
        assert self._process.stdout is not None
        while line := await self._process.stdout.readline():
            self.messages.put_nowait(line.decode(errors="replace").strip())
        self.messages.put_nowait(f"exited {await self._process.wait()}")

    def serve(self, kubeconfig: Path) -> None:
        """Tell the child where the API server is: it starts the workloads."""
        assert self._process.stdin is not None
        self._process.stdin.write(f"{kubeconfig}\n".encode())

    async def stop(self) -> None:
        """Close the child's stdin (its order to stop) and wait; kill it if it lingers."""
        stdin = self._process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()
        try:
            await asyncio.wait_for(asyncio.shield(self._process.wait()), STOP_TIMEOUT)
        except TimeoutError:
            self._process.kill()
            await self._process.wait()
        await self._reader


class WorkloadsTask:
    """The workloads on this process's own event loop (``--workloads-in-process``): the same
    program, the same messages, one core."""

    def __init__(self, settings: Any) -> None:
        self._settings = settings
        self.messages: asyncio.Queue[str] = asyncio.Queue()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def serve(self, kubeconfig: Path) -> None:
        from setpoint.workloads.supervised import run

        say: Callable[[str], None] = self.messages.put_nowait
        self._task = asyncio.ensure_future(run(self._settings, kubeconfig, self._stop, say))

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task
