"""The relationship graph (setpoint.platform): every edge type and every KubePlus annotation
form, on the embedded cluster.

Field paths are the API types' (k8s.io/api core/v1 types.go PodSpec, networking/v1
IngressSpec, rbac/v1 RoleBinding); selectors as the controllers read them
(metav1.LabelSelectorAsSelector, labels.SelectorFromSet for a Service); the annotation syntax
is KubePlus's (cloud-ark/kubeplus Guidelines.md, Operator-annotations.md).
"""

from __future__ import annotations

from typing import Any

import pytest

from setpoint.client import Client, Kind, RequestRecord
from setpoint.platform import ObjectRef, StackGraph, Watch, load_cache
from tests.platform.stacks import edges, install_crds, names, obj, pod, stack_of

POD = Kind("v1", "Pod")

SELECTING = [
    ("v1", "Service", {"selector": {"app": "web"}, "ports": [{"port": 80}]}),
    ("apps/v1", "Deployment", {"selector": {"matchLabels": {"app": "web"}}, "template": {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "a", "image": "nginx"}]}}}),
    ("apps/v1", "ReplicaSet", {"selector": {"matchLabels": {"app": "web"}}, "template": {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "a", "image": "nginx"}]}}}),
    ("apps/v1", "StatefulSet", {"serviceName": "web",
                                "selector": {"matchLabels": {"app": "web"}}, "template": {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "a", "image": "nginx"}]}}}),
    ("apps/v1", "DaemonSet", {"selector": {"matchExpressions": [
        {"key": "app", "operator": "In", "values": ["web"]}]}, "template": {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "a", "image": "nginx"}]}}}),
    ("batch/v1", "Job", {"manualSelector": True, "selector": {"matchLabels": {"app": "web"}},
                         "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                             "restartPolicy": "Never",
                             "containers": [{"name": "a", "image": "nginx"}]}}}),
    ("networking.k8s.io/v1", "NetworkPolicy", {"podSelector": {"matchLabels": {"app": "web"}}}),
    ("policy/v1", "PodDisruptionBudget", {"minAvailable": 1,
                                          "selector": {"matchLabels": {"app": "web"}}}),
]


@pytest.mark.parametrize(("api_version", "kind", "spec"), SELECTING,
                         ids=[k for _, k, _ in SELECTING])
async def test_a_label_selector_reaches_exactly_the_pods_it_matches(
        k8s: Client, api_version: str, kind: str, spec: dict[str, Any]) -> None:
    await k8s.create(pod("web-1", {"app": "web"}))
    await k8s.create(pod("web-2", {"app": "web", "tier": "front"}))
    await k8s.create(pod("webby", {"app": "web-2"}))  # exact values: not "web"
    await k8s.create(pod("other", {"role": "web"}))
    await k8s.create(obj("v1", "Namespace", "elsewhere", None))
    await k8s.create(pod("web-elsewhere", {"app": "web"}, namespace="elsewhere"))
    await k8s.create(obj(api_version, kind, "web", spec=spec))
    group = api_version.rpartition("/")[0]

    stack = await stack_of(k8s, group, kind, "web")

    selected = {(s, r, t) for s, r, t in edges(stack) if r == "selector"}
    holder = str(stack.root)
    assert {(holder, "selector", "Pod/default/web-1"),
            (holder, "selector", "Pod/default/web-2")} <= selected
    assert not names(stack) & {"Pod/default/webby", "Pod/default/other",
                               "Pod/elsewhere/web-elsewhere"}
    # from a pod, the objects that select it join its stack
    from_pod = await stack_of(k8s, "", "Pod", "web-1")
    assert (holder, "selector", "Pod/default/web-1") in edges(from_pod)


