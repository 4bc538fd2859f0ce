"""One embedded server per test module, for modules whose tests each write objects of their own
names: ``kube`` for the table-driven validation tests of built-in kinds, reached over HTTPS
with the credentials of the kubeconfig it wrote (read by the official ``kubernetes`` client's
loader); ``module_api`` for the asynchronous tests of the generic machinery (the server in
the module's event loop, reached through the ``API`` helper)."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Iterator

import aiohttp
import httpx
import pytest
import pytest_asyncio
from kubernetes import client, config

from setpoint.cluster import serve
from setpoint.testing import ThreadedCluster
from tests.cluster.conftest import API
from tests.cluster.fidelity.builtin_server import Kube


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
