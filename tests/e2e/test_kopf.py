"""kopf's minimal example operator against the server: kopf watches, handles and patches a
custom resource, as it would on a real cluster."""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import kopf
import pytest
import yaml

from setpoint.cluster import RunningCluster
from setpoint.testing import present
from tests.e2e.conftest import ThreadedCluster, http_client, unique, wait_until

# kopf's examples/crd.yaml (apiextensions.k8s.io/v1 edition)
KOPF_EXAMPLE_CRD = yaml.safe_load("""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: kopfexamples.kopf.dev
spec:
  scope: Namespaced
  group: kopf.dev
  names:
    kind: KopfExample
    plural: kopfexamples
    singular: kopfexample
    shortNames: [kopfexes, kopfex, kexes, kex]
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
    additionalPrinterColumns:
    - {name: Duration, type: string, priority: 0, jsonPath: .spec.duration}
    - {name: Children, type: string, priority: 0, jsonPath: .status.create_fn.children}
    - {name: Message, type: string, priority: 0, jsonPath: .status.create_fn.message}
""")

# kopf's examples/obj.yaml
KOPF_EXAMPLE_OBJ = yaml.safe_load("""
apiVersion: kopf.dev/v1
kind: KopfExample
metadata:
  name: kopf-example-1
  labels: {somelabel: somevalue}
  annotations: {someannotation: somevalue}
spec:
  duration: 1m
  field: value
  items: [item1, item2]
""")

LAST_HANDLED = "kopf.zalando.org/last-handled-configuration"


@dataclass
class Calls:
    """What the operator's handlers saw, shared with the test thread."""

    created: list[dict[str, Any]] = field(default_factory=list)
    updated: list[Any] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)


def build_registry(cluster: RunningCluster, calls: Calls, *,
                   with_update_and_delete: bool) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        # never the user's kubeconfig: only the test's server
        return kopf.ConnectionInfo(server=cluster.url, ca_path=str(cluster.ca_file),
                                   scheme="Bearer", token=cluster.token)

    # the minimal example's handler: its return value becomes status.create_fn
    @kopf.on.create("kopf.dev", "v1", "kopfexamples", registry=registry, id="create_fn")
    def create_fn(spec: kopf.Spec, **_: Any) -> Any:
        calls.created.append(dict(spec))
        return {"message": "hello world"}

    if with_update_and_delete:
        @kopf.on.update("kopf.dev", "v1", "kopfexamples", registry=registry, id="update_fn")
        def update_fn(diff: kopf.Diff, patch: kopf.Patch, **_: Any) -> None:
            calls.updated.append(list(diff))
            patch.status["updated"] = "yes"  # status is outside kopf's essence: no new cycle

        @kopf.on.delete("kopf.dev", "v1", "kopfexamples", registry=registry, id="delete_fn")
        def delete_fn(name: str, **_: Any) -> None:
            calls.deleted.append(name)

    return registry


class OperatorThread:
    """``kopf.operator()`` on its own thread and event loop, stopped through its flag."""

    def __init__(self, registry: kopf.OperatorRegistry, namespace: str) -> None:
        self.stop_flag = threading.Event()
        self.ready_flag = threading.Event()
        self.error: BaseException | None = None
        settings = kopf.OperatorSettings()
        settings.watching.server_timeout = 10
        settings.networking.request_timeout = 10
        settings.posting.loggers = True  # handler outcomes become Kubernetes Events
        self._thread = threading.Thread(target=self._run, args=(registry, settings, namespace),
                                        daemon=True, name="kopf")

    def _run(self, registry: kopf.OperatorRegistry, settings: kopf.OperatorSettings,
             namespace: str) -> None:
        try:
            asyncio.run(kopf.operator(registry=registry, settings=settings, standalone=True,
                                      namespaces=[namespace], stop_flag=self.stop_flag,
                                      ready_flag=self.ready_flag))
        except BaseException as exc:  # reported by the test
            self.error = exc

    def __enter__(self) -> OperatorThread:
        self._thread.start()
        assert self.ready_flag.wait(30), "kopf did not become ready"
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_flag.set()
        self._thread.join(timeout=30)
        assert not self._thread.is_alive(), "kopf did not stop"


@pytest.fixture
def http(threaded_cluster: ThreadedCluster) -> Iterator[httpx.Client]:
    assert threaded_cluster.cluster is not None
    with http_client(threaded_cluster.cluster) as c:
        yield c


@pytest.fixture
def kopf_logs_info() -> Iterator[None]:
    """kopf posts as Events only the records its loggers let through: let INFO through."""
    logger = logging.getLogger("kopf")
    level = logger.level
    logger.setLevel(logging.INFO)
    yield
    logger.setLevel(level)


@pytest.fixture
def kopf_namespace(http: httpx.Client) -> str:
    """A namespace with the kopf example CRD established."""
    name = unique("kopf")
    assert http.post("/api/v1/namespaces", json={"metadata": {"name": name}}).status_code == 201
    resp = http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                     json=KOPF_EXAMPLE_CRD)
    assert resp.status_code == 201, resp.text

    def established() -> bool:
        crd = http.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                       "kopfexamples.kopf.dev").json()
        return any(c["type"] == "Established" and c["status"] == "True"
                   for c in crd.get("status", {}).get("conditions", []))

    wait_until(established)
    wait_until(lambda: http.get("/apis/kopf.dev/v1").status_code == 200)
    return name


