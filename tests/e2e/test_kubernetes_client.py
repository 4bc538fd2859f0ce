"""The official ``kubernetes`` Python client against the in-process server: typed API,
DynamicClient and watch, configured only from the kubeconfig the server wrote."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3
from kubernetes import client, config, dynamic, watch
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from setpoint.testing import present
from tests.e2e.conftest import ThreadedCluster, unique, wait_until


@pytest.fixture
def api_client(threaded_cluster: ThreadedCluster) -> Iterator[client.ApiClient]:
    """An ApiClient built from the server's kubeconfig into a fresh Configuration."""
    assert threaded_cluster.cluster is not None
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(threaded_cluster.cluster.kubeconfig),
                            client_configuration=configuration)
    with client.ApiClient(configuration) as api:
        yield api


@pytest.fixture
def ns(api_client: client.ApiClient) -> str:
    name = unique("py")
    client.CoreV1Api(api_client).create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    return name


def status_of(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(present(exc.body))
    return body


# -- typed API -----------------------------------------------------------------------------

def test_core_v1_configmap_lifecycle(api_client: client.ApiClient, ns: str) -> None:
    core = client.CoreV1Api(api_client)
    created = core.create_namespaced_config_map(ns, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="cm1", labels={"app": "demo"}), data={"a": "1"}))
    assert present(created.metadata).uid and present(created.metadata).resource_version
    assert present(created.metadata).creation_timestamp is not None

    read = core.read_namespaced_config_map("cm1", ns)
    assert read.data == {"a": "1"}
    assert present(read.metadata).resource_version == present(created.metadata).resource_version

    listed = core.list_namespaced_config_map(ns, label_selector="app=demo")
    assert [present(item.metadata).name for item in listed.items] == ["cm1"]
    listed_rv = present(present(listed.metadata).resource_version)
    assert int(listed_rv) >= int(present(present(created.metadata).resource_version))

    patched = core.patch_namespaced_config_map("cm1", ns, {"data": {"b": "2"}})  # strategic
    assert patched.data == {"a": "1", "b": "2"}
    patched = core.patch_namespaced_config_map(
        "cm1", ns, [{"op": "remove", "path": "/data/a"}])  # a list is sent as a JSON patch
    assert patched.data == {"b": "2"}

    read.data = {"c": "3"}  # stale resourceVersion: the patches moved it on
    with pytest.raises(ApiException) as stale:
        core.replace_namespaced_config_map("cm1", ns, read)
    assert stale.value.status == 409
    assert status_of(stale.value)["reason"] == "Conflict"

    patched.data = {"c": "3"}
    replaced = core.replace_namespaced_config_map("cm1", ns, patched)
    assert replaced.data == {"c": "3"}

    deleted = core.delete_namespaced_config_map("cm1", ns)  # this client returns a plain dict
    assert deleted == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                       "status": "Success", "details": {
                           "name": "cm1", "kind": "configmaps",
                           "uid": present(created.metadata).uid}}
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_config_map("cm1", ns)
    assert missing.value.status == 404
    assert status_of(missing.value) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'configmaps "cm1" not found', "reason": "NotFound",
        "details": {"name": "cm1", "kind": "configmaps"}, "code": 404}


def test_core_v1_create_duplicate_is_already_exists(api_client: client.ApiClient,
                                                    ns: str) -> None:
    core = client.CoreV1Api(api_client)
    body = client.V1Secret(metadata=client.V1ObjectMeta(name="s1"), string_data={"k": "v"})
    created = core.create_namespaced_secret(ns, body)
    assert created.data == {"k": "dg=="}
    assert created.type == "Opaque"
    with pytest.raises(ApiException) as dup:
        core.create_namespaced_secret(ns, body)
    assert dup.value.status == 409
    assert status_of(dup.value)["reason"] == "AlreadyExists"


