"""Server-side apply and managed fields, audited against kube-apiserver 1.32.

Each test is one rule read from the source it cites; all share one server (``module_api``)
and write objects of their own names, deleted at the end.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest

from tests.cluster.conftest import API

pytestmark = pytest.mark.asyncio(loop_scope="module")

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
MERGE = "application/merge-patch+json"
APPLY = "application/apply-patch+yaml"


def _managers(obj: dict[str, Any]) -> list[str]:
    return [e["manager"] for e in obj["metadata"].get("managedFields") or []]


@pytest.mark.parametrize("how", ["put", "merge-patch"])
async def test_an_empty_managed_fields_list_in_an_update_clears_them(
        module_api: API, how: str) -> None:
    """Rule: an update whose object carries ``managedFields: []`` (non-nil, empty) resets the
    tracking: the entries are dropped, the object is written (a new resourceVersion) and,
    the live object now being untracked, later updates record nothing until an apply.
    Source: k8s.io/apimachinery pkg/util/managedfields/internal/fieldmanager.go
    (decodeLiveOrNew, isResetManagedFields: "the list is non-nil but empty") and
    skipnonapplied.go (an update of an object without managed fields is not tracked)."""
    name = f"reset-{how}"
    status, created = await module_api.post(f"{CONFIGMAPS}?fieldManager=creator", {
        "metadata": {"name": name}, "data": {"k": "v"}})
    assert status == 201, created
    try:
        if how == "put":
            status, out = await module_api.put(
                f"{CONFIGMAPS}/{name}?fieldManager=upd",
                {"metadata": {"name": name, "managedFields": []}, "data": {"k": "v"}})
        else:
            status, out = await module_api.patch(f"{CONFIGMAPS}/{name}?fieldManager=upd",
                                                 {"metadata": {"managedFields": []}}, MERGE)
        assert status == 200, out
        assert "managedFields" not in out["metadata"]
        assert out["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
        status, out = await module_api.patch(f"{CONFIGMAPS}/{name}?fieldManager=later",
                                             {"data": {"n": "1"}}, MERGE)
        assert status == 200, out
        assert "managedFields" not in out["metadata"]
    finally:
        await module_api.delete(f"{CONFIGMAPS}/{name}")


async def test_a_conflict_names_its_manager_as_go_quotes_it(module_api: API) -> None:
    """Rule: a conflict names the other manager with ``%q`` (a quote or backslash in the
    name escaped), an Update manager followed by ``using <apiVersion>``, and several
    conflicts are listed per manager. Source: k8s.io/apimachinery
    pkg/util/managedfields/internal/conflict.go (printManager: ``fmt.Sprintf("%q", ...)``,
    getConflictMessage)."""
    name = "conflict-quoted"
    owner = 'say "hi"\\now'
    status, out = await module_api.post(
        f"{CONFIGMAPS}?fieldManager={quote(owner)}",
        {"metadata": {"name": name}, "data": {"a": "1", "b": "2"}})
    assert status == 201, out
    try:
        status, out = await module_api.patch(
            f"{CONFIGMAPS}/{name}?fieldManager=applier", None, APPLY,
            raw=(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"
                 "data:\n  a: x\n  b: y\n").encode())
        assert status == 409, out
        assert out["message"] == (
            'Apply failed with 2 conflicts: conflicts with "say \\"hi\\"\\\\now" using v1:\n'
            "- .data.a\n- .data.b")
        assert sorted((c["field"], c["message"]) for c in out["details"]["causes"]) == [
            (".data.a", 'conflict with "say \\"hi\\"\\\\now" using v1'),
            (".data.b", 'conflict with "say \\"hi\\"\\\\now" using v1')]
    finally:
        await module_api.delete(f"{CONFIGMAPS}/{name}")


DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


def _deployment(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {
        "replicas": 1, "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}},
                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


@pytest.mark.parametrize("subresource", ["scale", "status"])
async def test_an_apply_to_a_subresource_with_a_stale_resource_version_conflicts(
        module_api: API, subresource: str) -> None:
    """Rule: the resourceVersion of an applied configuration is merged into the object like
    any field, so an apply to /scale or /status naming a stale one is the store's 409
    optimistic-lock Conflict on the parent, and nothing is written.
    Source: kubernetes pkg/registry/apps/deployment/storage/storage.go
    (scaleUpdatedObjectInfo.UpdatedObject: "if len(scale.ResourceVersion) != 0 {
    deployment.ResourceVersion = scale.ResourceVersion }"), k8s.io/apiserver
    pkg/registry/generic/registry/store.go (Update: newResourceVersion !=
    existingResourceVersion -> NewConflict(OptimisticLockErrorMsg))."""
    name = f"stale-{subresource}"
    status, created = await module_api.post(DEPLOYMENTS, _deployment(name))
    assert status == 201, created
    try:
        if subresource == "scale":
            config = {"apiVersion": "autoscaling/v1", "kind": "Scale",
                      "metadata": {"name": name, "resourceVersion": "1"},
                      "spec": {"replicas": 4}}
        else:
            config = {"apiVersion": "apps/v1", "kind": "Deployment",
                      "metadata": {"name": name, "resourceVersion": "1"},
                      "status": {"replicas": 4}}
        status, out = await module_api.patch(
            f"{DEPLOYMENTS}/{name}/{subresource}?fieldManager=applier&force=true", config,
            APPLY)
        assert status == 409, out
        assert out["reason"] == "Conflict"
        assert out["message"] == (
            f'Operation cannot be fulfilled on deployments.apps "{name}": the object has been '
            "modified; please apply your changes to the latest version and try again")
        assert out["details"] == {"name": name, "group": "apps", "kind": "deployments"}
        status, now = await module_api.get(f"{DEPLOYMENTS}/{name}")
        assert now["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    finally:
        await module_api.delete(f"{DEPLOYMENTS}/{name}")


async def test_an_apply_body_of_several_yaml_documents_applies_the_first(
        module_api: API) -> None:
    """Rule: the apply configuration is read by sigs.k8s.io/yaml's Unmarshal, whose go-yaml v2
    decoder parses the first document of the stream and ignores the rest: a body of two
    documents applies the first, it is no 400. Source: k8s.io/apiserver
    pkg/endpoints/handlers/patch.go (applyPatcher.applyPatchToCurrentObject: yaml.Unmarshal
    into the patch object), sigs.k8s.io/yaml yaml.go (yamlToJSONTarget) over go-yaml v2
    decode.go (unmarshal: ``p.parse()`` once)."""
    name = "apply-two-documents"
    body = (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  a: first\n"
            f"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n"
            "  a: second\n").encode()
    try:
        status, out = await module_api.patch(f"{CONFIGMAPS}/{name}?fieldManager=applier",
                                              None, APPLY, raw=body)
        assert status == 201, out
        assert out["data"] == {"a": "first"}
    finally:
        await module_api.delete(f"{CONFIGMAPS}/{name}")


async def test_the_default_manager_is_the_user_agent_prefix_without_unprintables(
        module_api: API) -> None:
    """Rule: without fieldManager, an update's manager is the User-Agent up to its first
    "/", its unprintable characters (a tab) left out, cut once 128 bytes are written.
    Source: k8s.io/apiserver pkg/endpoints/handlers/rest.go (managerOrUserAgent,
    prefixFromUserAgent: ``if !unicode.IsPrint(r) { continue }``, ``buf.Len() >= 128``)."""
    name = "manager-from-agent"
    agent = "tab\tbed " + "x" * 130 + "/1.0 (linux)"
    status, out = await module_api.post(CONFIGMAPS, {"metadata": {"name": name},
                                                     "data": {"k": "v"}},
                                        headers={"User-Agent": agent})
    assert status == 201, out
    try:
        assert _managers(out) == [("tabbed " + "x" * 130)[:128]]
    finally:
        await module_api.delete(f"{CONFIGMAPS}/{name}")


HPA = "/apis/autoscaling/{version}/namespaces/default/horizontalpodautoscalers"


@pytest.mark.parametrize(("version", "allowed"), [("v2", True), ("v1", False)])
async def test_kubectl_takes_client_side_applied_fields_only_at_the_last_applied_version(
        module_api: API, version: str, allowed: bool) -> None:
    """Rule: the ``kubectl`` manager's apply may take, without force, fields a client-side
    apply owns while they are as its last-applied annotation says; the annotation counts
    only when its apiVersion is the one applied through, otherwise the conflict stands.
    Source: k8s.io/apimachinery pkg/util/managedfields/internal/lastappliedmanager.go
    (allowedConflictsFromLastApplied: "expected version of last applied to match live
    object")."""
    name = f"last-applied-{version}"
    spec = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
            "maxReplicas": 3}
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    last: dict[str, Any] = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                            "metadata": meta, "spec": spec}
    status, out = await module_api.post(
        HPA.format(version="v2") + "?fieldManager=kubectl-client-side-apply",
        {**last, "metadata": {**meta, "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": json.dumps(last)}}})
    assert status == 201, out
    try:
        config = {"apiVersion": f"autoscaling/{version}", "kind": "HorizontalPodAutoscaler",
                  "metadata": {"name": name}, "spec": {**spec, "maxReplicas": 5}}
        status, out = await module_api.patch(
            HPA.format(version=version) + f"/{name}?fieldManager=kubectl", config, APPLY)
        if allowed:
            assert status == 200, out
            assert out["spec"]["maxReplicas"] == 5
        else:
            assert status == 409, out
            assert out["message"] == (
                'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" '
                "using autoscaling/v2: .spec.maxReplicas")
    finally:
        await module_api.delete(HPA.format(version="v2") + f"/{name}")


