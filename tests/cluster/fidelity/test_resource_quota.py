"""ResourceQuota: the admission plugin refuses and charges, the controller counts.

kubernetes v1.32:
- plugin/pkg/admission/resourcequota/admission.go ``Validate`` and
  staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go
  ``checkRequest`` / ``checkQuotas``: 403 ``exceeded quota: NAME, requested: ..., used: ...,
  limited: ...``; ``status unknown for quota: NAME, resources: ...`` while the status lacks
  a usage; ``failed quota: NAME: must specify ...`` (pkg/quota/v1/evaluator/core/pods.go
  ``Constraints``); the charge written to ``status.used`` as part of admission, not for a
  dry run.
- pkg/controller/resourcequota/resource_quota_controller.go ``syncResourceQuota``:
  ``status.hard`` from ``spec.hard``, ``status.used`` recomputed by listing (objects created
  before the quota count), replenished when objects are deleted.
- pkg/quota/v1/evaluator/core: pods.go (usage, terminal pods, scopes), services.go,
  persistent_volume_claims.go; k8s.io/apiserver/pkg/quota/v1/generic/evaluator.go (object
  counts, ``count/<resource>.<group>``).
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from kubernetes import client, config

from tests.cluster.conftest import API
from tests.cluster.fidelity.conftest import Kubectl
from tests.waiting import wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def ns_path(ns: str) -> str:
    return f"/api/v1/namespaces/{ns}"


async def namespace(api: API, name: str) -> str:
    status, out = await api.post("/api/v1/namespaces", {"metadata": {"name": name}})
    assert status == 201, out
    return name


async def quota(api: API, ns: str, name: str, hard: dict[str, str],
                **spec: Any) -> dict[str, Any]:
    """Create a quota and wait for the controller's first status (every hard limit used)."""
    status, out = await api.post(f"{ns_path(ns)}/resourcequotas",
                                 {"metadata": {"name": name}, "spec": {"hard": hard, **spec}})
    assert status == 201, out
    return await used_when(api, ns, name, lambda used: set(used) == set(hard))


async def used_when(api: API, ns: str, name: str, check: Any) -> dict[str, Any]:
    async def read() -> dict[str, str] | None:
        status, out = await api.get(f"{ns_path(ns)}/resourcequotas/{name}")
        assert status == 200, out
        used = (out.get("status") or {}).get("used")
        return used if used is not None and check(used) else None

    result: dict[str, Any] = await wait_for(read)
    return result


def pod(name: str, **container: Any) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox", **container}]}}


async def test_kubectl_quota_refuses_the_create_beyond_it_and_stores_nothing(
        module_api: API, module_kubectl: Kubectl) -> None:
    """``kubectl create quota``, then pods and configmaps up to the limit; the next one is a
    403 with checkRequest's message and is not stored; ``kubectl describe quota`` shows the
    usage (count/configmaps counts the namespace's kube-root-ca.crt too)."""
    ns = await namespace(module_api, "rq-kubectl")
    code, out, err = await module_kubectl("create", "quota", "q", "-n", ns,
                                          "--hard=pods=2,count/configmaps=3")
    assert code == 0, err
    await used_when(module_api, ns, "q",
                    lambda used: used == {"pods": "0", "count/configmaps": "1"})
    for i in range(2):
        status, out = await module_api.post(f"{ns_path(ns)}/pods", pod(f"p{i}"))
        assert status == 201, out
        status, out = await module_api.post(f"{ns_path(ns)}/configmaps",
                                            {"metadata": {"name": f"c{i}"}})
        assert status == 201, out
    status, out = await module_api.post(f"{ns_path(ns)}/pods", pod("p2"))
    assert status == 403, out
    assert out["reason"] == "Forbidden"
    assert out["message"] == ('pods "p2" is forbidden: exceeded quota: q, requested: pods=1, '
                              "used: pods=2, limited: pods=2")
    assert out["details"] == {"name": "p2", "kind": "pods"}
    status, out = await module_api.post(f"{ns_path(ns)}/configmaps",
                                        {"metadata": {"name": "c2"}})
    assert status == 403, out
    assert out["message"] == (
        'configmaps "c2" is forbidden: exceeded quota: q, requested: count/configmaps=1, '
        "used: count/configmaps=3, limited: count/configmaps=3")
    assert (await module_api.get(f"{ns_path(ns)}/pods/p2"))[0] == 404
    assert (await module_api.get(f"{ns_path(ns)}/configmaps/c2"))[0] == 404
    code, out, err = await module_kubectl("describe", "quota", "q", "-n", ns)
    assert code == 0, err
    assert re.search(r"^count/configmaps\s+3\s+3$", out, re.M), out
    assert re.search(r"^pods\s+2\s+2$", out, re.M), out