def test_core_v1_pod_gets_admission_defaults(api_client: client.ApiClient, ns: str) -> None:
    core = client.CoreV1Api(api_client)
    wait_until(lambda: core.list_namespaced_service_account(
        ns, field_selector="metadata.name=default").items)
    pod = core.create_namespaced_pod(ns, client.V1Pod(
        metadata=client.V1ObjectMeta(name="p1"),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")])))
    assert present(pod.spec).service_account_name == "default"
    assert present(pod.spec).restart_policy == "Always"
    assert present(pod.status).phase == "Pending"
    assert any(v.name.startswith("kube-api-access-") for v in present(present(pod.spec).volumes))
    keys = {(t.key, t.effect) for t in present(present(pod.spec).tolerations)}
    assert {("node.kubernetes.io/not-ready", "NoExecute"),
            ("node.kubernetes.io/unreachable", "NoExecute")} <= keys
    pending = core.list_namespaced_pod(ns, field_selector="status.phase=Pending")
    assert [present(p.metadata).name for p in pending.items] == ["p1"]


def test_apps_v1_deployment_lifecycle(api_client: client.ApiClient, ns: str) -> None:
    apps = client.AppsV1Api(api_client)
    labels = {"app": "web"}
    created = apps.create_namespaced_deployment(ns, client.V1Deployment(
        metadata=client.V1ObjectMeta(name="web"),
        spec=client.V1DeploymentSpec(
            replicas=2, selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[
                    client.V1Container(name="web", image="nginx:1.27")])))))
    assert present(created.metadata).generation == 1
    assert present(created.spec.strategy).type == "RollingUpdate"
    assert created.spec.revision_history_limit == 10
    assert present(created.spec.template.spec).containers[0].image_pull_policy == "IfNotPresent"

    read = apps.read_namespaced_deployment("web", ns)
    assert read.spec.replicas == 2

    everywhere = apps.list_deployment_for_all_namespaces(label_selector="!missing")
    metas = [present(d.metadata) for d in everywhere.items]
    assert ("web", ns) in {(meta.name, meta.namespace) for meta in metas}

    patched = apps.patch_namespaced_deployment("web", ns, {"spec": {"template": {"spec": {
        "containers": [{"name": "web", "image": "nginx:1.28"}]}}}})
    assert present(patched.spec.template.spec).containers[0].image == "nginx:1.28"
    assert present(patched.metadata).generation == 2

    scale = apps.read_namespaced_deployment_scale("web", ns)
    assert present(scale.spec).replicas == 2
    assert present(scale.status).selector == "app=web"
    scaled = apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 5}})
    assert present(scaled.spec).replicas == 5
    assert apps.read_namespaced_deployment("web", ns).spec.replicas == 5

    status = apps.read_namespaced_deployment_status("web", ns)
    status.status = client.V1DeploymentStatus(replicas=5, observed_generation=3)
    written = apps.replace_namespaced_deployment_status("web", ns, status)
    assert present(written.status).observed_generation == 3
    assert written.spec.replicas == 5

    apps.delete_namespaced_deployment("web", ns, propagation_policy="Foreground")
    wait_until(lambda: not apps.list_namespaced_deployment(ns).items)


def test_apply_with_typed_client(api_client: client.ApiClient, ns: str) -> None:
    core = client.CoreV1Api(api_client)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"},
            "data": {"k": "v"}}
    applied = core.patch_namespaced_config_map(
        "applied", ns, body, field_manager="py", _content_type="application/apply-patch+yaml")
    assert applied.data == {"k": "v"}
    managed = present(present(applied.metadata).managed_fields)
    assert [(m.manager, m.operation) for m in managed] == [
        ("py", "Apply")]
    with pytest.raises(ApiException) as conflict:
        core.patch_namespaced_config_map(
            "applied", ns, {**body, "data": {"k": "other"}}, field_manager="rival",
            _content_type="application/apply-patch+yaml")
    assert conflict.value.status == 409
    status = status_of(conflict.value)
    assert status["reason"] == "Conflict"
    assert status["details"]["causes"] == [{
        "reason": "FieldManagerConflict", "message": 'conflict with "py"', "field": ".data.k"}]


# -- DynamicClient on a CRD ----------------------------------------------------------------

GIZMO_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gizmos.py.example.com"},
    "spec": {
        "group": "py.example.com", "scope": "Namespaced",
        "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "color": {"type": "string"},
                    "size": {"type": "integer", "default": 1}}},
                "status": {"type": "object", "properties": {
                    "phase": {"type": "string"}}}}}},
        }],
    },
}


