"""``cluster up``'s side of the workloads: a child process, or a task of its own loop.

The child (``setpoint.workloads.supervised``) is spawned first thing, as soon as the command
line is parsed and before this process imports its event loop or the server
(:mod:`setpoint.cli.spawn`), so that it imports the SDK and the simulation on the other core
while this process starts the API server: the child's start is the critical path of
``cluster up`` (docs/benchmarks.md, Start-up). It never outlives this process: its stdin is
a pipe from here, and its end of file (closed by :meth:`WorkloadsProcess.stop`, or by the
kernel when this process dies, even by SIGKILL) stops it.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

STOP_TIMEOUT = 30.0
"""How long the workloads get to stop (their controllers finish their reconciles) before
the child is killed."""


class WorkloadsProcess:
    """The workloads in a child process (from :func:`setpoint.cli.spawn.spawn_workloads`),
    talking with the API server over its API; created on the event loop that follows the
    child."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._process = process
        self._served = False
        self.messages: asyncio.Queue[str] = asyncio.Queue()
        self._reader = asyncio.ensure_future(self._read())

    @property
    def pid(self) -> int:
        return self._process.pid

    async def _read(self) -> None:
        """The child's lines into :attr:`messages`; ``exited CODE`` when it ends."""
        assert self._process.stdout is not None
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), self._process.stdout)
        try:
            while line := await reader.readline():
                self.messages.put_nowait(line.decode(errors="replace").strip())
        finally:
            transport.close()
        self.messages.put_nowait(f"exited {await self._exit_code()}")

    async def _exit_code(self) -> int:
        # its stdout ended: the child is ending (a thread waits: portable, and used once)
        return await asyncio.get_running_loop().run_in_executor(None, self._process.wait)

    def serve(self, kubeconfig: Path) -> None:
        """Tell the child where the API server is: it starts the workloads."""
        stdin = self._process.stdin
        assert stdin is not None
        self._served = True
        try:  # one short line: the pipe takes it without blocking
            stdin.write(f"{kubeconfig}\n".encode())
            stdin.flush()
        except BrokenPipeError:
            pass  # the child is gone: its reader reports how it ended

    async def stop(self) -> None:
        """Close the child's stdin (its order to stop) and wait; kill it if it lingers."""
        stdin = self._process.stdin
        if stdin is not None and not stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                stdin.close()
        if not self._served and self._process.poll() is None:
            # stopped before the server served (a signal during the start): the child runs
            # nothing yet, only imports, which it would finish before it read the end of file
            self._process.terminate()
        try:
            await asyncio.wait_for(asyncio.shield(self._exit_code()), STOP_TIMEOUT)
        except TimeoutError:
            self._process.kill()
            await self._exit_code()
        await self._reader


class WorkloadsTask:
    """The workloads on this process's own event loop (``--workloads-in-process``): the same
    program, the same messages, one core."""

    def __init__(self, settings: Any) -> None:
        self._settings = settings
        """A :class:`~setpoint.workloads.settings.WorkloadSettings`."""
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