def example_path(ns: str, name: str = "") -> str:
    base = f"/apis/kopf.dev/v1/namespaces/{ns}/kopfexamples"
    return f"{base}/{name}" if name else base


def test_minimal_example_operator_handles_and_patches_its_resource(
        threaded_cluster: ThreadedCluster, http: httpx.Client, kopf_namespace: str,
        kopf_logs_info: None) -> None:
    assert threaded_cluster.cluster is not None
    ns = kopf_namespace
    calls = Calls()
    registry = build_registry(threaded_cluster.cluster, calls, with_update_and_delete=False)
    with OperatorThread(registry, ns) as operator:
        resp = http.post(example_path(ns), json=KOPF_EXAMPLE_OBJ)
        assert resp.status_code == 201, resp.text

        def handled() -> dict[str, Any] | None:
            obj: dict[str, Any] = http.get(example_path(ns, "kopf-example-1")).json()
            done = obj.get("status", {}).get("create_fn") == {"message": "hello world"}
            return obj if done and LAST_HANDLED in obj["metadata"].get("annotations", {}) \
                else None

        obj = wait_until(handled, timeout=30)

        # kopf reports the handler's success as a Kubernetes Event on the object
        def events() -> list[dict[str, Any]]:
            found = http.get(f"/api/v1/namespaces/{ns}/events", params={
                "fieldSelector": "involvedObject.name=kopf-example-1"}).json()
            items: list[dict[str, Any]] = found["items"]
            return items if any(e["message"] == "Handler 'create_fn' succeeded."
                                for e in items) else []

        posted = wait_until(events, timeout=15)
        assert all(e["involvedObject"]["uid"] == present(obj)["metadata"]["uid"] for e in posted)
        # kopf sends Python isoformat times; the server answers in Kubernetes' own formats:
        # metav1.Time as RFC 3339 seconds in UTC, metav1.MicroTime with 6 fraction digits
        event = posted[0]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", event["firstTimestamp"]), event
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", event["eventTime"]), event
        assert operator.error is None
    assert calls.created == [{"duration": "1m", "field": "value", "items": ["item1", "item2"]}]
    # kopf's own bookkeeping landed through merge patches
    assert yaml.safe_load(present(obj)["metadata"]["annotations"][LAST_HANDLED])["spec"] == \
        KOPF_EXAMPLE_OBJ["spec"]
    assert present(obj)["metadata"]["annotations"]["someannotation"] == "somevalue"
    assert present(obj)["spec"] == KOPF_EXAMPLE_OBJ["spec"]
    # the status came through the status subresource and did not bump the generation
    assert present(obj)["metadata"]["generation"] == 1
    managers = {(m["manager"], m.get("subresource", ""))
                for m in present(obj)["metadata"]["managedFields"]}
    assert any(sub == "status" for _, sub in managers), managers


    table = http.get(example_path(ns), headers={
        "Accept": "application/json;as=Table;g=meta.k8s.io;v=v1"}).json()
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Duration", "Children", "Message"]
    assert table["rows"][0]["cells"][0] == "kopf-example-1"
    assert table["rows"][0]["cells"][1] == "1m"
    assert table["rows"][0]["cells"][3] == "hello world"


def test_operator_handles_update_and_delete_with_its_finalizer(
        threaded_cluster: ThreadedCluster, http: httpx.Client, kopf_namespace: str) -> None:
    assert threaded_cluster.cluster is not None
    ns = kopf_namespace
    calls = Calls()
    registry = build_registry(threaded_cluster.cluster, calls, with_update_and_delete=True)
    path = example_path(ns, "kopf-example-1")
    with OperatorThread(registry, ns) as operator:
        assert http.post(example_path(ns), json=KOPF_EXAMPLE_OBJ).status_code == 201

        # with a delete handler, kopf first puts its finalizer on the object
        wait_until(lambda: http.get(path).json().get("status", {}).get("create_fn"), timeout=30)
        obj = http.get(path).json()
        assert "kopf.zalando.org/KopfFinalizerMarker" in obj["metadata"]["finalizers"]

        resp = http.patch(path, json={"spec": {"field": "changed"}},
                          headers={"Content-Type": "application/merge-patch+json"})
        assert resp.status_code == 200, resp.text
        wait_until(lambda: http.get(path).json().get("status", {}).get("updated") == "yes",
                   timeout=30)
        assert calls.updated == [[("change", ("spec", "field"), "value", "changed")]]

        resp = http.delete(path)
        assert resp.status_code == 200, resp.text
        assert resp.json()["metadata"].get("deletionTimestamp"), \
            "the finalizer must hold the object"
        wait_until(lambda: http.get(path).status_code == 404, timeout=30)
        assert operator.error is None
    assert calls.deleted == ["kopf-example-1"]
    assert len(calls.created) == 1
