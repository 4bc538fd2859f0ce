"""Where admission runs among the steps of a write: mutating admission (the built-in plugins,
then the webhooks) before the store fills the system fields and the strategy prepares the
object (generation, status), validating admission after it.

Sources (k8s.io/apiserver v0.32): pkg/endpoints/handlers/create.go (WipeObjectMetaSystemFields,
the field manager, then ``mutatingAdmission.Admit``, then ``r.Create``),
pkg/endpoints/handlers/update.go (the field manager and mutating admission as TransformFuncs
of ``rest.DefaultUpdatedObjectInfo``; a create on update is admitted as a CREATE),
pkg/registry/generic/registry/store.go (create: FillObjectMetaSystemFields, the generated
name, ``rest.BeforeCreate``, createValidation; Update: ``objInfo.UpdatedObject``, then
ObjectResourceVersion, then ``rest.BeforeUpdate``, updateValidation),
pkg/registry/rest/create.go and update.go (BeforeCreate: PrepareForCreate then Validate;
BeforeUpdate: the stored generation, PrepareForUpdate, the stored system fields).
"""

from __future__ import annotations

from typing import Any

import orjson

from tests.cluster.conftest import API
from tests.cluster.test_admission_webhooks import (
    CMS,
    cm,
    configure,
    configure_mutating_and_validating,
    patch_response,
    webhook,
)
from tests.hookserver import Hooks

Obj = dict[str, Any]

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
DEPLOYMENT_RULES = [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                     "operations": ["CREATE", "UPDATE"],
                     "resources": ["deployments", "deployments/status"]}]


