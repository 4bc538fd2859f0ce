"""What kube-apiserver 1.32 keeps beside its aggregator: local APIServices, their order in
discovery, and the authentication ConfigMap.

Sources (kubernetes/kubernetes release-1.32):
cmd/kube-apiserver/app/aggregator.go and pkg/controlplane/apiserver/aggregator.go
(``apiVersionPriorities``, ``apiServicesToRegister``, ``makeAPIService``);
staging/src/k8s.io/kube-aggregator/pkg/controllers/autoregister/autoregister_controller.go
(``checkAPIService``: ``onstart`` synced once per start, ``true`` always);
pkg/controlplane/controller/crdregistration/crdregistration_controller.go (1000/100 per
served CRD version); kube-aggregator pkg/controllers/status/local/local_available_controller.go
(``Local``); kube-aggregator pkg/apiserver/handler_apis.go with
pkg/apis/apiregistration/v1/helper/helpers.go (``SortedByGroupAndVersion``);
kube-aggregator pkg/registry/apiservice/etcd/etcd.go (the table kubectl prints);
pkg/controlplane/controller/clusterauthenticationtrust/cluster_authentication_trust_controller.go.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import pytest_asyncio

from setpoint.client import Client, load_kubeconfig
from setpoint.cluster import RunningCluster, serve
from setpoint.workloads.metricsserver.registration import register
from tests.cluster.conftest import API
from tests.conftest import kubectl_path
from tests.waiting import quiet_period, wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")

APISERVICES = "/apis/apiregistration.k8s.io/v1/apiservices"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
AUTH_CM = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
LABEL = "kube-aggregator.kubernetes.io/automanaged"
MERGE = "application/merge-patch+json"


@dataclass
class Env:
    cluster: RunningCluster
    api: API
    workdir: Path


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Env]:
    workdir = tmp_path_factory.mktemp("aggregator-local")
    async with serve(kubeconfig=workdir / "kubeconfig") as cluster:
        headers = {"Authorization": f"Bearer {cluster.token}"}
        async with aiohttp.ClientSession(headers=headers) as session:
            yield Env(cluster, API(cluster, session), workdir)


async def _apiservice(api: API, name: str) -> dict[str, Any] | None:
    status, body = await api.get(f"{APISERVICES}/{name}")
    return body if status == 200 else None


async def _names(api: API) -> set[str]:
    _, body = await api.get(APISERVICES)
    return {item["metadata"]["name"] for item in body["items"]}


async def _served_group_versions(api: API) -> set[str]:
    """The APIService names kube-apiserver registers on start: /api/v1 and every built-in
    /apis group version but the aggregator's own (which never has one: handler_apis.go).
    The groups of CRDs and of remote APIServices other tests of the module made are not
    built in, whatever order the tests run in."""
    _, groups = await api.get("/apis", headers={"Accept": "application/json"})
    _, crds = await api.get(CRDS)
    _, apiservices = await api.get(APISERVICES)
    added = ({crd["spec"]["group"] for crd in crds["items"]}
             | {a["spec"]["group"] for a in apiservices["items"] if a["spec"].get("service")})
    names = {"v1."}
    for group in groups["groups"]:
        if group["name"] != "apiregistration.k8s.io" and group["name"] not in added:
            names.update(f"{v['version']}.{group['name']}" for v in group["versions"])
    return names


async def _group_names(api: API) -> list[str]:
    _, groups = await api.get("/apis", headers={"Accept": "application/json"})
    return [g["name"] for g in groups["groups"]]


async def _aggregated_group_names(api: API) -> list[str]:
    _, doc = await api.get("/apis", headers={"Accept": AGGREGATED})
    return [item["metadata"]["name"] for item in doc["items"]]


async def _kubectl(env: Env, *args: str) -> str:
    home = env.workdir / "home"
    home.mkdir(exist_ok=True)
    proc = await asyncio.create_subprocess_exec(
        kubectl_path(), "--kubeconfig", str(env.workdir / "kubeconfig"), "--cache-dir",
        str(env.workdir / f"cache-{uuid.uuid4().hex[:8]}"), *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)})
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, f"kubectl {' '.join(args)}: {out.decode()}{err.decode()}"
    return out.decode()


def _crd(group: str, plural: str, versions: list[tuple[str, bool]]) -> dict[str, Any]:
    kind = plural.capitalize().rstrip("s")
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": plural.rstrip("s"), "kind": kind,
                               "listKind": f"{kind}List"},
                     "versions": [{"name": name, "served": served, "storage": i == 0,
                                   "schema": schema}
                                  for i, (name, served) in enumerate(versions)]}}


def _local_available(apiservice: dict[str, Any] | None) -> bool:
    conditions = ((apiservice or {}).get("status") or {}).get("conditions") or []
    return any(c["type"] == "Available" and c["status"] == "True" and c["reason"] == "Local"
               and c["message"] == "Local APIServices are always available"
               for c in conditions)


# -- built-in group versions -------------------------------------------------------------------

async def test_every_served_builtin_group_version_has_its_onstart_apiservice(env: Env) -> None:
    """apiServicesToRegister/makeAPIService: ``<version>.<group>`` (``v1.`` for the core
    group) with apiVersionPriorities' numbers, no spec.service, labelled ``onstart``; the
    local availability controller makes each Available=True, reason Local."""
    expected = await _served_group_versions(env.api)
    await wait_for(lambda: _names_include(env.api, expected))
    priorities = {"v1.": (18000, 1), "v1.apps": (17800, 15),
                  "v1.rbac.authorization.k8s.io": (17000, 15), "v2.autoscaling": (17500, 30),
                  "v1.autoscaling": (17500, 15), "v1.apiextensions.k8s.io": (16700, 15),
                  "v1.flowcontrol.apiserver.k8s.io": (16100, 21)}
    for name in expected:
        apiservice = await wait_for(partial(_available_local, env.api, name))
        assert apiservice["metadata"]["labels"][LABEL] == "onstart"
        assert "service" not in apiservice["spec"] or apiservice["spec"]["service"] is None
        if name in priorities:
            spec = apiservice["spec"]
            assert (spec["groupPriorityMinimum"], spec["versionPriority"]) == priorities[name]
    assert "v1.apiregistration.k8s.io" not in await _names(env.api)


async def _names_include(api: API, expected: set[str]) -> bool:
    return expected <= await _names(api)


async def _available_local(api: API, name: str) -> dict[str, Any] | None:
    apiservice = await _apiservice(api, name)
    return apiservice if _local_available(apiservice) else None


async def test_kubectl_get_apiservices_lists_the_local_ones(env: Env) -> None:
    """etcd.go's table: NAME, SERVICE (``Local`` without spec.service), AVAILABLE, AGE."""
    await wait_for(lambda: _available_local(env.api, "v1.apps"))
    out = await _kubectl(env, "get", "apiservices")
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "SERVICE", "AVAILABLE", "AGE"]
    rows = {line.split()[0]: line.split()[1:3] for line in lines[1:]}
    assert rows["v1."] == ["Local", "True"]
    assert rows["v1.apps"] == ["Local", "True"]
    assert rows["v1.rbac.authorization.k8s.io"] == ["Local", "True"]


