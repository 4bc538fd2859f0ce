"""The workloads' metrics-server, reached directly as the aggregator reaches it.

metrics.k8s.io is served from memory (kubernetes-sigs/metrics-server pkg/api/pod.go,
node.go, table.go) by an HTTPS server that authenticates the front proxy
(k8s.io/apiserver pkg/authentication/request/headerrequest/requestheader.go) and asks the
API server with SubjectAccessReviews (pkg/server/options/authorization.go's delegated
authorization); it registers itself as metrics-server's manifests do (manifests/base/
service.yaml, apiservice.yaml).
"""

from __future__ import annotations

from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from setpoint.client import Client, Kind, NotFoundError
from setpoint.cluster.storage import store as store_module
from tests.waiting import quiet_period
from tests.workloads.metrics_server_support import (
    APISERVICE,
    CA,
    ENDPOINTS,
    MetricsServerClient,
    authentication_configmap,
    backend,
    publish,
)
from tests.workloads.test_kubelet_support import (
    FAST,
    POD,
    build,
    kubelet_env,
    pod,
    ready,
    wait_for,
)

Obj = dict[str, Any]
V1BETA1 = "/apis/metrics.k8s.io/v1beta1"
SERVICE = Kind("v1", "Service")
CRD = Kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
SAR_PATH = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
MASTERS = ("system:masters",)


def with_requests(name: str, cpu: str, memory: str, **labels: str) -> Obj:
    body = pod(name)
    body["metadata"]["labels"] = labels
    body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu, "memory": memory}}
    return body


