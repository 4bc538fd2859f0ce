"""One embedded server per test module for the table-driven validation tests of built-in
kinds, reached over HTTPS with the credentials of the kubeconfig it wrote (read by the
official ``kubernetes`` client's loader)."""

from __future__ import annotations

import ssl
from collections.abc import Iterator

import httpx
import pytest
from kubernetes import client, config

from setpoint.testing import ThreadedCluster
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