@pytest.fixture
def gizmos(api_client: client.ApiClient) -> Any:
    dyn = dynamic.DynamicClient(api_client)
    crds = dyn.resources.get(api_version="apiextensions.k8s.io/v1",
                             kind="CustomResourceDefinition")
    crds.create(body=GIZMO_CRD)

    def established() -> bool:
        crd = crds.get(name="gizmos.py.example.com")
        return any(c["type"] == "Established" and c["status"] == "True"
                   for c in (crd.status or {}).get("conditions") or [])

    wait_until(established)

    def resource() -> Any:
        try:
            return dyn.resources.get(api_version="py.example.com/v1", kind="Gizmo")
        except ResourceNotFoundError:
            dyn.resources.invalidate_cache()
            return None

    return wait_until(resource)


def test_dynamic_client_custom_resource_lifecycle(gizmos: Any, ns: str) -> None:
    created = gizmos.create(namespace=ns, body={
        "apiVersion": "py.example.com/v1", "kind": "Gizmo",
        "metadata": {"name": "g1", "labels": {"tier": "a"}}, "spec": {"color": "blue"}})
    assert created.metadata.name == "g1"
    assert created.spec.size == 1  # defaulted from the schema
    assert created.metadata.generation == 1

    got = gizmos.get(name="g1", namespace=ns)
    assert got.spec.color == "blue"
    listed = gizmos.get(namespace=ns, label_selector="tier=a")
    assert [item.metadata.name for item in listed.items] == ["g1"]

    patched = gizmos.patch(name="g1", namespace=ns, body={"spec": {"color": "red"}},
                           content_type="application/merge-patch+json")
    assert patched.spec.color == "red"
    assert patched.metadata.generation == 2

    with pytest.raises(ApiException) as unsupported:
        gizmos.patch(name="g1", namespace=ns, body={"spec": {"color": "x"}},
                     content_type="application/strategic-merge-patch+json")
    assert unsupported.value.status == 415

    status = gizmos.status.patch(name="g1", namespace=ns,
                                 body={"status": {"phase": "Ready"}, "spec": {"color": "no"}},
                                 content_type="application/merge-patch+json")
    assert status.status.phase == "Ready"
    assert status.spec.color == "red"  # the status subresource ignores spec
    assert status.metadata.generation == 2

    applied = gizmos.server_side_apply(namespace=ns, name="g1", field_manager="py", body={
        "apiVersion": "py.example.com/v1", "kind": "Gizmo", "metadata": {"name": "g1"},
        "spec": {"color": "green"}}, force_conflicts=True)
    assert applied.spec.color == "green"

    gizmos.delete(name="g1", namespace=ns)
    with pytest.raises(ApiException) as missing:
        gizmos.get(name="g1", namespace=ns)
    assert missing.value.status == 404
    assert status_of(missing.value)["details"] == {
        "name": "g1", "group": "py.example.com", "kind": "gizmos"}


def test_dynamic_client_watch_sees_custom_resource_events(gizmos: Any, ns: str) -> None:
    body = {"apiVersion": "py.example.com/v1", "kind": "Gizmo", "metadata": {"name": "w1"},
            "spec": {"color": "blue"}}
    gizmos.create(namespace=ns, body=body)
    start = gizmos.get(namespace=ns).metadata.resourceVersion

    def writer() -> None:
        gizmos.patch(name="w1", namespace=ns, body={"spec": {"color": "red"}},
                     content_type="application/merge-patch+json")
        gizmos.delete(name="w1", namespace=ns)

    writer()  # events after ``start`` stay in the history until the watch asks for them
    events: list[tuple[str, str]] = []
    for event in gizmos.watch(namespace=ns, resource_version=start, timeout=10):
        events.append((event["type"], event["object"].spec.color))
        if event["type"] == "DELETED":
            break
    assert events == [("MODIFIED", "red"), ("DELETED", "red")]


# -- watch ---------------------------------------------------------------------------------