# -- CRDs --------------------------------------------------------------------------------------

async def test_each_served_crd_version_gets_an_apiservice_kept_while_the_crd_serves_it(
        env: Env) -> None:
    """crdregistration: every served version, 1000/100, labelled ``true`` (synced always:
    a deleted one is created again, a changed spec set back); a version no longer served,
    or the CRD gone, removes it."""
    group = f"kept-{uuid.uuid4().hex[:6]}.example.com"
    crd = _crd(group, "widgets", [("v1", True), ("v2beta1", True), ("v1alpha1", False)])
    status, body = await env.api.post(CRDS, crd)
    assert status == 201, body
    for version in ("v1", "v2beta1"):
        apiservice = await wait_for(partial(_available_local, env.api, f"{version}.{group}"))
        assert apiservice["metadata"]["labels"][LABEL] == "true"
        assert apiservice["spec"] == {"group": group, "version": version,
                                      "groupPriorityMinimum": 1000, "versionPriority": 100}
    assert f"v1alpha1.{group}" not in await _names(env.api)

    old_uid = (await _apiservice(env.api, f"v1.{group}"))["metadata"]["uid"]  # type: ignore[index]
    status, body = await env.api.delete(f"{APISERVICES}/v1.{group}")
    assert status == 200, body
    recreated = await wait_for(lambda: _new_uid(env.api, f"v1.{group}", old_uid))
    assert recreated["spec"]["groupPriorityMinimum"] == 1000

    status, body = await env.api.patch(f"{APISERVICES}/v1.{group}",
                                       {"spec": {"groupPriorityMinimum": 5000}}, MERGE)
    assert status == 200, body
    await wait_for(lambda: _spec_is(env.api, f"v1.{group}", "groupPriorityMinimum", 1000))

    crd_path = f"{CRDS}/widgets.{group}"
    _, live = await env.api.get(crd_path)
    live["spec"]["versions"][1]["served"] = False
    status, body = await env.api.put(crd_path, live)
    assert status == 200, body
    await wait_for(lambda: _absent(env.api, f"v2beta1.{group}"))

    status, body = await env.api.delete(crd_path)
    assert status == 200, body
    await wait_for(lambda: _absent(env.api, f"v1.{group}"))