async def test_kubectl_apply_drops_a_last_applied_annotation_too_large_to_keep(
        module_api: API) -> None:
    """Rule: kubectl's server-side apply rewrites an existing last-applied annotation from
    the configuration sent, unless the annotations would then pass their 256 KiB total:
    then the annotation is dropped and the apply succeeds (it is no 422).
    Source: k8s.io/apimachinery pkg/util/managedfields/internal/lastappliedupdater.go
    (setLastApplied: ``ValidateAnnotationsSize`` fails -> ``delete(annotations, ...)``)."""
    name = "last-applied-too-large"
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    last: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                            "data": {"a": "1"}}
    status, out = await module_api.post(
        f"{CONFIGMAPS}?fieldManager=kubectl-client-side-apply",
        {**last, "metadata": {**meta, "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": json.dumps(last)}}})
    assert status == 201, out
    try:
        config = {**last, "data": {"a": "1", "big": "x" * (270 * 1024)}}
        status, out = await module_api.patch(f"{CONFIGMAPS}/{name}?fieldManager=kubectl",
                                             config, APPLY)
        assert status == 200, out
        assert "annotations" not in out["metadata"]
        assert len(out["data"]["big"]) == 270 * 1024
    finally:
        await module_api.delete(f"{CONFIGMAPS}/{name}")


