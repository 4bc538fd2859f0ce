"""A metrics-server inside the workloads process: ``metrics.k8s.io/v1beta1`` served from
memory as an aggregated API.

On a real cluster metrics-server scrapes the kubelets, keeps the usage in memory and serves
it behind the APIService v1beta1.metrics.k8s.io, which the API server's aggregator proxies
to (kubernetes-sigs/metrics-server). Here the simulated kubelets report their usage into a
:class:`~setpoint.workloads.metricsserver.storage.MetricsStorage`, and :func:`install` adds
to a manager the runnable that serves it and registers it (Service, Endpoints, APIService:
:mod:`~setpoint.workloads.metricsserver.registration`). No usage is written to the API
server.

Only :class:`MetricsStorage` loads with the package (the kubelets write into it from their
start): the server, its authentication (``cryptography``'s x509) and its registration load
when the runnable starts, which ``cluster up``'s workloads do once their nodes are Ready
(:mod:`setpoint.workloads.startorder`): they are not on the start's critical path.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from setpoint.client import ApiError, ClientError, Kind
from setpoint.runtime._objects import object_key
from setpoint.workloads.metricsserver.storage import MetricsStorage
from setpoint.workloads.startorder import after_nodes_ready

if TYPE_CHECKING:
    from setpoint.runtime import Manager
    from setpoint.workloads.metricsserver.server import MetricsServer

__all__ = ["MetricsServer", "MetricsStorage", "install"]

log = logging.getLogger("setpoint.workloads.metricsserver")

POD = Kind("v1", "Pod")
NODE = Kind("v1", "Node")
UNREGISTER_TIMEOUT = 2.0
"""At most this long to take the address out of the Endpoints at stop: when the API server
went away first (the parent of ``cluster up`` killed), nothing is left to tell."""


def _labels(obj: Mapping[str, Any] | None) -> Mapping[str, str] | None:
    """The labels of an object that exists (empty when it has none), else None."""
    if obj is None:
        return None
    return (obj.get("metadata") or {}).get("labels") or {}


def install(manager: Manager, storage: MetricsStorage,
            started: list[MetricsServer] | None = None) -> None:
    """Serve ``storage`` while ``manager`` runs (its pod and node caches are the listers a
    get is checked against); the server started is appended to ``started``."""

    async def serve(m: Manager) -> None:
        from setpoint.workloads.metricsserver.api import MetricsAPI
        from setpoint.workloads.metricsserver.registration import register, unregister
        from setpoint.workloads.metricsserver.server import NAMESPACE, SERVICE, MetricsServer

        pods, nodes = m.cache.store_for(POD), m.cache.store_for(NODE)
        api = MetricsAPI(storage,
                         lambda ns, name: _labels(pods.get(object_key(ns, name))),
                         lambda name: _labels(nodes.get(name)))
        server = MetricsServer(api, m.client)
        port = await server.start()
        if started is not None:
            started.append(server)
        try:
            await register(m.client, SERVICE, NAMESPACE, port, server.ca_pem)
            await server.watch_configuration()
        finally:
            try:
                # bounded: a stop must not hang on an API server that went away first
                async with asyncio.timeout(UNREGISTER_TIMEOUT):
                    await unregister(m.client, SERVICE, NAMESPACE)
            except (ApiError, ClientError, OSError, TimeoutError) as exc:
                log.warning("metrics_server_unregister_failed error=%s", exc)
            with contextlib.suppress(Exception):
                await server.stop()

    manager.add_runnable(after_nodes_ready(serve))


def __getattr__(name: str) -> Any:
    """``MetricsServer``, loaded on first use (PEP 562), as the package exported it."""
    if name == "MetricsServer":
        from setpoint.workloads.metricsserver.server import MetricsServer

        return MetricsServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