async def test_serves_metrics_through_the_front_proxy(tmp_path: Path) -> None:
    front_proxy = CA.new("front-proxy-ca")

    async def configure(client: Client) -> None:
        await publish(client, authentication_configmap(front_proxy))

    async with kubelet_env(before_start=configure) as env:
        port, ca = await wait_for(lambda: backend(env.client))
        proxy = MetricsServerClient(port, ca, front_proxy.client_files(
            tmp_path, "front-proxy-client"))

        def admin(path: str, accept: str = "application/json"
                  ) -> Coroutine[Any, Any, tuple[int, Any]]:
            return proxy.get(path, user="admin", groups=MASTERS, accept=accept)

        # discovery, as metrics-server's generic API server answers it
        code, group_list = await admin("/apis")
        assert code == 200 and [g["name"] for g in group_list["groups"]] == ["metrics.k8s.io"]
        code, group = await admin("/apis/metrics.k8s.io")
        assert group["preferredVersion"] == {"groupVersion": "metrics.k8s.io/v1beta1",
                                             "version": "v1beta1"}
        code, resources = await admin(V1BETA1)
        assert resources == {
            "kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": "metrics.k8s.io/v1beta1", "resources": [
                {"name": "nodes", "singularName": "", "namespaced": False,
                 "kind": "NodeMetrics", "verbs": ["get", "list"]},
                {"name": "pods", "singularName": "", "namespaced": True,
                 "kind": "PodMetrics", "verbs": ["get", "list"]}]}
        # health answers anyone, as a kubelet's probe (no client certificate: the front
        # proxy's names no user, and the API server's client CA, which
        # clusterauthenticationtrust keeps in the ConfigMap, did not sign it)
        anonymous = MetricsServerClient(port, ca)
        for health in ("/healthz", "/readyz", "/livez"):
            assert await anonymous.get(health) == (200, "ok")

        await env.run(with_requests("web", "200m", "256Mi", app="web"))
        await env.run(with_requests("db", "100m", "64Mi", app="db"), "node-b")
        await env.until("web", ready)
        await env.until("db", ready)

        async def both() -> list[Obj] | None:
            _, listed = await admin(f"{V1BETA1}/pods")
            items = listed.get("items") or []
            return items if len(items) == 2 else None

        items = await wait_for(both)
        assert [m["metadata"]["name"] for m in items] == ["db", "web"]  # sorted
        web = items[1]
        assert web["kind"] == "PodMetrics" and web["window"] == "15s"
        assert web["metadata"]["labels"] == {"app": "web"}
        assert web["containers"] == [{"name": "app", "usage": {"cpu": "20000000n",
                                                               "memory": "131072Ki"}}]
        ns_path = f"{V1BETA1}/namespaces/default/pods"
        _, picked = await admin(f"{ns_path}?labelSelector=app%3Dweb")
        assert [m["metadata"]["name"] for m in picked["items"]] == ["web"]
        _, picked = await admin(f"{ns_path}?fieldSelector=metadata.name%3Ddb")
        assert [m["metadata"]["name"] for m in picked["items"]] == ["db"]
        # selection is by the pod's labels now, from the lister (pkg/api/pod.go pods)
        await env.client.patch(POD, "web", {"metadata": {"labels": {"app": "front"}}},
                               namespace="default")

        async def relabeled() -> list[Obj] | None:
            _, got = await admin(f"{ns_path}?labelSelector=app%3Dfront")
            return got["items"] or None

        [front] = await wait_for(relabeled)
        assert front["metadata"]["labels"] == {"app": "front"}
        _, other = await admin(f"{V1BETA1}/namespaces/kube-system/pods")
        assert other["items"] == []
        code, one = await admin(f"{ns_path}/web")
        assert code == 200 and one["containers"] == web["containers"]

        # a pod that does not exist is the pod lister's NotFound (pkg/api/pod.go Get)
        code, missing = await admin(f"{ns_path}/nope")
        assert (code, missing["reason"], missing["message"]) == (
            404, "NotFound", 'pods "nope" not found')
        code, bad = await admin(f"{ns_path}?labelSelector=a%20b")
        assert (code, bad["reason"]) == (400, "BadRequest")
        code, watch = await admin(f"{ns_path}?watch=true")
        assert (code, watch["reason"]) == (405, "MethodNotAllowed")
        # only get and list are served; a write is authorized as its verb first
        deleted = await proxy.request("DELETE", f"{ns_path}/web", user="admin",
                                      groups=MASTERS)
        assert deleted == (405, "405: Method Not Allowed")
        code, status = await proxy.request("DELETE", f"{ns_path}/web", user="eve")
        assert (code, status["message"]) == (403, (
            'pods.metrics.k8s.io "web" is forbidden: User "eve" cannot delete resource '
            '"pods" in API group "metrics.k8s.io" in the namespace "default"'))

        async def node_a() -> Obj | None:
            _, got = await admin(f"{V1BETA1}/nodes/node-a")
            return got if (got.get("usage") or {}).get("cpu") == "70000000n" else None

        got = await wait_for(node_a)  # 20m + 50m for the node itself
        assert got["kind"] == "NodeMetrics"
        assert got["metadata"]["labels"] == {"kubernetes.io/hostname": "node-a"}
        _, nodes = await admin(f"{V1BETA1}/nodes?labelSelector=kubernetes.io%2Fhostname"
                                   "%3Dnode-b")
        assert [n["metadata"]["name"] for n in nodes["items"]] == ["node-b"]
        code, missing = await admin(f"{V1BETA1}/nodes/node-z")
        assert (code, missing["message"]) == (404, 'nodes "node-z" not found')

        # pkg/api/table.go: Name, the resources, Window
        code, table = await admin(
            f"{ns_path}?fieldSelector=metadata.name%3Dweb",
            accept="application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
        assert code == 200 and table["kind"] == "Table"
        assert [c["name"] for c in table["columnDefinitions"]] == [
            "Name", "cpu", "memory", "Window"]
        assert table["rows"][0]["cells"] == ["web", "20m", "128Mi", "15s"]
        assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
        # an empty list converts to Go's nil columns and rows (metav1.Table encodes null);
        # includeObject=None leaves a row's RawExtension empty, an unknown value is a 400
        # (k8s.io/apiserver pkg/endpoints/handlers/response.go asTable)
        as_table = "application/json;as=Table;v=v1;g=meta.k8s.io"
        code, empty = await admin(f"{V1BETA1}/namespaces/kube-system/pods", accept=as_table)
        assert (code, empty["kind"]) == (200, "Table")
        assert (empty["columnDefinitions"], empty["rows"]) == (None, None)
        code, bare = await admin(f"{ns_path}/web?includeObject=None", accept=as_table)
        assert code == 200 and bare["rows"][0]["object"] is None
        code, bad = await admin(f"{ns_path}/web?includeObject=Everything", accept=as_table)
        assert (code, bad["reason"], bad["message"]) == (
            400, "BadRequest", 'unrecognized includeObject value: "Everything"')


async def test_authenticates_the_front_proxy_and_authorizes_with_the_api_server(
        tmp_path: Path) -> None:
    front_proxy, stranger = CA.new("front-proxy-ca"), CA.new("someone-else")
    clients = CA.new("client-ca")

    async def configure(client: Client) -> None:
        await publish(client, authentication_configmap(front_proxy, clients))

    async with kubelet_env(before_start=configure) as env:
        port, ca = await wait_for(lambda: backend(env.client))
        path = f"{V1BETA1}/namespaces/default/pods"

        # no certificate: anonymous, which RBAC does not let read metrics
        code, status = await MetricsServerClient(port, ca).get(path)
        assert (code, status["reason"]) == (403, "Forbidden")
        assert status["message"] == (
            'pods.metrics.k8s.io is forbidden: User "system:anonymous" cannot list '
            'resource "pods" in API group "metrics.k8s.io" in the namespace "default"')
        # a certificate of the front-proxy CA whose CN is not an allowed name: 401
        impostor = MetricsServerClient(port, ca, front_proxy.client_files(
            tmp_path, "not-the-proxy"))
        code, status = await impostor.get(path, user="admin", groups=("system:masters",))
        assert (code, status["reason"]) == (401, "Unauthorized")
        # a client certificate of the client CA is its CN's user, with no proxied user
        direct = MetricsServerClient(port, ca, clients.client_files(
            tmp_path / "c", "carol", "system:masters"))
        assert (await direct.get(path, user="admin"))[0] == 200
        # the front proxy's user: forbidden until RBAC allows it, asked once per 10 s
        proxy = MetricsServerClient(port, ca, front_proxy.client_files(
            tmp_path, "front-proxy-client"))
        code, status = await proxy.get(path, user="bob", groups=("viewers",))
        assert code == 403 and 'User "bob" cannot list' in status["message"]
        reviews = sum(1 for r in env.requests if r.path.startswith(SAR_PATH))
        assert (await proxy.get(path, user="bob", groups=("viewers",)))[0] == 403
        assert sum(1 for r in env.requests if r.path.startswith(SAR_PATH)) == reviews
        await env.client.create({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "metrics-reader"},
            "rules": [{"apiGroups": ["metrics.k8s.io"], "resources": ["pods", "nodes"],
                       "verbs": ["get", "list"]}]})
        await env.client.create({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "viewers-read-metrics"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "metrics-reader"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                          "name": "viewers"}]})
        # another user of the group is asked afresh (the cache is per user and request)
        code, listed = await proxy.get(path, user="dave", groups=("viewers",))
        assert (code, listed["kind"]) == (200, "PodMetricsList")
        # a bearer token is the user the API server's TokenReview says (the administrator,
        # in system:masters), a token it does not know a 401
        anyone = MetricsServerClient(port, ca)
        code, listed = await anyone.request("GET", path, token=env.cluster.token)
        assert (code, listed["kind"]) == (200, "PodMetricsList")
        code, status = await anyone.request("GET", path, token="not-a-token")
        assert (code, status["reason"]) == (401, "Unauthorized")
        # the ConfigMap is watched (configmap_cafile_content.go's informer on that one
        # object): a rotated one is taken as it is written, not at the next minute's read
        await wait_for(lambda: any(r.method == "GET" and r.code == 200
                                   and r.path == "/api/v1/namespaces/kube-system/configmaps"
                                   for r in env.requests))
        rotated = MetricsServerClient(port, ca, front_proxy.client_files(
            tmp_path / "r", "rotated-proxy"))
        code, _ = await rotated.get(path, user="admin", groups=("system:masters",))
        assert code == 401
        await publish(env.client, authentication_configmap(
            front_proxy, clients, allowed=("rotated-proxy",)))

        async def accepted() -> bool:
            code, _ = await rotated.get(path, user="admin", groups=("system:masters",))
            return code == 200

        await wait_for(accepted)
        # a certificate of a CA nobody trusts does not get through the handshake
        foreign = MetricsServerClient(port, ca, stranger.client_files(
            tmp_path / "s", "front-proxy-client"))
        try:
            code, _ = await foreign.get(path, user="admin", groups=("system:masters",))
        except aiohttp.ClientError:  # TLS alert: the server disconnects
            code = 0
        assert code == 0


