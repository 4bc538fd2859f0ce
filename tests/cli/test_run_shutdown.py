"""``setpoint run`` stops within its grace period on SIGTERM in every state, even when the
API server no longer answers: the lease release is bounded as client-go bounds it
(leaderelection.go ``release``: a context with ``RenewDeadline``), and every later shutdown
step gets only what is left of ``graceful_shutdown_timeout`` (controller-runtime's
``GracefulShutdownTimeout`` bounds the whole stop)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from setpoint.client import Client, Kind
from setpoint.testing import SetpointCluster
from setpoint.testing.plugin import Waiter

ROOT = Path(__file__).resolve().parents[2]
LEASE = Kind("coordination.k8s.io/v1", "Lease")
# far beyond the target's 5 s grace period and 3 s renew deadline, far below what an
# unbounded release through a silent API takes (the client's 30 s timeout, retried)
EXIT_BOUND = 45.0


class Relay:
    """A loopback TCP relay to the API server that can go silent: it then accepts
    connections and swallows bytes, answering nothing (TLS passes through untouched)."""

    def __init__(self, host: str, port: int, *, silent: bool = False) -> None:
        self.target = (host, port)
        self.silent = silent
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.connected = asyncio.Event()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        self.connected.set()
        if self.silent:
            await self._pipe(reader, None)
            return
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        self._writers.add(up_writer)
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer),
                             return_exceptions=True)

    async def _pipe(self, reader: asyncio.StreamReader,
                    writer: asyncio.StreamWriter | None) -> None:
        while data := await reader.read(65536):
            if writer is None or self.silent:
                continue  # swallowed: the server no longer answers
            writer.write(data)
            await writer.drain()


@contextlib.asynccontextmanager
async def relayed(cluster: SetpointCluster, kubeconfig: Path, *,
                  silent: bool = False) -> AsyncIterator[Relay]:
    """A kubeconfig at ``kubeconfig`` that reaches ``cluster`` through a relay."""
    config = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    server = urlsplit(config["clusters"][0]["cluster"]["server"])
    relay = Relay(server.hostname or "127.0.0.1", server.port or 443, silent=silent)
    await relay.start()
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{relay.port}"
    fd = os.open(kubeconfig, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(yaml.safe_dump(config))
    try:
        yield relay
    finally:
        await relay.stop()


async def run_target(kubeconfig: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "setpoint.cli.main", "run", "tests.cli.leader_target:manager",
        "--kubeconfig", str(kubeconfig), "--namespace", "default",
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)


async def terminate(proc: asyncio.subprocess.Process) -> str:
    """SIGTERM, then wait (boundedly) for the process to exit; its output."""
    proc.send_signal(signal.SIGTERM)
    try:
        output, _ = await asyncio.wait_for(proc.communicate(), EXIT_BOUND)
    except TimeoutError:
        proc.kill()
        output, _ = await proc.communicate()
        raise AssertionError(f"still running {EXIT_BOUND}s after SIGTERM:\n"
                             f"{output.decode()}") from None
    return output.decode()


async def test_a_leader_stops_on_sigterm_when_the_api_stops_answering(
        setpoint_cluster: SetpointCluster, k8s: Client, wait_for: Waiter,
        tmp_path: Path) -> None:
    async with relayed(setpoint_cluster, tmp_path / "kubeconfig") as relay:
        proc = await run_target(tmp_path / "kubeconfig")
        try:
            await wait_for(LEASE, "leader-target-leader",
                           lambda lease: lease["spec"].get("holderIdentity"), timeout=60)
        except BaseException:
            proc.kill()
            raise
        relay.silent = True
        output = await terminate(proc)
    assert proc.returncode == 0, output
    # the release is bounded by the elector's renew deadline or, when the earlier steps
    # used up the shutdown's budget (a loaded machine), by the manager's step deadline
    bounded = ("lease_release_timeout" in output
               or "manager_shutdown_step_abandoned step='release the lease'" in output)
    assert bounded and "manager_stopped" in output, output


async def test_an_operator_stops_on_sigterm_while_the_api_never_answered(
        setpoint_cluster: SetpointCluster, tmp_path: Path) -> None:
    async with relayed(setpoint_cluster, tmp_path / "kubeconfig", silent=True) as relay:
        proc = await run_target(tmp_path / "kubeconfig")
        await asyncio.wait_for(relay.connected.wait(), 60)
        output = await terminate(proc)
    assert proc.returncode == 0, output
    assert "manager_stopped" in output, output
