"""One embedded server per test module for the table-driven validation tests of built-in
kinds, reached over HTTPS with the credentials of the kubeconfig it wrote (read by the
official ``kubernetes`` client's loader)."""

from __future__ import annotations

import ssl
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from kubernetes import client, config

from setpoint.testing import ThreadedCluster

MERGE = "application/merge-patch+json"


class Kube:
    """JSON in, (status, JSON) out, against the module's server."""

    def __init__(self, http: httpx.Client) -> None:
        self.http = http

    def call(self, method: str, path: str, body: Any = None,
             content_type: str = "application/json") -> tuple[int, Any]:
        resp = self.http.request(method, path, json=body,
                                 headers={"Content-Type": content_type})
        return resp.status_code, resp.json()

    def reject(self, method: str, path: str, body: Any,
               content_type: str = "application/json") -> Counter[tuple[str, str]]:
        """The (field, reason) causes of a 422 Invalid answer, as a multiset (the
        conformance corpus compares them so)."""
        status, answer = self.call(method, path, body, content_type)
        assert (status, answer.get("reason")) == (422, "Invalid"), answer
        return Counter((c["field"], c["reason"]) for c in answer["details"]["causes"])

    def messages(self, method: str, path: str, body: Any,
                 content_type: str = "application/json") -> dict[str, list[str]]:
        status, answer = self.call(method, path, body, content_type)
        assert status == 422, answer
        out: dict[str, list[str]] = {}
        for c in answer["details"]["causes"]:
            out.setdefault(c["field"], []).append(c["message"])
        return out


@pytest.fixture(scope="module")
def kube() -> Iterator[Kube]:
    shared = ThreadedCluster().start()
    try:
        configuration = client.Configuration()
        config.load_kube_config(config_file=str(shared.kubeconfig),
                                client_configuration=configuration)
        token = configuration.auth_settings()["BearerToken"]["value"]
        verify = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
        with httpx.Client(base_url=configuration.host, verify=verify,
                          headers={"Authorization": token}, timeout=30) as http:
            yield Kube(http)
    finally:
        shared.stop()
