"""metadata.generation and immutable fields as apiequality.Semantic.DeepEqual decides them.

A built-in kind is compared as its typed Go struct (k8s.io/apimachinery third_party/forked/
golang/reflect/deep_equal.go with equateNilAndEmpty: a nil and an empty slice or map are
equal), a custom resource as map[string]interface{} (an interface holding nil is not one
holding an empty slice, and an int64 is not a float64 or a bool). All tests share one server
(``module_api``) and write objects of their own names.
"""

from __future__ import annotations

import zlib
from typing import Any

import pytest
import pytest_asyncio

from tests.cluster.conftest import API
from tests.cluster.fidelity.writes import WIDGETS, create_widget_crd

pytestmark = pytest.mark.asyncio(loop_scope="module")

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
JOBS = "/apis/batch/v1/namespaces/default/jobs"
SERVICES = "/api/v1/namespaces/default/services"
PODS = "/api/v1/namespaces/default/pods"
CONTAINERS = [{"name": "c", "image": "nginx"}]


async def _put(api: API, path: str, change: Any) -> dict[str, Any]:
    """Read ``path``, apply ``change`` to it, write it back; the answer of the update."""
    status, current = await api.get(path)
    assert status == 200, current
    change(current)
    status, out = await api.put(path, current)
    assert status == 200, out
    assert isinstance(out, dict)
    return out


def _pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]["template"]["spec"]
    return spec


@pytest.mark.parametrize(("field", "value"), [
    ("tolerations", []), ("tolerations", None), ("nodeSelector", {}), ("volumes", []),
    ("imagePullSecrets", [])])
async def test_a_deployment_spec_differing_by_nil_or_empty_keeps_its_generation(
        module_api: API, field: str, value: Any) -> None:
    """Rule: an update whose template differs from the stored one only by a nil, absent or
    empty list or map is no spec change: the generation stays; a real change moves it.
    Source: pkg/registry/apps/deployment/strategy.go PrepareForUpdate
    (``!apiequality.Semantic.DeepEqual(newDeployment.Spec, oldDeployment.Spec)``)."""
    name = f"nil-empty-{field.lower()}-{'none' if value is None else 'empty'}"
    status, out = await module_api.post(DEPLOYMENTS, {
        "metadata": {"name": name}, "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": CONTAINERS}}}})
    assert status == 201, out
    assert out["metadata"]["generation"] == 1
    out = await _put(module_api, f"{DEPLOYMENTS}/{name}",
                     lambda d: _pod_spec(d).__setitem__(field, value))
    assert out["metadata"]["generation"] == 1
    out = await _put(module_api, f"{DEPLOYMENTS}/{name}",
                     lambda d: _pod_spec(d).__setitem__("hostname", "h"))
    assert out["metadata"]["generation"] == 2


@pytest.mark.parametrize("field", ["endpoints", "ports"])
async def test_an_endpointslice_list_written_empty_for_null_keeps_its_generation(
        module_api: API, field: str) -> None:
    """Rule: an EndpointSlice's ``endpoints`` and ``ports`` (not omitempty: stored empty, they
    read back ``null``) written back as ``[]`` leave the generation where it was.
    Source: pkg/registry/discovery/endpointslice/strategy.go PrepareForUpdate
    (``!apiequality.Semantic.DeepEqual(newEPS, oldEPS)``, metadata aside)."""
    name = f"nil-empty-{field}"
    status, out = await module_api.post(SLICES, {
        "metadata": {"name": name}, "addressType": "IPv4", "endpoints": [], "ports": []})
    assert status == 201, out
    assert out[field] is None
    out = await _put(module_api, f"{SLICES}/{name}", lambda s: s.__setitem__(field, []))
    assert out["metadata"]["generation"] == 1
    out = await _put(module_api, f"{SLICES}/{name}", lambda s: s.__setitem__(
        "endpoints", [{"addresses": ["10.0.0.1"]}]))
    assert out["metadata"]["generation"] == 2


async def test_an_immutable_job_field_written_empty_for_null_is_unchanged(
        module_api: API) -> None:
    """Rule: a Job's ``podFailurePolicy`` with ``rules: []`` for the stored ``rules: null``
    is the same value (no "field is immutable"); a changed policy is refused.
    Source: pkg/apis/batch/validation/validation.go ValidateJobSpecUpdate, through
    pkg/apis/core/validation ValidateImmutableField (apiequality.Semantic.DeepEqual)."""
    status, out = await module_api.post(JOBS, {"metadata": {"name": "nil-empty-job"}, "spec": {
        "podFailurePolicy": {"rules": []},
        "template": {"spec": {"restartPolicy": "Never", "containers": CONTAINERS}}}})
    assert status == 201, out
    path = f"{JOBS}/nil-empty-job"
    out = await _put(module_api, path,
                     lambda j: j["spec"]["podFailurePolicy"].__setitem__("rules", []))
    assert out["metadata"]["generation"] == 1
    status, current = await module_api.get(path)
    current["spec"]["podFailurePolicy"]["rules"] = [{"action": "FailJob", "onExitCodes": {
        "operator": "In", "values": [3]}}]
    status, out = await module_api.put(path, current)
    assert status == 422, out
    assert [c["field"] for c in out["details"]["causes"]] == ["spec.podFailurePolicy"]


