"""Fixtures for server tests: a fresh in-process cluster and an HTTP session to it, and a
webhook server (``hooks``) for the admission tests."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from setpoint.cluster import RunningCluster, serve
from tests.hookserver import Hooks


class API:
    """A thin HTTP helper: JSON in, (status, JSON or text) out."""

    def __init__(self, cluster: RunningCluster, session: aiohttp.ClientSession) -> None:
        self.cluster = cluster
        self.session = session
        self.ssl = ssl.create_default_context(cafile=str(cluster.ca_file))

    async def request(self, method: str, path: str, body: Any = None, *,
                      content_type: str = "application/json", raw: bytes | None = None,
                      headers: dict[str, str] | None = None) -> tuple[int, Any]:
        hdrs = {"Content-Type": content_type, **(headers or {})}
        data = raw
        if data is None and body is not None:
            import orjson

            data = orjson.dumps(body)
        async with self.session.request(method, self.cluster.url + path, data=data,
                                        headers=hdrs, ssl=self.ssl) as resp:
            text = await resp.text()
            if resp.content_type.startswith("application/json"):
                import orjson

                return resp.status, orjson.loads(text) if text else None
            return resp.status, text

    async def get(self, path: str, **kw: Any) -> tuple[int, Any]:
        return await self.request("GET", path, **kw)

    async def post(self, path: str, body: Any, **kw: Any) -> tuple[int, Any]:
        return await self.request("POST", path, body, **kw)

    async def put(self, path: str, body: Any, **kw: Any) -> tuple[int, Any]:
        return await self.request("PUT", path, body, **kw)

    async def patch(self, path: str, body: Any, content_type: str, **kw: Any) -> tuple[int, Any]:
        return await self.request("PATCH", path, body, content_type=content_type, **kw)

    async def delete(self, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
        return await self.request("DELETE", path, body, **kw)


@pytest.fixture
async def cluster() -> AsyncIterator[RunningCluster]:
    async with serve() as running:
        yield running


@pytest.fixture
async def api(cluster: RunningCluster) -> AsyncIterator[API]:
    headers = {"Authorization": f"Bearer {cluster.token}", "User-Agent": "setpoint-tests/1.0"}
    async with aiohttp.ClientSession(headers=headers) as session:
        yield API(cluster, session)


@pytest.fixture
async def hooks(tmp_path: Path) -> AsyncIterator[Hooks]:
    """A webhook server on loopback, with no paths until the test adds them."""
    server = Hooks(tmp_path)
    await server.start()
    yield server
    await server.stop()