async def test_registers_service_endpoints_and_apiservice_and_replaces_stale_ones(
        tmp_path: Path) -> None:
    front_proxy = CA.new("front-proxy-ca")

    async def configure(client: Client) -> None:
        await publish(client, authentication_configmap(front_proxy))
        # what a workloads process killed before this one left behind, and the CRDs
        # that served metrics.k8s.io before
        await client.create({"apiVersion": "v1", "kind": "Endpoints", "metadata": {
            "name": "metrics-server", "namespace": "kube-system"}, "subsets": [{
                "addresses": [{"ip": "127.0.0.1"}],
                "ports": [{"name": "https", "port": 1, "protocol": "TCP"}]}]})
        for plural, kind, scope in (("pods", "PodMetrics", "Namespaced"),
                                    ("nodes", "NodeMetrics", "Cluster")):
            await client.create({
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": f"{plural}.metrics.k8s.io", "annotations": {
                    "api-approved.kubernetes.io": "unapproved, test"}},
                "spec": {"group": "metrics.k8s.io", "scope": scope, "names": {
                    "plural": plural, "kind": kind}, "versions": [{
                        "name": "v1beta1", "served": True, "storage": True, "schema": {
                            "openAPIV3Schema": {"type": "object",
                                                "x-kubernetes-preserve-unknown-fields": True}}}]}})

    async with kubelet_env(before_start=configure) as env:
        async def registered() -> tuple[int, bytes] | None:
            found = await backend(env.client)
            return found if found is not None and found[0] != 1 else None

        port, ca = await wait_for(registered)
        service = await env.client.get(SERVICE, "metrics-server", namespace="kube-system")
        assert "selector" not in service["spec"]
        assert [(p["name"], p["port"], p["targetPort"]) for p in service["spec"]["ports"]] \
            == [("https", 443, "https")]
        apiservice = await env.client.get(APISERVICE, "v1beta1.metrics.k8s.io")
        spec = dict(apiservice["spec"])
        spec.pop("caBundle")
        assert spec == {"service": {"name": "metrics-server", "namespace": "kube-system",
                                    "port": 443},
                        "group": "metrics.k8s.io", "version": "v1beta1",
                        "groupPriorityMinimum": 100, "versionPriority": 100}

        async def crds_gone() -> bool:
            for name in ("pods.metrics.k8s.io", "nodes.metrics.k8s.io"):
                try:
                    await env.client.get(CRD, name)
                    return False
                except NotFoundError:
                    pass
            return True

        await wait_for(crds_gone)

        # a stop takes the address out; a restart registers the new port and CA
        await env.manager.stop()
        endpoints = await env.client.get(ENDPOINTS, "metrics-server", namespace="kube-system")
        assert not endpoints.get("subsets")
        env.manager, env.workers = build(env.client, FAST)
        await env.manager.start()
        again = await wait_for(lambda: backend(env.client))
        assert again[0] != port and again[1] != ca
        code, _ = await MetricsServerClient(again[0], again[1]).get("/healthz")
        assert code == 200


