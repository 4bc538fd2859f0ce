"""A write the database refuses (a full disk) is not applied: not served, not watched, no
revision spent, and answered as kube-apiserver answers a storage error.

kube-apiserver passes a backend error that is no ``storage.StorageError`` through
``storage/errors/storage.go`` (Interpret*Error) unchanged, and
``endpoints/handlers/responsewriters/status.go`` (``convertStorageErrorOrNot``) answers it
500, status Failure, reason Unknown (omitted), the error's text as message; etcd writes
are applied to the watch cache only once etcd has committed them.

Without root the disk fills through SQLite's ``max_page_count`` (the same SQLITE_FULL, with
the same automatic rollback, as a full filesystem); as root a real 16 MB tmpfs is the data
dir (a fresh one, its write-ahead log included, takes over 4 MB with the bootstrap policy).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from setpoint.cluster import RunningCluster, serve
from setpoint.testing.waiting import wait_for
from tests.cluster.conftest import API

BIG = "x" * 400_000  # more pages than the database has spare


def cm(name: str, data: str = "v") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"}, "data": {"k": data}}


CMS = "/api/v1/namespaces/default/configmaps"


@contextlib.asynccontextmanager
async def started(data: Path) -> AsyncIterator[tuple[RunningCluster, API]]:
    """A server on ``data`` whose in-process controllers are done writing (the namespace
    ``default``'s service account and root CA), so revisions move only with the test."""
    async with serve(data) as running:
        headers = {"Authorization": f"Bearer {running.token}"}
        async with aiohttp.ClientSession(headers=headers) as session:
            api = API(running, session)

            async def settled() -> bool:
                return ((await api.get(f"{CMS}/kube-root-ca.crt"))[0] == 200 and (await api.get(
                    "/api/v1/namespaces/default/serviceaccounts/default"))[0] == 200)

            await wait_for(settled, timeout=30)
            yield running, api


def database(running: RunningCluster) -> sqlite3.Connection:
    """The server's own connection (``max_page_count`` is a per-connection limit)."""
    return running.api.store._backend._db  # type: ignore[union-attr]


def fill_database(db: sqlite3.Connection) -> None:
    """No page more: the next write that needs one fails with SQLITE_FULL. A trigger makes
    deletes need pages too (they otherwise free them)."""
    db.execute("CREATE TABLE IF NOT EXISTS filler (data BLOB)")
    db.execute("CREATE TRIGGER IF NOT EXISTS grow AFTER DELETE ON objects "
               "BEGIN INSERT INTO filler VALUES (zeroblob(400000)); END")
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages}")


def make_room(db: sqlite3.Connection) -> None:
    db.execute("DROP TRIGGER grow")
    db.execute("PRAGMA max_page_count = 1000000")


async def watch_lines(api: API, path: str) -> aiohttp.ClientResponse:
    resp = await api.session.get(api.cluster.url + path, ssl=api.ssl)
    assert resp.status == 200
    return resp


async def next_event(resp: aiohttp.ClientResponse) -> dict[str, Any]:
    line = await asyncio.wait_for(resp.content.readline(), timeout=30)
    return orjson.loads(line)  # type: ignore[no-any-return]


def assert_storage_error(status: int, body: Any) -> None:
    assert status == 500, body
    assert body["kind"] == "Status" and body["status"] == "Failure" and body["code"] == 500
    assert "reason" not in body  # StatusReasonUnknown, as convertStorageErrorOrNot answers
    assert body["message"].startswith("storage: ")
    assert "database or disk is full" in body["message"]
    assert "cannot rollback" not in body["message"]  # the first error, not a second one


async def test_writes_the_database_refuses_are_neither_served_nor_watched_nor_numbered(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with started(data) as (running, api):
        status, kept = await api.post(CMS, cm("kept"))
        assert status == 201
        before = int(kept["metadata"]["resourceVersion"])
        watch = await watch_lines(api, f"{CMS}?watch=1&resourceVersion={before}")
        db = database(running)
        fill_database(db)

        assert_storage_error(*await api.post(CMS, cm("refused", BIG)))
        assert (await api.get(f"{CMS}/refused"))[0] == 404
        status, listed = await api.get(CMS)
        assert [o["metadata"]["name"] for o in listed["items"]] == ["kept", "kube-root-ca.crt"]
        assert listed["metadata"]["resourceVersion"] == str(before)

        assert_storage_error(*await api.delete(f"{CMS}/kept"))
        status, still = await api.get(f"{CMS}/kept")
        assert status == 200 and still["metadata"]["resourceVersion"] == str(before)

        make_room(db)
        status, after = await api.post(CMS, cm("after"))
        assert status == 201
        # the first event the watch sees is the first write that was committed
        event = await next_event(watch)
        assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "after")
        assert after["metadata"]["resourceVersion"] == str(before + 1)
        watch.close()
        served = int(after["metadata"]["resourceVersion"])

    async with started(data) as (running, api):
        assert (await api.get(f"{CMS}/refused"))[0] == 404
        assert (await api.get(f"{CMS}/kept"))[0] == 200
        status, newer = await api.post(CMS, cm("newer"))
        assert int(newer["metadata"]["resourceVersion"]) > served  # no revision handed out twice


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)],
                          capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


async def test_a_full_tmpfs_refuses_the_write_and_the_server_keeps_serving(
        small_tmpfs: Path) -> None:
    data = small_tmpfs / "data"
    ballast = small_tmpfs / "ballast"
    async with started(data) as (_running, api):
        status, kept = await api.post(CMS, cm("kept"))
        assert status == 201
        # ENOSPC: the disk is full. Unbuffered: a short last write leaves nothing for close()
        # to flush (and fail on) outside the suppress
        with ballast.open("wb", buffering=0) as f, contextlib.suppress(OSError):
            while True:
                f.write(b"\0" * 65536)
        status, body = await api.post(CMS, cm("refused", BIG))
        assert_storage_error(status, body)
        assert (await api.get(f"{CMS}/refused"))[0] == 404
        status, listed = await api.get(CMS)
        assert [o["metadata"]["name"] for o in listed["items"]] == ["kept", "kube-root-ca.crt"]
        assert listed["metadata"]["resourceVersion"] == kept["metadata"]["resourceVersion"]
        ballast.unlink()
        status, after = await api.post(CMS, cm("after"))
        assert status == 201
        served = int(after["metadata"]["resourceVersion"])
    async with started(data) as (_running, api):
        assert (await api.get(f"{CMS}/refused"))[0] == 404
        status, newer = await api.post(CMS, cm("newer"))
        assert int(newer["metadata"]["resourceVersion"]) > served
