"""Registering the metrics server with the API server, as metrics-server's manifests do
(kubernetes-sigs/metrics-server manifests/base/service.yaml, apiservice.yaml).

A Service kube-system/metrics-server (port 443, targetPort ``https``) without a selector,
since no pod backs it, and its Endpoints naming 127.0.0.1 and the server's port under the
port name ``https`` (the aggregator resolves the Service port to that endpoint port:
kube-aggregator's endpoint routing, k8s.io/apiserver pkg/util/proxy ResolveEndpoint); the
APIService v1beta1.metrics.k8s.io pointing at the Service with the server's CA as
``caBundle``. All three are written on every start: a workloads process that stopped
without cleaning up (killed) left Endpoints naming a port nobody listens on and a CA
nobody has. At stop only the Endpoints lose their address, as when metrics-server's pod
goes away: the Service and APIService stay, and the aggregator reports the APIService
unavailable until the next start.

The CustomResourceDefinitions that served the group before (pods.metrics.k8s.io,
nodes.metrics.k8s.io) are deleted: they would shadow nothing once the aggregator serves
the group, but they hold stale objects. While they served it, the API server kept a local
APIService v1beta1.metrics.k8s.io for them, labelled
``kube-aggregator.kubernetes.io/automanaged: "true"`` (crdregistration): the label is taken
off before the APIService is written, else the API server deletes it once the CRDs are
gone (autoregister deletes an automanaged APIService nothing asks for any more).
"""

from __future__ import annotations

import base64
import contextlib
import logging
from typing import Any

from setpoint.client import Client, Kind, NotFoundError

__all__ = ["APISERVICE", "FIELD_MANAGER", "LEGACY_CRDS", "register", "unregister"]

log = logging.getLogger("setpoint.workloads.metricsserver")

SERVICE_KIND = Kind("v1", "Service")
ENDPOINTS = Kind("v1", "Endpoints")
APISERVICE_KIND = Kind("apiregistration.k8s.io/v1", "APIService")
CRD = Kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
APISERVICE = "v1beta1.metrics.k8s.io"
LEGACY_CRDS = ("pods.metrics.k8s.io", "nodes.metrics.k8s.io")
FIELD_MANAGER = "metrics-server"
AUTOMANAGED_LABEL = "kube-aggregator.kubernetes.io/automanaged"
PORT_NAME = "https"
LABELS = {"k8s-app": "metrics-server"}


def service(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": namespace, "labels": LABELS},
            "spec": {"ports": [{"name": PORT_NAME, "port": 443, "protocol": "TCP",
                                "targetPort": PORT_NAME, "appProtocol": "https"}]}}


def endpoints(name: str, namespace: str, port: int | None) -> dict[str, Any]:
    subsets = ([{"addresses": [{"ip": "127.0.0.1"}],
                 "ports": [{"name": PORT_NAME, "port": port, "protocol": "TCP",
                            "appProtocol": "https"}]}]
               if port is not None else [])
    return {"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": name, "namespace": namespace, "labels": LABELS},
            "subsets": subsets}


def apiservice(name: str, namespace: str, ca_pem: bytes) -> dict[str, Any]:
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": APISERVICE, "labels": LABELS},
            "spec": {"service": {"name": name, "namespace": namespace, "port": 443},
                     "group": "metrics.k8s.io", "version": "v1beta1",
                     "caBundle": base64.b64encode(ca_pem).decode(),
                     "groupPriorityMinimum": 100, "versionPriority": 100}}


async def register(client: Client, name: str, namespace: str, port: int,
                   ca_pem: bytes) -> None:
    """Write the Service, its Endpoints and the APIService; delete the legacy CRDs."""
    legacy = False
    for crd in LEGACY_CRDS:
        with contextlib.suppress(NotFoundError):
            await client.delete(CRD, crd)
            legacy = True
            log.info("metrics_server_deleted_legacy_crd name=%s", crd)
    if legacy:
        await _disown_legacy_apiservice(client)
    await client.apply(service(name, namespace), field_manager=FIELD_MANAGER, force=True)
    await client.apply(endpoints(name, namespace, port), field_manager=FIELD_MANAGER,
                       force=True)
    await client.apply(apiservice(name, namespace, ca_pem), field_manager=FIELD_MANAGER,
                       force=True)


async def _disown_legacy_apiservice(client: Client) -> None:
    """The APIService the API server kept for the legacy CRDs, made ours to keep."""
    try:
        current = await client.get(APISERVICE_KIND, APISERVICE)
    except NotFoundError:
        return
    if AUTOMANAGED_LABEL not in ((current.get("metadata") or {}).get("labels") or {}):
        return
    with contextlib.suppress(NotFoundError):  # the API server may have deleted it already
        await client.patch(APISERVICE_KIND, APISERVICE,
                           {"metadata": {"labels": {AUTOMANAGED_LABEL: None}}},
                           field_manager=FIELD_MANAGER)


async def unregister(client: Client, name: str, namespace: str) -> None:
    """Take the stopped server's address out of the Endpoints."""
    with contextlib.suppress(NotFoundError):
        await client.apply(endpoints(name, namespace, None), field_manager=FIELD_MANAGER,
                           force=True)