async def test_services_and_pods_keep_no_generation(module_api: API) -> None:
    """Rule: Services and Pods have no generation in 1.32: their strategies' PrepareForUpdate
    never set one, and rest.BeforeUpdate keeps the stored (absent) one, whatever changes.
    Source: pkg/registry/core/service/strategy.go and pkg/registry/core/pod/strategy.go
    (PrepareForUpdate: no Generation), k8s.io/apiserver pkg/registry/rest/update.go
    BeforeUpdate ("Ensure requests cannot update generation")."""
    status, out = await module_api.post(SERVICES, {
        "metadata": {"name": "nil-empty-svc"}, "spec": {"ports": [{"port": 80}]}})
    assert status == 201, out
    out = await _put(module_api, f"{SERVICES}/nil-empty-svc", lambda s: s["spec"].update(
        {"ports": [{"port": 81}], "externalIPs": [], "selector": {}}))
    assert out["spec"]["ports"][0]["port"] == 81
    assert "generation" not in out["metadata"]
    status, out = await module_api.post(PODS, {
        "metadata": {"name": "nil-empty-pod"}, "spec": {"containers": CONTAINERS}})
    assert status == 201, out
    out = await _put(module_api, f"{PODS}/nil-empty-pod", lambda p: p["spec"].update(
        {"tolerations": [], "activeDeadlineSeconds": 30}))
    assert out["spec"]["activeDeadlineSeconds"] == 30
    assert "generation" not in out["metadata"]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def widgets(module_api: API) -> API:
    await create_widget_crd(module_api)
    return module_api


@pytest.mark.parametrize(("before", "after", "moves"), [
    ({}, {"x": {}}, True),            # a key added, even empty: maps of different lengths
    ({"x": None}, {"x": []}, True),   # an interface holding nil, one holding a slice
    ({"x": []}, {"x": []}, False),
    ({"x": 1}, {"x": True}, True),    # int64 and bool: different types
    ({"x": 1}, {"x": 1.5}, True),
    ({"x": {"y": [1, "a"]}}, {"x": {"y": [1, "a"]}}, False),
])
async def test_a_custom_resource_generation_follows_the_unstructured_comparison(
        widgets: API, before: dict[str, Any], after: dict[str, Any], moves: bool) -> None:
    """Rule: a custom resource's generation moves when anything but metadata (and status,
    with the status subresource) differs as map[string]interface{}: nil and empty are not
    equal there, nor values of different Go types.
    Source: apiextensions-apiserver pkg/registry/customresource/strategy.go PrepareForUpdate
    (``!apiequality.Semantic.DeepEqual(newCopyContent, oldCopyContent)``); apimachinery
    third_party/forked/golang/reflect/deep_equal.go (reflect.Interface: nil only equals nil;
    values of different types are unequal)."""
    name = f"gen-{zlib.crc32(repr((before, after)).encode())}"
    status, out = await widgets.post(WIDGETS, {
        "apiVersion": "fidelity.example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": {"size": 1, "free": before}})
    assert status == 201, out
    out = await _put(widgets, f"{WIDGETS}/{name}", lambda w: w["spec"].__setitem__(
        "free", after))
    assert out["metadata"]["generation"] == (2 if moves else 1)


STATEFULSETS = "/apis/apps/v1/namespaces/default/statefulsets"
DAEMONSETS = "/apis/apps/v1/namespaces/default/daemonsets"
CRONJOBS = "/apis/batch/v1/namespaces/default/cronjobs"


def _template(name: str, restart: str = "Always") -> dict[str, Any]:
    return {"metadata": {"labels": {"app": name}},
            "spec": {"restartPolicy": restart, "containers": [{"name": "c", "image": "nginx"}]}}


def _workload(kind: str, name: str) -> tuple[str, dict[str, Any], Any]:
    """(collection, body, the pod spec of an object of it) of a workload ``kind``."""
    selector = {"matchLabels": {"app": name}}
    if kind == "Deployment":
        return DEPLOYMENTS, {"metadata": {"name": name}, "spec": {
            "selector": selector, "template": _template(name)}}, _pod_spec
    if kind == "StatefulSet":
        return STATEFULSETS, {"metadata": {"name": name}, "spec": {
            "selector": selector, "serviceName": name, "template": _template(name)}}, _pod_spec
    if kind == "DaemonSet":
        return DAEMONSETS, {"metadata": {"name": name}, "spec": {
            "selector": selector, "template": _template(name)}}, _pod_spec
    if kind == "Job":
        return JOBS, {"metadata": {"name": name}, "spec": {
            "template": {"spec": _template(name, "Never")["spec"]}}}, _pod_spec
    return CRONJOBS, {"metadata": {"name": name}, "spec": {
        "schedule": "*/5 * * * *", "jobTemplate": {"spec": {
            "template": {"spec": _template(name, "Never")["spec"]}}}}}, \
        lambda c: c["spec"]["jobTemplate"]["spec"]["template"]["spec"]