CONFIGMAPS = "/api/v1/namespaces/kube-system/configmaps"
# a generous multiple of the server's one-second retry after a failed watch
QUIET_PERIOD_S = 3.0


async def test_the_configuration_watch_survives_the_compaction_of_its_objects_revision(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """configmap_cafile_content.go follows the authentication ConfigMap with an informer,
    which never watches from the object's own revision: kube-apiserver compacts etcd every
    5 minutes (--etcd-compaction-interval), and a watch from a compacted revision is a
    410 Gone. Here every revision is compacted as soon as a newer one is written; the
    metrics server still follows the ConfigMap with one watch, where it used to retry the
    410 every second, forever."""
    monkeypatch.setattr(store_module, "DEFAULT_HISTORY_AGE_S", 0.0)
    front_proxy, clients = CA.new("front-proxy-ca"), CA.new("client-ca")

    async def configure(client: Client) -> None:
        await publish(client, authentication_configmap(front_proxy, clients))

    async with kubelet_env(before_start=configure) as env:
        port, ca = await wait_for(lambda: backend(env.client))

        def watches() -> int:  # the named watches: the ConfigMap itself is read by name
            return sum(1 for r in env.requests if r.method == "GET" and r.path == CONFIGMAPS)

        await wait_for(lambda: watches() > 0)
        # the watch takes a rotation as it is written
        rotated = MetricsServerClient(port, ca, front_proxy.client_files(
            tmp_path, "rotated-proxy"))
        path = f"{V1BETA1}/namespaces/default/pods"
        await publish(env.client, authentication_configmap(
            front_proxy, clients, allowed=("rotated-proxy",)))

        async def accepted() -> bool:
            code, _ = await rotated.get(path, user="admin", groups=("system:masters",))
            return code == 200

        await wait_for(accepted)
        started = watches()
        await quiet_period(QUIET_PERIOD_S)  # proves an absence: no watch started again
        assert watches() == started == 1