async def test_a_pod_reaches_what_its_spec_names(k8s: Client) -> None:
    await k8s.create(obj("v1", "Node", "node-a", None))
    for kind, name in [("ConfigMap", "vol-cm"), ("ConfigMap", "proj-cm"), ("ConfigMap", "env-cm"),
                       ("ConfigMap", "from-cm"), ("ConfigMap", "unused-cm"),
                       ("Secret", "vol-secret"), ("Secret", "env-secret"),
                       ("Secret", "from-secret"), ("Secret", "pull")]:
        await k8s.create(obj("v1", kind, name))
    await k8s.create(obj("v1", "ServiceAccount", "app-sa"))
    await k8s.create(obj("v1", "PersistentVolumeClaim", "data", spec={
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}))
    container = {
        "name": "app", "image": "nginx",
        "env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "env-cm", "key": "a"}}},
                {"name": "B", "valueFrom": {"secretKeyRef": {"name": "env-secret", "key": "b"}}}],
        "envFrom": [{"configMapRef": {"name": "from-cm"}},
                    {"secretRef": {"name": "from-secret"}}],
    }
    await k8s.create(obj("v1", "Pod", "app", spec={
        "containers": [container], "nodeName": "node-a", "serviceAccountName": "app-sa",
        "imagePullSecrets": [{"name": "pull"}],
        "volumes": [
            {"name": "d", "persistentVolumeClaim": {"claimName": "data"}},
            {"name": "c", "configMap": {"name": "vol-cm"}},
            {"name": "s", "secret": {"secretName": "vol-secret"}},
            {"name": "p", "projected": {"sources": [{"configMap": {"name": "proj-cm"}}]}},
        ]}))

    stack = await stack_of(k8s, "", "Pod", "app")

    p = "Pod/default/app"
    assert {
        (p, "volume", "PersistentVolumeClaim/default/data"),
        (p, "volume", "ConfigMap/default/vol-cm"), (p, "volume", "ConfigMap/default/proj-cm"),
        (p, "volume", "Secret/default/vol-secret"),
        (p, "env", "ConfigMap/default/env-cm"), (p, "env", "Secret/default/env-secret"),
        (p, "envFrom", "ConfigMap/default/from-cm"),
        (p, "envFrom", "Secret/default/from-secret"),
        (p, "imagePullSecret", "Secret/default/pull"),
        (p, "serviceAccount", "ServiceAccount/default/app-sa"), (p, "node", "Node/node-a"),
    } <= edges(stack)
    assert "ConfigMap/default/unused-cm" not in names(stack)
    # a ConfigMap as the root shows who uses it
    from_cm = await stack_of(k8s, "", "ConfigMap", "env-cm")
    assert (p, "env", "ConfigMap/default/env-cm") in edges(from_cm)


