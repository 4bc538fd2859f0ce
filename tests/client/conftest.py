from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from setpoint.client import Client, RequestRecord, RetryPolicy
from tests.client.fakeapi import FakeApi
from tests.client.pki import Pki, make_pki


@pytest.fixture(scope="session")
def pki() -> Pki:
    return make_pki()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def write_kubeconfig(
    path: Path, server: str, user: dict[str, Any], cluster: dict[str, Any] | None = None,
    namespace: str = "team-a",
) -> Path:
    doc = {
        "apiVersion": "v1", "kind": "Config", "current-context": "test",
        "clusters": [{"name": "fake", "cluster": {"server": server, **(cluster or {})}}],
        "users": [{"name": "me", "user": user}],
        "contexts": [{"name": "test",
                      "context": {"cluster": "fake", "user": "me", "namespace": namespace}}],
    }
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()


@pytest.fixture
async def server(api: FakeApi, pki: Pki, tmp_path: Path) -> AsyncIterator[str]:
    async with api.serve(pki.server_context(tmp_path)) as url:
        yield url


@pytest.fixture
def kubeconfig(server: str, pki: Pki, tmp_path: Path) -> Path:
    return write_kubeconfig(
        tmp_path / "kubeconfig", server, {"token": "s3cret"},
        {"certificate-authority-data": b64(pki.ca.cert_pem)},
    )


class Recorder:
    """Collects the client's request records and backoff waits."""

    def __init__(self) -> None:
        self.records: list[RequestRecord] = []
        self.waits: list[float] = []

    def __call__(self, record: RequestRecord) -> None:
        self.records.append(record)

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
async def client(kubeconfig: Path, recorder: Recorder) -> AsyncIterator[Client]:
    async with Client.from_kubeconfig(
        kubeconfig, on_request=recorder, retry=RetryPolicy(max_retries=3),
    ) as c:
        c.transport.sleep = recorder.sleep
        yield c