async def test_used_follows_creates_and_deletes(module_api: API) -> None:
    """Admission charges each create; the controller gives back what a delete frees."""
    ns = await namespace(module_api, "rq-follow")
    await quota(module_api, ns, "q", {"secrets": "5", "count/secrets": "5"})
    status, _ = await module_api.post(f"{ns_path(ns)}/secrets", {"metadata": {"name": "s"}})
    assert status == 201
    status, out = await module_api.get(f"{ns_path(ns)}/resourcequotas/q")
    assert out["status"]["used"] == {"count/secrets": "1", "secrets": "1"}  # at once
    status, _ = await module_api.delete(f"{ns_path(ns)}/secrets/s")
    assert status == 200
    await used_when(module_api, ns, "q",
                    lambda used: used == {"count/secrets": "0", "secrets": "0"})


async def test_a_quota_created_after_objects_counts_them(module_api: API) -> None:
    """syncResourceQuota lists what is there: pods with their requests and limits, services
    by type, claims by storage class, any resource by ``count/<resource>.<group>``."""
    ns = await namespace(module_api, "rq-after")
    resources = {"requests": {"cpu": "250m", "memory": "64Mi"},
                 "limits": {"cpu": "500m", "memory": "128Mi"}}
    for i in range(2):
        status, out = await module_api.post(f"{ns_path(ns)}/pods",
                                            pod(f"p{i}", resources=resources))
        assert status == 201, out
    status, out = await module_api.post(f"{ns_path(ns)}/services", {
        "metadata": {"name": "np"},
        "spec": {"type": "NodePort", "ports": [{"name": "a", "port": 80},
                                                {"name": "b", "port": 81}]}})
    assert status == 201, out
    status, out = await module_api.post(f"{ns_path(ns)}/persistentvolumeclaims", {
        "metadata": {"name": "claim"},
        "spec": {"storageClassName": "fast", "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "1Gi"}}}})
    assert status == 201, out
    status, out = await module_api.post(f"/apis/apps/v1/namespaces/{ns}/deployments", {
        "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}},
                              "spec": pod("x")["spec"]}}})
    assert status == 201, out
    hard = {"pods": "10", "requests.cpu": "2", "limits.memory": "1Gi",
            "services": "5", "services.nodeports": "5", "services.loadbalancers": "1",
            "requests.storage": "10Gi",
            "fast.storageclass.storage.k8s.io/requests.storage": "5Gi",
            "count/deployments.apps": "3"}
    used = await quota(module_api, ns, "q", hard)
    assert used == {"pods": "2", "requests.cpu": "500m", "limits.memory": "256Mi",
                    "services": "1", "services.nodeports": "2", "services.loadbalancers": "0",
                    "requests.storage": "1Gi",
                    "fast.storageclass.storage.k8s.io/requests.storage": "1Gi",
                    "count/deployments.apps": "1"}


async def test_dry_run_is_checked_but_not_charged(module_api: API) -> None:
    """checkQuotas: a dry-run create that fits changes no usage; one that does not is
    refused as the real one would be."""
    ns = await namespace(module_api, "rq-dry")
    await quota(module_api, ns, "q", {"services": "1"})
    status, out = await module_api.post(f"{ns_path(ns)}/services?dryRun=All",
                                        {"metadata": {"name": "a"},
                                         "spec": {"ports": [{"port": 80}]}})
    assert status == 201, out
    status, out = await module_api.get(f"{ns_path(ns)}/resourcequotas/q")
    assert out["status"]["used"] == {"services": "0"}
    status, out = await module_api.post(f"{ns_path(ns)}/services",
                                        {"metadata": {"name": "b"},
                                         "spec": {"ports": [{"port": 80}]}})
    assert status == 201, out
    status, out = await module_api.post(f"{ns_path(ns)}/services?dryRun=All",
                                        {"metadata": {"name": "c"},
                                         "spec": {"ports": [{"port": 80}]}})
    assert status == 403, out
    assert out["message"] == ('services "c" is forbidden: exceeded quota: q, requested: '
                              "services=1, used: services=1, limited: services=1")


async def test_compute_quota_requires_each_container_to_name_its_resources(
        module_api: API) -> None:
    """pods.go Constraints: with cpu or memory quota'd, a container without them is refused."""
    ns = await namespace(module_api, "rq-compute")
    await quota(module_api, ns, "q", {"limits.cpu": "2", "requests.memory": "1Gi"})
    body = pod("p")
    body["spec"]["initContainers"] = [{"name": "init", "image": "busybox",
                                       "resources": {"limits": {"cpu": "1"}}}]
    status, out = await module_api.post(f"{ns_path(ns)}/pods", body)
    assert status == 403, out
    # (the init container's cpu limit defaulted its cpu request, not its memory)
    assert out["message"] == ('pods "p" is forbidden: failed quota: q: must specify '
                              "limits.cpu for: c; requests.memory for: c,init")


async def test_scopes_choose_the_pods_a_quota_counts(module_api: API) -> None:
    """podMatchesScopeFunc: BestEffort / NotBestEffort by QoS, Terminating by
    activeDeadlineSeconds, PriorityClass by the scope selector."""
    ns = await namespace(module_api, "rq-scopes")
    await quota(module_api, ns, "best", {"pods": "1"}, scopes=["BestEffort"])
    await quota(module_api, ns, "notbest", {"pods": "5"}, scopes=["NotBestEffort"])
    await quota(module_api, ns, "terminating", {"pods": "5"}, scopes=["Terminating"])
    await quota(module_api, ns, "high", {"pods": "5"}, scopeSelector={"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]})
    status, out = await module_api.post(f"{ns_path(ns)}/pods", pod("be"))
    assert status == 201, out
    status, out = await module_api.post(f"{ns_path(ns)}/pods", pod("be2"))
    assert status == 403, out
    assert "exceeded quota: best, requested: pods=1, used: pods=1, limited: pods=1" \
        in out["message"]
    burstable = pod("burst", resources={"requests": {"cpu": "100m"}})
    burstable["spec"]["activeDeadlineSeconds"] = 30
    status, out = await module_api.post(f"{ns_path(ns)}/pods", burstable)
    assert status == 201, out
    used = {}
    for name in ("best", "notbest", "terminating", "high"):
        status, out = await module_api.get(f"{ns_path(ns)}/resourcequotas/{name}")
        used[name] = out["status"]["used"]
    assert used == {"best": {"pods": "1"}, "notbest": {"pods": "1"},
                    "terminating": {"pods": "1"}, "high": {"pods": "0"}}


async def test_the_python_client_sees_usage_and_the_refusal(module_api: API) -> None:
    """The official client reads ``status.used`` and gets the 403 as an ApiException."""
    ns = await namespace(module_api, "rq-client")
    await quota(module_api, ns, "q", {"count/services": "1"})
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(module_api.cluster.kubeconfig),
                            client_configuration=configuration)

    def calls() -> tuple[dict[str, str] | None, client.ApiException]:
        with client.ApiClient(configuration) as api_client:
            core = client.CoreV1Api(api_client)

            def service(name: str) -> client.V1Service:
                return client.V1Service(
                    metadata=client.V1ObjectMeta(name=name),
                    spec=client.V1ServiceSpec(ports=[client.V1ServicePort(port=80)]))

            core.create_namespaced_service(ns, service("s"))
            status = core.read_namespaced_resource_quota("q", ns).status
            used = status.used if status is not None else None
            try:
                core.create_namespaced_service(ns, service("t"))
            except client.ApiException as err:
                return used, err
            raise AssertionError("the second service was admitted")

    used, err = await asyncio.to_thread(calls)
    assert used == {"count/services": "1"}
    assert err.status == 403
    assert json.loads(err.body or "{}")["message"] == (
        'services "t" is forbidden: exceeded quota: q, requested: count/services=1, '
        "used: count/services=1, limited: count/services=1")


async def test_custom_resources_are_counted_by_count_resource_group(module_api: API) -> None:
    """generic.NewObjectCountEvaluator: ``count/gadgets.quota.example.com`` counts and limits
    a custom resource's objects (the controller counting those created before the quota)."""
    ns = await namespace(module_api, "rq-custom")
    status, out = await module_api.post(CRDS, {
        "metadata": {"name": "gadgets.quota.example.com"},
        "spec": {"group": "quota.example.com", "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                     "openAPIV3Schema": {"type": "object"}}}]}})
    assert status == 201, out
    gadgets = f"/apis/quota.example.com/v1/namespaces/{ns}/gadgets"

    async def served() -> bool:
        return (await module_api.get(gadgets))[0] == 200

    await wait_for(served)
    status, out = await module_api.post(gadgets, {"apiVersion": "quota.example.com/v1",
                                                  "kind": "Gadget", "metadata": {"name": "a"}})
    assert status == 201, out
    assert await quota(module_api, ns, "q", {"count/gadgets.quota.example.com": "1"}) == {
        "count/gadgets.quota.example.com": "1"}
    status, out = await module_api.post(gadgets, {"apiVersion": "quota.example.com/v1",
                                                  "kind": "Gadget", "metadata": {"name": "b"}})
    assert status == 403, out
    assert out["message"] == (
        'gadgets.quota.example.com "b" is forbidden: exceeded quota: q, requested: '
        "count/gadgets.quota.example.com=1, used: count/gadgets.quota.example.com=1, "
        "limited: count/gadgets.quota.example.com=1")
    assert out["details"] == {"name": "b", "group": "quota.example.com", "kind": "gadgets"}


async def test_a_resize_is_charged_and_refused_beyond_the_quota(module_api: API) -> None:
    """kubernetes v1.32 pkg/quota/v1/evaluator/core/pods.go ``Handles``: ``pods/resize`` on
    UPDATE is evaluated (k8s.io/apiserver v0.32.0 resourcequota/admission.go ``Validate``
    no longer skips subresources, commit "support for resize subresource in ResourceQuota
    admission"); the charge is the delta between the resized pod's usage and the stored
    one's (controller.go ``CheckRequest``). Other subresources (binding, status) are not
    evaluated: generic/evaluator.go ``Handles`` and pods.go's ``default: return false``."""
    ns = await namespace(module_api, "rq-resize")
    await quota(module_api, ns, "q", {"requests.cpu": "1", "limits.cpu": "2"})
    status, out = await module_api.post(
        f"{ns_path(ns)}/pods",
        pod("p", resources={"requests": {"cpu": "500m"}, "limits": {"cpu": "1"}}))
    assert status == 201, out
    await used_when(module_api, ns, "q", lambda u: u["requests.cpu"] == "500m")

    def resize(request: str, limit: str) -> dict[str, Any]:
        return {"spec": {"containers": [{"name": "c", "resources": {
            "requests": {"cpu": request}, "limits": {"cpu": limit}}}]}}

    path = f"{ns_path(ns)}/pods/p/resize"
    merge = "application/strategic-merge-patch+json"
    status, out = await module_api.patch(path, resize("800m", "1"), merge)
    assert status == 200, out
    status, out = await module_api.get(f"{ns_path(ns)}/resourcequotas/q")
    assert out["status"]["used"] == {"requests.cpu": "800m", "limits.cpu": "1"}
    status, out = await module_api.patch(path, resize("1500m", "3"), merge)
    assert status == 403, out
    assert out["reason"] == "Forbidden" and out["details"] == {"name": "p", "kind": "pods"}
    assert out["message"] == (
        'pods "p" is forbidden: exceeded quota: q, requested: limits.cpu=2,requests.cpu=700m,'
        " used: limits.cpu=1,requests.cpu=800m, limited: limits.cpu=2,requests.cpu=1")
    status, out = await module_api.get(f"{ns_path(ns)}/pods/p")
    assert out["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "800m"}
    # a status write (not evaluated) with a quota that cannot fit another pod still passes
    out["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    status, out = await module_api.put(f"{ns_path(ns)}/pods/p/status", out)
    assert status == 200, out


async def test_a_pending_resize_is_charged_at_its_larger_side(module_api: API) -> None:
    """k8s.io/component-helpers v1.32 resource/helpers.go ``AggregateContainerRequests``
    with ``UseStatusResources`` (pods.go ``PodUsageFunc``, InPlacePodVerticalScaling on):
    each regular container counts the larger of its spec and its status ``resources``, so a
    resize down is not credited until the kubelet applied it."""
    ns = await namespace(module_api, "rq-pending")
    status, out = await module_api.post(
        f"{ns_path(ns)}/pods", pod("p", resources={"requests": {"cpu": "800m"}}))
    assert status == 201, out
    out["status"]["containerStatuses"] = [{
        "name": "c", "image": "busybox", "imageID": "", "ready": True, "restartCount": 0,
        "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}},
        "resources": {"requests": {"cpu": "800m"}}}]
    status, out = await module_api.put(f"{ns_path(ns)}/pods/p/status", out)
    assert status == 200, out
    status, out = await module_api.patch(
        f"{ns_path(ns)}/pods/p/resize",
        {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "300m"}}}]}},
        "application/strategic-merge-patch+json")
    assert status == 200, out
    assert out["status"]["resize"] == "Proposed"
    await quota(module_api, ns, "q", {"requests.cpu": "2"})
    status, out = await module_api.get(f"{ns_path(ns)}/resourcequotas/q")
    assert out["status"]["used"] == {"requests.cpu": "800m"}