async def _new_uid(api: API, name: str, old_uid: str) -> dict[str, Any] | None:
    apiservice = await _apiservice(api, name)
    return apiservice if apiservice and apiservice["metadata"]["uid"] != old_uid else None


async def _spec_is(api: API, name: str, field: str, value: Any) -> bool:
    apiservice = await _apiservice(api, name)
    return apiservice is not None and apiservice["spec"].get(field) == value


async def _absent(api: API, name: str) -> bool:
    return await _apiservice(api, name) is None


async def test_an_apiservice_without_the_label_is_left_alone(env: Env) -> None:
    """checkAPIService row 3: an APIService autoregister did not label is not its to keep,
    even for a CRD's version."""
    group = f"own-{uuid.uuid4().hex[:6]}.example.com"
    status, body = await env.api.post(CRDS, _crd(group, "gadgets", [("v1", True)]))
    assert status == 201, body
    await wait_for(lambda: _available_local(env.api, f"v1.{group}"))
    status, body = await env.api.patch(
        f"{APISERVICES}/v1.{group}",
        {"metadata": {"labels": {LABEL: None}}, "spec": {"groupPriorityMinimum": 4000}}, MERGE)
    assert status == 200, body
    await quiet_period()
    assert (await _apiservice(env.api, f"v1.{group}"))["spec"][  # type: ignore[index]
        "groupPriorityMinimum"] == 4000
    status, body = await env.api.delete(f"{CRDS}/gadgets.{group}")
    assert status == 200, body
    await quiet_period()
    assert await _apiservice(env.api, f"v1.{group}") is not None


# -- discovery order ---------------------------------------------------------------------------

async def test_groups_are_listed_as_handler_apis_sorts_their_apiservices(env: Env) -> None:
    """SortedByGroupAndVersion: groups by their first APIService under
    ByGroupPriorityMinimum (highest, then by *APIService name*), so of two CRD groups at
    1000 the one with ``v1.bbb…`` comes before the one with only ``v2.aaa…``; the
    built-in groups keep their order, the aggregator's own group first."""
    suffix = uuid.uuid4().hex[:6]
    first, second = f"aaa{suffix}.example.com", f"bbb{suffix}.example.com"
    for group, version in ((first, "v2"), (second, "v1")):
        status, body = await env.api.post(CRDS, _crd(group, "things", [(version, True)]))
        assert status == 201, body
    await wait_for(lambda: _groups_present(env.api, [first, second]))
    for names in (await _group_names(env.api), await _aggregated_group_names(env.api)):
        assert names.index(second) < names.index(first), names
        assert names[:3] == ["apiregistration.k8s.io", "apps", "events.k8s.io"]
    for group in (first, second):
        await env.api.delete(f"{CRDS}/things.{group}")


