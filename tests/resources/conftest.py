"""Fixtures for typed-resource tests: an in-process cluster and a small JSON HTTP helper."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest

from setpoint.cluster import RunningCluster, serve
from tests.waiting import wait_for


class API:
    """JSON in, (status, JSON) out, against one running cluster."""

    def __init__(self, cluster: RunningCluster, session: aiohttp.ClientSession) -> None:
        self.cluster = cluster
        self.session = session
        self.ssl = ssl.create_default_context(cafile=str(cluster.ca_file))

    async def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = orjson.dumps(body) if body is not None else None
        async with self.session.request(method, self.cluster.url + path, data=data,
                                        headers={"Content-Type": "application/json"},
                                        ssl=self.ssl) as resp:
            text = await resp.read()
            return resp.status, orjson.loads(text) if text else None

    async def create(self, path: str, body: Any) -> dict[str, Any]:
        status, out = await self.request("POST", path, body)
        assert status == 201, out
        assert isinstance(out, dict)
        return out

    async def establish(self, crd: dict[str, Any]) -> None:
        """Create a CRD and wait until its resource is served."""
        await self.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        group = crd["spec"]["group"]
        version = next(v["name"] for v in crd["spec"]["versions"] if v["storage"])
        plural = crd["spec"]["names"]["plural"]
        async def served() -> bool:
            status, body = await self.request("GET", f"/apis/{group}/{version}")
            return status == 200 and any(r["name"] == plural for r in body["resources"])

        await wait_for(served)


@pytest.fixture
async def cluster() -> AsyncIterator[RunningCluster]:
    async with serve() as running:
        yield running


@pytest.fixture
async def api(cluster: RunningCluster) -> AsyncIterator[API]:
    headers = {"Authorization": f"Bearer {cluster.token}"}
    async with aiohttp.ClientSession(headers=headers) as session:
        yield API(cluster, session)
