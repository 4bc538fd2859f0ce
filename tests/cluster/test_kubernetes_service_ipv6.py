"""The ``default/kubernetes`` EndpointSlice of a cluster serving on an IPv6 address.

kube-apiserver's endpoint reconciler (pkg/controlplane/reconcilers/endpointsadapter.go)
writes the slice with the ``addressType`` of the advertise address's family and deletes a
stored slice of the other family (addressType is immutable). ``setpoint cluster up --host ::1``
used to fail to start: it wrote ``::1`` into an ``IPv4`` slice, which validation refused.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import pytest

from setpoint.cluster import serve

pytestmark = pytest.mark.skipif(not socket.has_ipv6, reason="no IPv6 on this host")


def _slice(kubeconfig: Path) -> tuple[str, list[str]]:
    from kubernetes import client, config

    with config.new_client_from_config(config_file=str(kubeconfig)) as api_client:
        got: Any = client.DiscoveryV1Api(api_client).read_namespaced_endpoint_slice(
            "kubernetes", "default")
    return got.address_type, [a for ep in got.endpoints for a in ep.addresses]


async def test_a_cluster_on_ipv6_loopback_publishes_an_ipv6_slice(tmp_path: Path) -> None:
    try:
        probe = socket.socket(socket.AF_INET6)
        probe.bind(("::1", 0))
        probe.close()
    except OSError:
        pytest.skip("::1 cannot be bound here")
    async with serve(tmp_path / "data", host="127.0.0.1") as cluster:
        assert await asyncio.to_thread(_slice, cluster.kubeconfig) == ("IPv4", ["127.0.0.1"])
    # the same state, restarted on ::1: the IPv4 slice is replaced, not refused
    async with serve(tmp_path / "data", host="::1") as cluster:
        assert await asyncio.to_thread(_slice, cluster.kubeconfig) == ("IPv6", ["::1"])