async def test_an_apply_keeps_the_duplicate_items_of_the_live_list(module_api: API) -> None:
    """Rule: the live object may hold items of a keyed list with the same key (duplicate
    env names are allowed); an apply that does not name them keeps every one of them, in
    place, and adds what it applies after them.
    Source: sigs.k8s.io/structured-merge-diff v4.4.2 typed/merge.go (visitListItems:
    indexListPathElements(lhs, allowDuplicates=true); "take LHS item using At to make sure
    we get the right item")."""
    name = "apply-keeps-duplicates"
    body = _deployment(name)
    body["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "A", "value": "1"}, {"name": "A", "value": "2"}, {"name": "B", "value": "3"}]
    status, out = await module_api.post(f"{DEPLOYMENTS}?fieldManager=creator", body)
    assert status == 201, out
    try:
        config = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                  "spec": {"template": {"spec": {"containers": [
                      {"name": "c", "env": [{"name": "C", "value": "4"}]}]}}}}
        status, out = await module_api.patch(f"{DEPLOYMENTS}/{name}?fieldManager=applier",
                                             config, APPLY)
        assert status == 200, out
        assert out["spec"]["template"]["spec"]["containers"][0]["env"] == [
            {"name": "A", "value": "1"}, {"name": "A", "value": "2"},
            {"name": "B", "value": "3"}, {"name": "C", "value": "4"}]
    finally:
        await module_api.delete(f"{DEPLOYMENTS}/{name}")


