"""One embedded server per test module, for modules whose tests each write objects of their own
names: ``kube`` for the table-driven validation tests of built-in kinds, reached over HTTPS
with the credentials of the kubeconfig it wrote (read by the official ``kubernetes`` client's
loader); ``module_api`` for the asynchronous tests of the generic machinery (the server in
the module's event loop, reached through the ``API`` helper), with ``module_kubectl``, real
kubectl against that server."""

from __future__ import annotations

import asyncio
import os
import ssl
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
import pytest_asyncio
from kubernetes import client, config

from setpoint.cluster import serve
from setpoint.testing import ThreadedCluster
from tests.cluster.conftest import API
from tests.cluster.fidelity.builtin_server import Kube
from tests.conftest import kubectl_path

Kubectl = Callable[..., Awaitable[tuple[int | None, str, str]]]


@pytest.fixture(scope="module")
def kube() -> Iterator[Kube]:
    shared = ThreadedCluster().start()
    try:
        configuration = client.Configuration()
        config.load_kube_config(config_file=str(shared.kubeconfig),
                                client_configuration=configuration)
        token = str(configuration.auth_settings()["BearerToken"]["value"])
        verify = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
        with httpx.Client(base_url=configuration.host, verify=verify,
                          headers={"Authorization": token}, timeout=30) as http:
            yield Kube(http)
    finally:
        shared.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def module_api() -> AsyncIterator[API]:
    async with serve() as running:
        headers = {"Authorization": f"Bearer {running.token}",
                   "User-Agent": "setpoint-tests/1.0"}
        async with aiohttp.ClientSession(headers=headers) as session:
            yield API(running, session)


@pytest.fixture
def module_kubectl(module_api: API, tmp_path: Path) -> Kubectl:
    """kubectl in the default namespace of ``module_api``'s server, with the kubeconfig the
    server wrote and a cache and home of this test's own: ``await module_kubectl(*args)`` is
    (exit code, stdout, stderr)."""
    base = [kubectl_path(), "--kubeconfig", str(module_api.cluster.kubeconfig),
            "--cache-dir", str(tmp_path / f"cache-{uuid.uuid4().hex[:8]}"), "-n", "default"]

    async def kubectl(*args: str) -> tuple[int | None, str, str]:
        proc = await asyncio.create_subprocess_exec(
            *base, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)})
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        return proc.returncode, out.decode(), err.decode()

    return kubectl


def item_names(out: dict[str, Any]) -> list[str]:
    """The sorted names of a list's items."""
    return sorted(item["metadata"]["name"] for item in out["items"])


async def names_selected(api: API, path: str, selector: str) -> tuple[int, list[str]]:
    """A LIST of ``path`` with ``fieldSelector=selector`` (already URL-encoded): its status
    and the sorted names of its items."""
    status, out = await api.get(f"{path}?fieldSelector={selector}")
    return status, item_names(out)