def test_watch_stream_from_list_resource_version(api_client: client.ApiClient, ns: str) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map(ns, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="before")))
    rv = present(core.list_namespaced_config_map(ns).metadata).resource_version

    def writer() -> None:
        core.create_namespaced_config_map(ns, client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="after"), data={"x": "1"}))
        core.patch_namespaced_config_map("after", ns, {"data": {"x": "2"}})
        core.delete_namespaced_config_map("after", ns)

    threading.Thread(target=writer).start()
    seen: list[tuple[str, str, dict[str, str] | None]] = []
    w = watch.Watch()
    for event in w.stream(core.list_namespaced_config_map, ns, resource_version=rv,
                          _request_timeout=15):
        obj = event["object"]
        seen.append((event["type"], obj.metadata.name, obj.data))
        if event["type"] == "DELETED":
            w.stop()
    assert seen == [("ADDED", "after", {"x": "1"}), ("MODIFIED", "after", {"x": "2"}),
                    ("DELETED", "after", {"x": "2"})]
    assert int(present(w.resource_version)) > int(present(rv))


def test_watch_without_resource_version_starts_with_current_objects(
        api_client: client.ApiClient, ns: str) -> None:
    core = client.CoreV1Api(api_client)
    wait_until(lambda: core.list_namespaced_config_map(
        ns, field_selector="metadata.name=kube-root-ca.crt").items)
    for name in ("a", "b"):
        core.create_namespaced_config_map(ns, client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name=name)))
    names = [e["object"].metadata.name for e in watch.Watch().stream(
        core.list_namespaced_config_map, ns, timeout_seconds=1, _request_timeout=10)]
    assert sorted(names) == ["a", "b", "kube-root-ca.crt"]


def test_watch_from_compacted_version_gets_410_error_event(
        api_client: client.ApiClient, threaded_cluster: ThreadedCluster, ns: str) -> None:
    core = client.CoreV1Api(api_client)
    old = present(core.create_namespaced_config_map(ns, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="old"))).metadata).resource_version
    core.create_namespaced_config_map(ns, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="new")))
    threaded_cluster.call(lambda: threaded_cluster.cluster.api.store.compact())  # type: ignore[union-attr]

    # unread (_preload_content=False), the call answers the urllib3 response, not the list
    resp: object = core.list_namespaced_config_map(ns, watch=True, resource_version=old,
                                                   _preload_content=False, _request_timeout=10)
    assert isinstance(resp, urllib3.HTTPResponse)
    try:
        assert resp.status == 200  # the error comes as an event, as kube-apiserver sends it
        first = json.loads(resp.readline())
    finally:
        resp.close()
    assert first["type"] == "ERROR"
    assert first["object"]["kind"] == "Status"
    assert first["object"]["code"] == 410
    assert first["object"]["reason"] == "Expired"
    assert first["object"]["message"].startswith("too old resource version: ")


def test_watch_stream_restarts_once_after_410_then_client_relists(
        api_client: client.ApiClient, threaded_cluster: ThreadedCluster, ns: str) -> None:
    """The client's Watch retries once after a 410, raises on the second, and an informer's
    list-then-watch from the new list resourceVersion resumes delivery."""
    core = client.CoreV1Api(api_client)
    old = present(core.create_namespaced_config_map(ns, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="old"))).metadata).resource_version
    core.create_namespaced_config_map(ns, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="newer")))
    threaded_cluster.call(lambda: threaded_cluster.cluster.api.store.compact())  # type: ignore[union-attr]

    w = watch.Watch()
    with pytest.raises(ApiException) as expired:
        for _ in w.stream(core.list_namespaced_config_map, ns, resource_version=old,
                          _request_timeout=10):
            pytest.fail("no event may arrive from a compacted resourceVersion")
    assert expired.value.status == 410
    assert expired.value.reason.startswith("Expired: too old resource version")

    listing = core.list_namespaced_config_map(ns)
    assert {"old", "newer"} <= {present(i.metadata).name for i in listing.items}
    threading.Thread(target=lambda: core.create_namespaced_config_map(ns, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="latest")))).start()
    w = watch.Watch()
    for event in w.stream(core.list_namespaced_config_map, ns,
                          resource_version=present(listing.metadata).resource_version,
                          _request_timeout=10):
        assert (event["type"], event["object"].metadata.name) == ("ADDED", "latest")
        w.stop()