def deployment(name: str, status: Obj | None = None) -> Obj:
    labels = {"app": name}
    obj: Obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                "spec": {"selector": {"matchLabels": labels}, "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    if status is not None:
        obj["status"] = status
    return obj


def _owned_labels(obj: Obj) -> list[str]:
    """The labels some managedFields entry owns."""
    owned = []
    for entry in obj["metadata"].get("managedFields") or []:
        labels = ((entry.get("fieldsV1") or {}).get("f:metadata") or {}).get("f:labels") or {}
        owned += [key[2:] for key in labels if key.startswith("f:")]
    return owned


async def test_a_mutating_webhook_sees_the_create_before_the_strategy_prepares_it(
        api: API, hooks: Hooks) -> None:
    """Rule: on create the mutating webhooks see the object as sent and defaulted: no uid, a
    null creationTimestamp, no generation, the status the client sent. PrepareForCreate runs
    after them, so a generation or status a webhook sets is overwritten (generation 1, an
    empty status), while its other changes stay; the managed fields were computed before
    admission, so no entry owns what the webhook added.
    create.go (WipeObjectMetaSystemFields, FieldManager.UpdateNoErrors, Admit, r.Create);
    store.go create (FillObjectMetaSystemFields, BeforeCreate); apps deployment
    strategy.go (PrepareForCreate: Status reset, Generation = 1)."""
    hooks.on("/mutate", lambda r: patch_response([
        {"op": "add", "path": "/metadata/generation", "value": 7},
        {"op": "replace", "path": "/status", "value": {"replicas": 9}},
        {"op": "add", "path": "/metadata/labels", "value": {"by": "webhook"}}]))
    await configure(api, "Mutating", "m", webhook(
        "m.example.com", {"url": hooks.url("/mutate"), "caBundle": hooks.ca_bundle},
        rules=DEPLOYMENT_RULES))

    status, created = await api.post(DEPLOYMENTS, deployment("web", {"replicas": 5}))
    assert status == 201, created
    [call] = hooks.calls["/mutate"]
    seen = call["review"]["request"]["object"]
    assert "uid" not in seen["metadata"] and "generation" not in seen["metadata"]
    assert seen["metadata"]["creationTimestamp"] is None
    assert seen["status"] == {"replicas": 5}
    assert seen["spec"]["replicas"] == 1  # defaulted before admission

    assert created["metadata"]["generation"] == 1
    assert created["metadata"]["uid"] and created["metadata"]["creationTimestamp"]
    assert created.get("status", {}) == {}
    assert created["metadata"]["labels"] == {"by": "webhook"}
    assert _owned_labels(created) == []


async def test_a_mutating_webhook_sees_an_update_before_the_strategy_prepares_it(
        api: API, hooks: Hooks) -> None:
    """Rule: on update the mutating webhooks see the object as sent (its status and
    generation, not the stored ones; on /status its spec as sent); PrepareForUpdate runs
    after them, so it resets a status the webhook set on the main resource and counts a
    spec change the webhook made into the generation.
    update.go (the mutating admission TransformFunc of DefaultUpdatedObjectInfo);
    store.go Update (UpdatedObject before BeforeUpdate); rest/update.go (BeforeUpdate: the
    stored generation, then PrepareForUpdate); apps deployment strategy.go
    (PrepareForUpdate: Status kept, Generation+1 when the spec changed;
    deploymentStatusStrategy.PrepareForUpdate: the stored spec kept)."""
    def mutate(request: Obj) -> Obj:
        if request["operation"] != "UPDATE" or request.get("subResource"):
            return {"allowed": True}
        return patch_response([
            {"op": "replace", "path": "/spec/replicas", "value": 3},
            {"op": "replace", "path": "/status", "value": {"replicas": 8}}])

    hooks.on("/mutate", mutate)
    await configure(api, "Mutating", "m", webhook(
        "m.example.com", {"url": hooks.url("/mutate"), "caBundle": hooks.ca_bundle},
        rules=DEPLOYMENT_RULES))
    status, created = await api.post(DEPLOYMENTS, deployment("web"))
    assert status == 201, created

    sent = {**created, "status": {"replicas": 4}}
    sent["metadata"] = {**created["metadata"], "generation": 5}
    status, updated = await api.put(f"{DEPLOYMENTS}/web", sent)
    assert status == 200, updated
    seen = hooks.calls["/mutate"][-1]["review"]["request"]["object"]
    assert (seen["metadata"]["generation"], seen["status"]) == (5, {"replicas": 4})
    assert updated["spec"]["replicas"] == 3
    assert updated["metadata"]["generation"] == 2  # the webhook's spec change counted
    assert updated.get("status", {}) == created.get("status", {})

    on_status = {**updated, "spec": {**updated["spec"], "replicas": 6},
                 "status": {"replicas": 1}}
    status, written = await api.put(f"{DEPLOYMENTS}/web/status", on_status)
    assert status == 200, written
    seen = hooks.calls["/mutate"][-1]["review"]["request"]
    assert (seen["subResource"], seen["object"]["spec"]["replicas"]) == ("status", 6)
    assert (written["spec"]["replicas"], written["status"]) == (3, {"replicas": 1})


async def test_a_create_on_update_is_admitted_before_its_resource_version_is_parsed(
        api: API, hooks: Hooks) -> None:
    """Rule: a PUT that creates (a Lease: AllowCreateOnUpdate) passes the mutating webhooks
    as a CREATE with the resourceVersion as sent; the store parses that version only after
    them (strconv's 500 for one that is not a number), and validating admission never sees
    the refused request.
    update.go (a create on update admitted with admission.Create and the CreateOptions of
    updateToCreateOptions); store.go Update (UpdatedObject, then ObjectResourceVersion)."""
    hooks.on("/mutate", lambda r: {"allowed": True})
    hooks.on("/validate", lambda r: {"allowed": True})
    rules = [{"apiGroups": ["coordination.k8s.io"], "apiVersions": ["v1"],
              "operations": ["CREATE", "UPDATE"], "resources": ["leases"]}]
    await configure_mutating_and_validating(api, hooks, rules=rules)

    status, body = await api.put(f"{LEASES}/held", {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "held", "resourceVersion": "x1"}})
    assert status == 500 and "reason" not in body, body  # (a bare error)
    [call] = hooks.calls["/mutate"]
    request = call["review"]["request"]
    assert request["operation"] == "CREATE"
    assert request["options"]["kind"] == "CreateOptions"
    assert request["object"]["metadata"]["resourceVersion"] == "x1"
    assert hooks.calls["/validate"] == []
    assert (await api.get(f"{LEASES}/held"))[0] == 404

    status, created = await api.put(f"{LEASES}/held", {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "held"}})
    assert status == 201, created
    assert [c["review"]["request"]["operation"] for c in hooks.calls["/validate"]] == [
        "CREATE"]