def _zero_values(kind: str, obj: dict[str, Any], pod_spec: Any) -> None:
    """Write the zero value of non-pointer members the stored object lacks (each Go type's
    ``omitempty`` member: absent in JSON, zero in the struct)."""
    spec = pod_spec(obj)
    spec.update({"hostNetwork": False, "hostPID": False, "nodeName": "",
                 "serviceAccountName": ""})
    spec["containers"][0].update({"stdin": False, "tty": False, "stdinOnce": False,
                                  "workingDir": ""})
    if kind in ("Deployment", "StatefulSet", "DaemonSet"):
        obj["spec"]["minReadySeconds"] = 0
    if kind == "Deployment":
        obj["spec"]["paused"] = False
    if kind == "CronJob":
        obj["spec"]["jobTemplate"]["spec"]["template"]["metadata"] = {"creationTimestamp": None}


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob"])
async def test_a_non_pointer_member_written_as_its_zero_value_keeps_the_generation(
        module_api: API, kind: str) -> None:
    """Rule: a built-in kind is a Go struct: a non-pointer member the stored object lacks
    (``omitempty`` dropped its zero) and the update writes as that zero value (``0``,
    ``false``, ``""``) is the same struct, so the generation stays; a pointer member written
    as ``false`` where it was absent (nil) is a change and moves it.
    Source: pkg/registry/{apps/deployment,apps/statefulset,apps/daemonset,batch/job,
    batch/cronjob}/strategy.go PrepareForUpdate (``!apiequality.Semantic.DeepEqual(new.Spec,
    old.Spec)``); k8s.io/api apps/v1/types.go (``MinReadySeconds int32
    `json:"minReadySeconds,omitempty"```, ``Paused bool `json:"paused,omitempty"```),
    core/v1/types.go (Container ``Stdin bool `json:"stdin,omitempty"```, SecurityContext
    ``Privileged *bool``)."""
    name = f"zero-{kind.lower()}"
    collection, body, pod_spec = _workload(kind, name)
    status, out = await module_api.post(collection, body)
    assert status == 201, out
    generation = out["metadata"]["generation"]
    out = await _put(module_api, f"{collection}/{name}",
                     lambda o: _zero_values(kind, o, pod_spec))
    assert out["metadata"]["generation"] == generation
    if kind == "Job":  # its template is immutable: the pointer case is the test below
        return
    out = await _put(module_api, f"{collection}/{name}", lambda o: pod_spec(o)["containers"][0]
                     .__setitem__("securityContext", {"privileged": False}))
    assert out["metadata"]["generation"] == generation + 1
    out = await _put(module_api, f"{collection}/{name}", lambda o: pod_spec(o)["containers"][0]
                     ["securityContext"].__setitem__("allowPrivilegeEscalation", False))
    assert out["metadata"]["generation"] == generation + 2


async def test_an_immutable_job_template_written_with_zero_values_is_unchanged(
        module_api: API) -> None:
    """Rule: a Job's template is immutable (but while suspended and never started); writing
    its non-pointer members' zero values where the stored template lacks them is no change,
    whereas a pointer member's ``false`` where it was nil is ("field is immutable").
    Source: pkg/apis/batch/validation/validation.go ValidateJobSpecUpdate
    (``ValidateImmutableField(spec.Template, oldSpec.Template, ...)``, apiequality.Semantic
    .DeepEqual over core.PodTemplateSpec); k8s.io/api core/v1/types.go (Container ``TTY bool
    `json:"tty,omitempty"```, PodSpec ``HostIPC bool `json:"hostIPC,omitempty"```,
    SecurityContext ``RunAsNonRoot *bool``)."""
    name = "zero-immutable-job"
    status, out = await module_api.post(JOBS, {"metadata": {"name": name}, "spec": {
        "template": {"spec": _template(name, "Never")["spec"]}}})
    assert status == 201, out
    path = f"{JOBS}/{name}"

    def zeros(job: dict[str, Any]) -> None:
        _pod_spec(job).update({"hostIPC": False, "shareProcessNamespace": None})
        _pod_spec(job)["containers"][0].update({"tty": False, "stdin": False})

    out = await _put(module_api, path, zeros)
    assert out["metadata"]["generation"] == 1
    status, current = await module_api.get(path)
    _pod_spec(current)["containers"][0]["securityContext"] = {"runAsNonRoot": False}
    status, out = await module_api.put(path, current)
    assert status == 422, out
    assert [c["field"] for c in out["details"]["causes"]] == ["spec.template"]