async def _groups_present(api: API, groups: list[str]) -> bool:
    names = await _group_names(api)
    return all(g in names for g in groups)


async def test_a_higher_group_priority_moves_a_group_ahead(env: Env) -> None:
    """An APIService's groupPriorityMinimum orders its group: a CRD group whose APIService
    is given 17900 (and no longer kept, its label removed) is listed before apps, in the
    legacy and the aggregated /apis alike."""
    group = f"early-{uuid.uuid4().hex[:6]}.example.com"
    status, body = await env.api.post(CRDS, _crd(group, "sprockets", [("v1", True)]))
    assert status == 201, body
    await wait_for(lambda: _available_local(env.api, f"v1.{group}"))
    status, body = await env.api.patch(
        f"{APISERVICES}/v1.{group}",
        {"metadata": {"labels": {LABEL: None}}, "spec": {"groupPriorityMinimum": 17900}}, MERGE)
    assert status == 200, body
    names = await _group_names(env.api)
    assert names[:3] == ["apiregistration.k8s.io", group, "apps"], names
    assert (await _aggregated_group_names(env.api))[:3] == names[:3]
    await env.api.delete(f"{CRDS}/sprockets.{group}")
    await env.api.delete(f"{APISERVICES}/v1.{group}")


# -- onstart: once per start -------------------------------------------------------------------

async def test_onstart_apiservices_are_synced_once_per_start(tmp_path: Path) -> None:
    """checkAPIService: an ``onstart`` APIService deleted or changed after the start stays
    so (2B/5B "once"); the next start creates it again (2B) and sets its spec back (5B).
    While it is deleted its group is not in /apis (kube-aggregator handler_apis.go lists
    the APIServices; handler_discovery.go removes its group-version)."""
    data = tmp_path / "data"
    async with serve(data) as cluster:
        headers = {"Authorization": f"Bearer {cluster.token}"}
        async with aiohttp.ClientSession(headers=headers) as session:
            api = API(cluster, session)
            await wait_for(lambda: _available_local(api, "v1.node.k8s.io"))
            await wait_for(lambda: _available_local(api, "v1.batch"))
            status, body = await api.delete(f"{APISERVICES}/v1.node.k8s.io")
            assert status == 200, body
            status, body = await api.patch(f"{APISERVICES}/v1.batch",
                                           {"spec": {"groupPriorityMinimum": 17900}}, MERGE)
            assert status == 200, body
            await quiet_period()
            assert await _apiservice(api, "v1.node.k8s.io") is None
            assert await _spec_is(api, "v1.batch", "groupPriorityMinimum", 17900)
            assert (await _group_names(api))[1:3] == ["batch", "apps"]
            # handler_apis.go lists the APIServices that exist, and the discovery manager
            # removes a deleted one's group-version; the delegate still serves the group
            assert "node.k8s.io" not in await _group_names(api)
            assert "node.k8s.io" not in await _aggregated_group_names(api)
            status, group = await api.get("/apis/node.k8s.io")
            assert (status, group["name"]) == (200, "node.k8s.io"), group
            status, body = await api.get("/apis/node.k8s.io/v1/runtimeclasses")
            assert status == 200, body
    async with serve(data) as cluster:
        headers = {"Authorization": f"Bearer {cluster.token}"}
        async with aiohttp.ClientSession(headers=headers) as session:
            api = API(cluster, session)
            await wait_for(lambda: _available_local(api, "v1.node.k8s.io"))
            await wait_for(lambda: _spec_is(api, "v1.batch", "groupPriorityMinimum", 17400))
            assert (await _group_names(api))[1:3] == ["apps", "events.k8s.io"]
            assert "node.k8s.io" in await _group_names(api)
            assert "node.k8s.io" in await _aggregated_group_names(api)


# -- extension-apiserver-authentication --------------------------------------------------------