async def test_managed_fields_a_webhook_breaks_are_set_back_with_a_warning(
        api: API, hooks: Hooks) -> None:
    """Rule: the managed fields are tracked before admission; when a mutating webhook
    leaves them undecodable they are set back to what they were before admission and the
    answer warns, on create and on update; valid entries a webhook writes are kept.
    handlers/fieldmanager/admission.go (managedFieldsValidatingAdmissionController,
    InvalidManagedFieldsAfterMutatingAdmissionWarningFormat), wrapped around admission in
    create.go and update.go; apimachinery util/managedfields (DecodeManagedFields)."""
    broken = [{"manager": "hook", "operation": "Update", "apiVersion": "v1",
               "fieldsV1": {"f:data": {}}}]
    hooks.on("/mutate", lambda r: patch_response(
        [{"op": "replace", "path": "/metadata/managedFields", "value": broken}]))
    await configure(api, "Mutating", "m", webhook(
        "m.example.com", {"url": hooks.url("/mutate"), "caBundle": hooks.ca_bundle}))

    warning = (".metadata.managedFields was in an invalid state after admission; this could "
               "be caused by an outdated mutating admission controller; please fix your "
               "requests: missing fieldsType in managed fields entry 0")
    written: Obj = {}
    for method, path, body, code in [("POST", CMS, cm("a"), 201),
                                     ("PUT", f"{CMS}/a", None, 200)]:
        if body is None:  # the update: the object as created, its data changed
            body = {**written, "data": {"k": "w"}}
        async with api.session.request(method, f"{api.cluster.url}{path}",
                                       data=orjson.dumps(body), ssl=api.ssl,
                                       headers={"Content-Type": "application/json"}) as resp:
            written = orjson.loads(await resp.read())
            assert resp.status == code, written
            assert resp.headers.getall("Warning", []) == [f'299 - "{warning}"']
        assert [e["manager"] for e in written["metadata"]["managedFields"]] == [
            "setpoint-tests"]


async def test_the_storage_steps_judge_what_the_mutating_webhooks_made(
        api: API, hooks: Hooks) -> None:
    """Rule: what a resource's REST storage does runs after the mutating webhooks: a
    Service's cluster IP and IP families are allocated after them (the mutating webhook sees
    none, the validating one sees them), and the RBAC escalation check judges the Role a
    webhook extended, so a rule the author does not hold is refused even when a webhook
    added it.
    pkg/registry/core/service/storage/storage.go (beginCreate: allocation, as the store's
    BeginCreate, called from store.go create after admission); pkg/registry/rbac/role/
    policybased/storage.go (Create: ConfirmNoEscalation, then the store's Create, called by
    create.go after the mutating admission)."""
    def mutate(request: Obj) -> Obj:
        if request["name"] != "reader":  # (the Role alice creates)
            return {"allowed": True}
        return patch_response([{"op": "add", "path": "/rules/-", "value": {
            "apiGroups": [""], "resources": ["secrets"], "verbs": ["delete"]}}])

    hooks.on("/mutate", mutate)
    hooks.on("/validate", lambda r: {"allowed": True})
    rules = [{"apiGroups": ["", "rbac.authorization.k8s.io"], "apiVersions": ["v1"],
              "operations": ["CREATE"], "resources": ["services", "roles"]}]
    await configure_mutating_and_validating(api, hooks, rules=rules)

    status, svc = await api.post("/api/v1/namespaces/default/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"ports": [{"port": 80}]}})
    assert status == 201, svc
    mutating = hooks.calls["/mutate"][-1]["review"]["request"]["object"]["spec"]
    validating = hooks.calls["/validate"][-1]["review"]["request"]["object"]["spec"]
    assert "clusterIP" not in mutating and "ipFamilies" not in mutating
    assert validating["clusterIP"] == svc["spec"]["clusterIP"] != ""
    assert validating["ipFamilies"] == ["IPv4"]

    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
    reader = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]
    status, body = await api.post(f"{rbac}/roles", {"metadata": {"name": "role-writer"}, "rules": [
        *reader, {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"],
                  "verbs": ["create"]}]})
    assert status == 201, body
    status, body = await api.post(f"{rbac}/rolebindings", {
        "metadata": {"name": "role-writer"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": "role-writer"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                      "name": "alice"}]})
    assert status == 201, body
    status, body = await api.post(f"{rbac}/roles", {"metadata": {"name": "reader"},
                                                   "rules": reader},
                                  headers={"Impersonate-User": "alice"})
    assert status == 403, body
    assert "attempting to grant RBAC permissions not currently held" in body["message"]
    assert "secrets" in body["message"]