async def test_a_created_list_with_a_repeated_key_owns_only_the_key(module_api: API) -> None:
    """Rule: the ownership of items that repeat a key cannot be told apart, so a create owns
    the repeated key as one leaf (``k:{...}: {}``, nothing beneath it), and every other item
    with its fields. Source: sigs.k8s.io/structured-merge-diff v4.4.2 typed/compare.go
    (visitListItems, "New duplicates use-case: ... add duplicate marker":
    ``w.comparison.Added.Insert(append(w.path, pe))``)."""
    name = "create-with-duplicates"
    body = _deployment(name)
    body["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "A", "value": "1"}, {"name": "A", "value": "2"}, {"name": "B", "value": "3"}]
    status, out = await module_api.post(f"{DEPLOYMENTS}?fieldManager=creator", body)
    assert status == 201, out
    try:
        [entry] = out["metadata"]["managedFields"]
        container = entry["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"][
            'k:{"name":"c"}']
        assert container["f:env"] == {
            ".": {}, 'k:{"name":"A"}': {},
            'k:{"name":"B"}': {".": {}, "f:name": {}, "f:value": {}}}
    finally:
        await module_api.delete(f"{DEPLOYMENTS}/{name}")


_GVK = "apps/v1, Kind=Deployment"
_C = '.spec.template.spec.containers[name="c"]'


@pytest.mark.parametrize(("spec", "container", "problem"), [
    ({}, {"env": [{"name": "A", "value": 1}]},
     f'{_C}.env[name="A"].value: expected string, got &value.valueUnstructured{{Value:1}}'),
    ({"nodeSelector": {"a": 2.5}}, {},  # an atomic map's values are checked too
     ".spec.template.spec.nodeSelector.a: expected string, got "
     "&value.valueUnstructured{Value:2.5}"),
    ({}, {"tty": "yes"}, f"{_C}.tty: expected boolean, got &{{yes}}"),
    ({"terminationGracePeriodSeconds": "30"}, {},
     ".spec.template.spec.terminationGracePeriodSeconds: expected numeric (int or float), "
     "got string"),
    ({"containers": {"name": "c"}}, {},
     ".spec.template.spec.containers: expected list, got &{map[name:c]}"),
])
async def test_an_apply_of_a_value_of_the_wrong_type_is_the_typed_patch_500(
        module_api: API, spec: dict[str, Any], container: dict[str, Any],
        problem: str) -> None:
    """Rule: the apply configuration is made a typed value before anything else, and a value
    its schema's atom does not take fails there with structured-merge-diff's words (strings
    printed with %#v of the *valueUnstructured holding what sigs.k8s.io/yaml decoded, numbers
    as float64; numbers named by %T; booleans, maps and lists with %v), kube-apiserver's
    500 without a reason, nothing written. Source: structured-merge-diff v4 typed/validate.go
    (validateScalar, doMap/doList via value.mapValue/listValue), apimachinery
    pkg/util/managedfields/internal/structuredmerge.go ("failed to create typed patch
    object (%v): %v"), apiserver pkg/endpoints/handlers/patch.go (applyPatcher: YAML
    unmarshalled into map[string]interface{})."""
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "typed-500"},
            "spec": {"selector": {"matchLabels": {"a": "b"}},
                     "template": {"metadata": {"labels": {"a": "b"}},
                                  "spec": {"containers": [{"name": "c", "image": "i",
                                                           **container}], **spec}}}}
    path = "/apis/apps/v1/namespaces/default/deployments/typed-500"
    status, out = await module_api.request("PATCH", f"{path}?fieldManager=m",
                                           raw=json.dumps(body).encode(), content_type=APPLY)
    assert (status, out.get("reason"), out["message"]) == (
        500, None, f"failed to create typed patch object (/typed-500; {_GVK}): {problem}")
    status, _ = await module_api.get(path)
    assert status == 404
