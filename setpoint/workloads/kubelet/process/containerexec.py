"""Commands run in a running container (CRI's ``Exec`` and ``ExecSync``): started in the
container's environment, mounts and working directory, the way ``kubectl exec`` and exec
probes and hooks need them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from typing import Any

from setpoint.workloads.kubelet.process import spawn
from setpoint.workloads.kubelet.process.catalog import ImageCatalog
from setpoint.workloads.kubelet.process.sandbox import ProcessContainer
from setpoint.workloads.kubelet.process.shim import STOP_CONTAINER


async def exec_in_container(container: ProcessContainer, catalog: ImageCatalog,
                            isolate: bool, command: list[str], tty: int | None = None,
                            **kwargs: Any) -> asyncio.subprocess.Process:
    """Start ``command`` in the running ``container`` (see :meth:`.ProcessRuntime.
    exec_process`); with ``isolate``, in its mount namespace."""
    assert container.proc is not None
    entry = catalog.lookup(container.config.image)
    argv = command
    if entry is not None and command and shutil.which(command[0],
                                                      path=container.env["PATH"]) is None:
        argv = [shutil.which("busybox") or command[0], *command] if shutil.which(
            "busybox") else command
    join = container.proc.pid if isolate else None
    # the command's own shim ends it, and all it started, when the container's shim ends
    # (a pidfd: the container's pid could pass to another process meanwhile)
    pidfd = os.pidfd_open(container.proc.pid)
    try:
        return await spawn.start_container_process(
            argv, spawn.preexec([], False, join_namespace_of=join, cwd=container.cwd,
                                tty=tty, death_signal=STOP_CONTAINER),
            container_pidfd=pidfd, env=container.env, cwd=container.cwd, **kwargs)
    finally:
        os.close(pidfd)


async def exec_result(proc: asyncio.subprocess.Process, timeout: float) -> tuple[int, bytes]:
    """Wait up to ``timeout`` for an exec'd command: (exit code, combined output); its
    process group is killed if it runs longer, and TimeoutError raised."""
    try:
        async with asyncio.timeout(timeout):
            out, _ = await proc.communicate()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        raise  # the caller words it (a probe: ``command "..." timed out``)
    code = proc.returncode if proc.returncode is not None else 1
    return (128 - code if code < 0 else code), out