async def test_the_authentication_configmap_is_created_again_when_deleted(env: Env) -> None:
    """clusterauthenticationtrust: a delete event queues the sync, which creates it with
    what the server requires (allowed names an earlier write added to it are not kept)."""
    _, before = await env.api.get(AUTH_CM)
    status, body = await env.api.delete(AUTH_CM)
    assert status == 200, body
    again = await wait_for(lambda: _configmap_with_new_uid(env.api, before["metadata"]["uid"]))
    assert again["data"] == {**before["data"],
                             "requestheader-allowed-names": '["front-proxy-client"]'}


async def _configmap_with_new_uid(api: API, uid: str) -> dict[str, Any] | None:
    status, body = await api.get(AUTH_CM)
    return body if status == 200 and body["metadata"]["uid"] != uid else None


async def test_the_authentication_configmap_is_restored_when_changed(env: Env) -> None:
    """combinedClusterAuthenticationInfo: what was written is combined with what the server
    requires (lists as an ordered union, existing entries first), keys it does not know
    are dropped, a removed key comes back."""
    _, before = await env.api.get(AUTH_CM)
    data = dict(before["data"])
    del data["requestheader-group-headers"]
    data["requestheader-allowed-names"] = orjson.dumps(["someone-else"]).decode()
    data["unrelated"] = "x"
    status, body = await env.api.patch(AUTH_CM, {"data": {
        "requestheader-group-headers": None, "unrelated": "x",
        "requestheader-allowed-names": data["requestheader-allowed-names"]}}, MERGE)
    assert status == 200, body
    restored = await wait_for(lambda: _configmap_without(env.api, "unrelated"))
    assert restored["data"]["requestheader-group-headers"] == \
        before["data"]["requestheader-group-headers"]
    assert orjson.loads(restored["data"]["requestheader-allowed-names"]) == [
        "someone-else", "front-proxy-client"]
    assert restored["data"]["client-ca-file"] == before["data"]["client-ca-file"]


async def _configmap_without(api: API, key: str) -> dict[str, Any] | None:
    status, body = await api.get(AUTH_CM)
    return body if status == 200 and key not in (body.get("data") or {}) else None


# -- metrics-server taking over the legacy CRDs' group --------------------------------------

async def test_metrics_server_takes_over_the_apiservice_its_legacy_crds_had(env: Env) -> None:
    """The legacy pods.metrics.k8s.io CRD gave v1beta1.metrics.k8s.io a local APIService
    labelled ``true`` (crdregistration). metrics-server's registration deletes the CRDs and
    writes its own APIService; were the label left on it, autoregister would delete that
    APIService once the CRDs are gone (checkAPIService row 6A). A finalizer holds the CRD
    until after the registration, the order in which the race loses it."""
    crd = _crd("metrics.k8s.io", "pods", [("v1beta1", True)])
    crd["metadata"]["finalizers"] = ["example.com/hold"]
    crd["metadata"]["annotations"] = {"api-approved.kubernetes.io": "unapproved, test"}
    status, body = await env.api.post(CRDS, crd)
    assert status == 201, body
    legacy = await wait_for(partial(_available_local, env.api, "v1beta1.metrics.k8s.io"))
    assert legacy["metadata"]["labels"][LABEL] == "true"
    async with Client(load_kubeconfig(env.workdir / "kubeconfig")) as client:
        await register(client, "metrics-server", "kube-system", 1, env.cluster.ca_file.read_bytes())
    crd_path = f"{CRDS}/pods.metrics.k8s.io"
    status, body = await env.api.patch(crd_path, {"metadata": {"finalizers": None}}, MERGE)
    assert status == 200, body
    await wait_for(lambda: _crd_gone(env.api, crd_path))
    await quiet_period()
    apiservice = await _apiservice(env.api, "v1beta1.metrics.k8s.io")
    assert apiservice is not None
    assert LABEL not in apiservice["metadata"].get("labels", {})
    assert apiservice["spec"]["service"]["name"] == "metrics-server"


async def _crd_gone(api: API, path: str) -> bool:
    status, _ = await api.get(path)
    return status == 404
