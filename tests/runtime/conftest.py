"""Fixtures for runtime tests: an embedded cluster, a client to it, the Widget CRD."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from setpoint.client import Client, Kind, RequestRecord, load_kubeconfig
from setpoint.cluster import RunningCluster, serve
from setpoint.runtime import Manager, ManagerSettings
from tests.waiting import wait_for

WIDGET = Kind("bench.setpoint.dev/v1", "Widget")
CONFIGMAP = Kind("v1", "ConfigMap")

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.bench.setpoint.dev"},
    "spec": {
        "group": "bench.setpoint.dev", "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                  "listKind": "WidgetList"},
        "versions": [{
            "name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "size": {"type": "integer", "minimum": 1},
                    "message": {"type": "string"}}},
                "status": {"type": "object", "properties": {
                    "ready": {"type": "boolean"},
                    "observedGeneration": {"type": "integer"},
                    "conditions": {"type": "array", "items": {
                        "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}},
            }}},
        }],
    },
}


def widget(name: str, message: str = "hello", size: int = 1,
           namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": "bench.setpoint.dev/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"size": size, "message": message}}


@pytest.fixture
async def cluster() -> AsyncIterator[RunningCluster]:
    async with serve() as running:
        yield running


@pytest.fixture
async def client(cluster: RunningCluster) -> AsyncIterator[Client]:
    async with Client(load_kubeconfig(cluster.kubeconfig)) as c:
        yield c


@pytest.fixture
async def widgets_crd(client: Client) -> None:
    await client.create(WIDGET_CRD)

    async def served() -> bool:
        try:
            await client.list(WIDGET, namespace="default")
        except Exception:
            client.discovery.invalidate()
            return False
        return True

    await wait_for(served)


class RequestLog:
    """The requests a manager's client made (its ``on_request`` hook)."""

    def __init__(self) -> None:
        self.records: list[RequestRecord] = []

    def __call__(self, record: RequestRecord) -> None:
        self.records.append(record)

    def writes(self) -> list[RequestRecord]:
        return [r for r in self.records if r.method in ("POST", "PUT", "PATCH", "DELETE")]

    def non_watch(self) -> list[RequestRecord]:
        return [r for r in self.records if "watch" not in r.path]


def make_manager(cluster: RunningCluster, controllers: list[Any],
                 requests: RequestLog | None = None, **settings: Any) -> Manager:
    settings.setdefault("graceful_shutdown_timeout", 5.0)
    manager = Manager(controllers, settings=ManagerSettings(**settings),
                      config=load_kubeconfig(cluster.kubeconfig))
    if requests is not None:
        manager.client.transport.on_request = requests  # the manager adds its metrics hook
    return manager