async def test_ingress_volumes_and_bindings_follow_references_across_namespaces(
        k8s: Client) -> None:
    await k8s.create(obj("v1", "Namespace", "tools", None))
    await k8s.create(obj("v1", "Service", "web", spec={"ports": [{"port": 80}]}))
    await k8s.create(obj("v1", "Secret", "web-tls"))
    await k8s.create(obj("networking.k8s.io/v1", "Ingress", "web", spec={
        "tls": [{"hosts": ["a.example.com"], "secretName": "web-tls"}],
        "rules": [{"host": "a.example.com", "http": {"paths": [{
            "path": "/", "pathType": "Prefix",
            "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}))
    await k8s.create(obj("storage.k8s.io/v1", "StorageClass", "fast", None,
                         provisioner="example.com/fast"))
    await k8s.create(obj("v1", "PersistentVolume", "pv-1", None, spec={
        "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
        "storageClassName": "fast", "hostPath": {"path": "/tmp/pv-1"}}))
    await k8s.create(obj("v1", "PersistentVolumeClaim", "data", spec={
        "accessModes": ["ReadWriteOnce"], "storageClassName": "fast", "volumeName": "pv-1",
        "resources": {"requests": {"storage": "1Gi"}}}))
    await k8s.create(obj("v1", "ServiceAccount", "deployer", "tools"))
    await k8s.create(obj("rbac.authorization.k8s.io/v1", "Role", "reader", rules=[
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]))
    await k8s.create(obj("rbac.authorization.k8s.io/v1", "RoleBinding", "read", subjects=[
        {"kind": "ServiceAccount", "name": "deployer", "namespace": "tools"},
        {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}],
        roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"}))
    await k8s.create(obj("rbac.authorization.k8s.io/v1", "RoleBinding", "view", subjects=[
        {"kind": "ServiceAccount", "name": "deployer", "namespace": "tools"}],
        roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                 "name": "view"}))

    ingress = await stack_of(k8s, "networking.k8s.io", "Ingress", "web")
    assert {("Ingress.networking.k8s.io/default/web", "backend", "Service/default/web"),
            ("Ingress.networking.k8s.io/default/web", "tls", "Secret/default/web-tls")} \
        <= edges(ingress)
    claim = await stack_of(k8s, "", "PersistentVolumeClaim", "data")
    assert {("PersistentVolumeClaim/default/data", "volumeName", "PersistentVolume/pv-1"),
            ("PersistentVolume/pv-1", "storageClass", "StorageClass.storage.k8s.io/fast")} \
        <= edges(claim)
    binding = await stack_of(k8s, "rbac.authorization.k8s.io", "RoleBinding", "read")
    rb = "RoleBinding.rbac.authorization.k8s.io/default/read"
    assert {(rb, "roleRef", "Role.rbac.authorization.k8s.io/default/reader"),
            (rb, "subject", "ServiceAccount/tools/deployer")} == edges(binding)
    view = await stack_of(k8s, "rbac.authorization.k8s.io", "RoleBinding", "view")
    assert ("RoleBinding.rbac.authorization.k8s.io/default/view", "roleRef",
            "ClusterRole.rbac.authorization.k8s.io/view") in edges(view)


async def test_owner_references_from_controllers_and_shared_objects_end_the_walk(
        setpoint_workloads: Any, k8s: Client, wait_for: Any) -> None:
    template = {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "a", "image": "nginx"}]}}
    await k8s.create(obj("apps/v1", "Deployment", "web", spec={
        "replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": template}))
    await k8s.create(obj("apps/v1", "Deployment", "other", spec={
        "replicas": 1, "selector": {"matchLabels": {"app": "other"}},
        "template": {**template, "metadata": {"labels": {"app": "other"}}}}))

    async def scheduled() -> list[Any] | None:
        pods = (await k8s.list(POD)).items
        done = [p for p in pods if p["spec"].get("nodeName")]
        return done if len(done) == 3 else None

    pods = await wait_for(scheduled)
    stack = await stack_of(k8s, "apps", "Deployment", "web")

    web_pods = {f"Pod/default/{p['metadata']['name']}" for p in pods
                if p["metadata"]["labels"]["app"] == "web"}
    replica_sets = {s for s in names(stack) if s.startswith("ReplicaSet/")}
    assert len(replica_sets) == 1
    (rs,) = replica_sets
    assert ("Deployment/default/web", "controller", rs) in edges(stack)
    assert {(rs, "controller", p) for p in web_pods} <= edges(stack)
    nodes = {f"Node/{p['spec']['nodeName']}" for p in pods if p["metadata"]["labels"]["app"]
             == "web"}
    assert nodes <= names(stack)
    # a Node is shared: the other Deployment's pods on it are not part of this stack
    assert not any("other" in n for n in names(stack))
    # from a pod, its owners are shown upward
    one = sorted(web_pods)[0].rsplit("/", 1)[1]
    from_pod = await stack_of(k8s, "", "Pod", one)
    assert {"Deployment/default/web", rs} <= names(from_pod)


async def test_kubeplus_annotations_each_form(k8s: Client) -> None:
    await install_crds(k8s)
    await k8s.create(obj("v1", "Namespace", "team-b", None))
    # annotation-relationship on a cluster-scoped kind, across namespaces
    for issuer in ("issuer1", "issuer2"):
        await k8s.create(obj("cert-manager.io/v1", "ClusterIssuer", issuer, None, spec={}))
    for ns, name, issuer in [("default", "a", "issuer1"), ("team-b", "b", "issuer1"),
                             ("default", "c", "issuer2"), ("default", "d", "issuer1x")]:
        await k8s.create(obj("networking.k8s.io/v1", "Ingress", name, ns, metadata={
            "annotations": {"cert-manager.io/cluster-issuer": issuer}}, spec={
            "defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}))
    # annotation-relationship with contains(), and label-relationship with a key
    await k8s.create(obj("db.example.com/v1", "Datacenter", "dc1", spec={}))
    await k8s.create(obj("v1", "Secret", "watched", metadata={
        "annotations": {"db.example.com/watched-by": "dc0, dc1"}}))
    await k8s.create(obj("v1", "Secret", "not-watched", metadata={
        "annotations": {"db.example.com/watched-by": "dc10"}}))
    claim = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    await k8s.create(obj("v1", "PersistentVolumeClaim", "dc1-data", metadata={
        "labels": {"db.example.com/datacenter": "dc1"}}, spec=claim))
    await k8s.create(obj("v1", "PersistentVolumeClaim", "dc2-data", metadata={
        "labels": {"db.example.com/datacenter": "dc2"}}, spec=claim))
    # label-relationship with a selector held by the instance
    await k8s.create(obj("backup.example.com/v1", "Backup", "nightly",
                         spec={"selector": {"app": "web"}}))
    for name, app in (("web", "web"), ("api", "api")):
        await k8s.create(obj("apps/v1", "Deployment", name, metadata={"labels": {"app": app}},
                             spec={"selector": {"matchLabels": {"app": app}}, "template": {
                                 "metadata": {"labels": {"app": app}}, "spec": {
                                     "containers": [{"name": "a", "image": "nginx"}]}}}))
    # specproperty-relationship, KubePlus's Service.spec.metadata.name form and a custom kind
    await k8s.create(obj("v1", "Service", "cluster1-mysql-master",
                         spec={"ports": [{"port": 3306}]}))
    await k8s.create(obj("mysql.example.com/v1", "MysqlCluster", "cluster1", spec={}))
    await k8s.create(obj("moodle.example.com/v1", "Moodle", "moodle1", spec={
        "mySQLServiceName": "cluster1-mysql-master", "mysqlCluster": "cluster1"}))

    graph = StackGraph(await load_cache(k8s))

    issuer_stack = graph.stack(ObjectRef("cert-manager.io", "ClusterIssuer", "", "issuer1"))
    assert {str(r) for r in issuer_stack.objects if r.kind == "Ingress"} == {
        "Ingress.networking.k8s.io/default/a", "Ingress.networking.k8s.io/team-b/b"}
    assert ("ClusterIssuer.cert-manager.io/issuer1", "annotation:cert-manager.io/cluster-issuer",
            "Ingress.networking.k8s.io/team-b/b") in edges(issuer_stack)
    from_ingress = graph.stack(ObjectRef("networking.k8s.io", "Ingress", "team-b", "b"))
    assert "ClusterIssuer.cert-manager.io/issuer1" in names(from_ingress)
    # the issuer is shared: the other namespace's Ingress is not in team-b's stack
    assert "Ingress.networking.k8s.io/default/a" not in names(from_ingress)

    dc = graph.stack(ObjectRef("db.example.com", "Datacenter", "default", "dc1"))
    assert {("Datacenter.db.example.com/default/dc1", "annotation:db.example.com/watched-by",
             "Secret/default/watched"),
            ("Datacenter.db.example.com/default/dc1", "label:db.example.com/datacenter",
             "PersistentVolumeClaim/default/dc1-data")} <= edges(dc)
    assert not names(dc) & {"Secret/default/not-watched", "PersistentVolumeClaim/default/dc2-data"}
    assert dc.usage == {dc.root: "datacenter-usage"}

    backup = graph.stack(ObjectRef("backup.example.com", "Backup", "default", "nightly"))
    assert ("Backup.backup.example.com/default/nightly", "label-selector:spec.selector",
            "Deployment/default/web") in edges(backup)
    assert "Deployment/default/api" not in names(backup)

    moodle = graph.stack(ObjectRef("moodle.example.com", "Moodle", "default", "moodle1"))
    m = "Moodle.moodle.example.com/default/moodle1"
    assert {(m, "specproperty:spec.mySQLServiceName", "Service/default/cluster1-mysql-master"),
            (m, "specproperty:spec.mysqlCluster",
             "MysqlCluster.mysql.example.com/default/cluster1")} <= edges(moodle)
    # and from the other side
    from_service = graph.stack(ObjectRef("", "Service", "default", "cluster1-mysql-master"))
    assert m in names(from_service)


async def test_a_one_shot_run_lists_each_kind_once_and_a_watched_cache_makes_no_call(
        setpoint_cluster: Any) -> None:
    requests: list[RequestRecord] = []
    client = setpoint_cluster.client(on_request=requests.append)
    await client.create(pod("web-1", {"app": "web"}))
    await client.create(obj("v1", "Service", "web", spec={"selector": {"app": "web"},
                                                          "ports": [{"port": 80}]}))
    requests.clear()

    graph = StackGraph(await load_cache(client))

    lists = [r.template for r in requests if r.method == "GET" and "{name}" not in r.template
             and not r.template.rstrip("/").endswith(("/api", "/apis", "/v1"))]
    assert lists and len(lists) == len(set(lists)), lists
    requests.clear()
    graph.stack(ObjectRef("", "Service", "default", "web"))
    assert requests == []

    watch = Watch(client)
    await watch.start()
    try:
        watched = StackGraph(watch.cache)
        requests.clear()
        stack = watched.stack(ObjectRef("", "Service", "default", "web"))
        assert "Pod/default/web-1" in names(stack)
        assert [r for r in requests if r.method != "GET" or "watch" not in r.path] == []
    finally:
        await watch.stop()
