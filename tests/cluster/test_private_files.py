"""Where the cluster keeps Secrets, keys and tokens, only its owner may look: the data
directory is 0700 and every file in it 0600 (the database, its WAL and SHM, the CA and
serving keys, the service-account key, the admin token, the kubeconfig), as etcd keeps its
data dir 0700 (etcd's fileutil.TouchDirAll / CheckDirPermission) and client-go's
clientcmd writes kubeconfigs 0600. The testing kit's secrets go when its process ends.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from setpoint.cluster import serve
from tests.cluster.conftest import API


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """The common 022: files would be world-readable unless created otherwise."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


async def store_a_secret(api: API) -> None:
    status, _ = await api.post("/api/v1/namespaces/default/secrets", {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
        "stringData": {"password": "hunter2"}})
    assert status == 201


async def test_the_data_directory_and_every_file_in_it_are_private(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with serve(data) as running:
        headers = {"Authorization": f"Bearer {running.token}"}
        async with aiohttp.ClientSession(headers=headers) as session:
            await store_a_secret(API(running, session))
        files = {p.name: mode(p) for p in data.iterdir()}
        assert {"state.db", "state.db-wal", "state.db-shm", "token", "sa.key", "serving.key",
                "ca.crt", "kubeconfig"} <= set(files)
        assert mode(data) == 0o700
        assert files == dict.fromkeys(files, 0o600)


async def test_a_data_directory_of_an_older_version_is_made_private(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with serve(data):
        pass
    data.chmod(0o755)
    for path in data.iterdir():
        path.chmod(0o644)
    async with serve(data):
        assert mode(data) == 0o700
        assert {p.name: mode(p) for p in data.iterdir()} == {
            p.name: 0o600 for p in data.iterdir()}


async def test_a_kubeconfig_in_a_new_directory_is_private(tmp_path: Path) -> None:
    config = tmp_path / "new" / "config"
    async with serve(kubeconfig=config):
        assert (mode(config.parent), mode(config)) == (0o700, 0o600)


def test_a_private_file_is_never_readable_by_others(tmp_path: Path) -> None:
    """Even when a temporary file of an interrupted write was left with a wider mode."""
    from setpoint.cluster.storage.privatefiles import write_private

    target = tmp_path / "token"
    leftover = tmp_path / ".token.tmp"
    leftover.write_text("old")
    leftover.chmod(0o644)
    write_private(target, "new")
    assert (target.read_text(), mode(target)) == ("new", 0o600)


def test_the_testing_kits_secrets_are_private_and_go_when_the_run_ends() -> None:
    code = (
        "import asyncio, os, stat\n"
        "from setpoint.testing.clusters import fresh_cluster, _shared_secrets\n"
        "async def main():\n"
        "    async with fresh_cluster():\n"
        "        d = _shared_secrets()\n"
        "        print(d)\n"
        "        print(oct(stat.S_IMODE(d.stat().st_mode)))\n"
        "        print(sorted({oct(stat.S_IMODE(p.stat().st_mode)) for p in d.iterdir()}))\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    directory, dir_mode, file_modes = done.stdout.split("\n")[:3]
    assert Path(directory).name.startswith("setpoint-secrets-")
    assert (dir_mode, file_modes) == ("0o700", "['0o600']")
    assert not Path(directory).exists()
