"""Admission webhooks: the embedded server calls them over HTTPS as kube-apiserver does."""

from __future__ import annotations

import base64
import socket
from typing import Any

import orjson

from setpoint.cluster import RunningCluster
from tests.cluster.conftest import API
from tests.hookserver import Hooks

Obj = dict[str, Any]

CMS = "/api/v1/namespaces/default/configmaps"


def webhook(name: str, client_config: Obj, **extra: Any) -> Obj:
    spec: Obj = {"name": name, "clientConfig": client_config, "sideEffects": "None",
                 "admissionReviewVersions": ["v1"],
                 "rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                            "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]}
    spec.update(extra)
    return spec


async def configure(api: API, kind: str, name: str, *hooks_: Obj) -> None:
    resource = "mutatingwebhookconfigurations" if kind == "Mutating" \
        else "validatingwebhookconfigurations"
    status, body = await api.post(f"/apis/admissionregistration.k8s.io/v1/{resource}", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": f"{kind}WebhookConfiguration",
        "metadata": {"name": name}, "webhooks": list(hooks_)})
    assert status == 201, body


async def configure_mutating_and_validating(api: API, hooks: Hooks, **extra: Any) -> None:
    """A mutating webhook ``m.example.com`` at /mutate and a validating one ``v.example.com``
    at /validate (configurations "m" and "v"), both with ``extra`` over webhook()'s fields."""
    tls = {"caBundle": hooks.ca_bundle}
    await configure(api, "Mutating", "m", webhook(
        "m.example.com", {"url": hooks.url("/mutate"), **tls}, **extra))
    await configure(api, "Validating", "v", webhook(
        "v.example.com", {"url": hooks.url("/validate"), **tls}, **extra))


def cm(name: str, labels: dict[str, str] | None = None) -> Obj:
    meta: Obj = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def patch_response(operations: list[Obj]) -> Obj:
    return {"allowed": True, "patchType": "JSONPatch",
            "patch": base64.b64encode(orjson.dumps(operations)).decode()}


async def test_a_mutating_webhook_changes_the_created_object_and_is_told_the_request(
        api: API, hooks: Hooks) -> None:
    hooks.on("/mutate", lambda r: patch_response(
        [{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]))
    await configure(api, "Mutating", "labeller", webhook(
        "labeller.example.com", {"url": hooks.url("/mutate"), "caBundle": hooks.ca_bundle}))

    status, created = await api.post(CMS, cm("a"))
    assert status == 201, created
    assert created["metadata"]["labels"] == {"mutated": "yes"}
    _, stored = await api.get(f"{CMS}/a")
    assert stored["metadata"]["labels"] == {"mutated": "yes"}

    [call] = hooks.calls["/mutate"]
    assert call["query"] == {"timeout": "10s"}
    review = call["review"]
    assert (review["apiVersion"], review["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
    request = review["request"]
    assert request["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert request["operation"] == "CREATE" and request["namespace"] == "default"
    assert request["name"] == "a" and request["dryRun"] is False
    assert request["object"]["data"] == {"k": "v"} and request["oldObject"] is None
    # the options as the query gave them: the User-Agent's manager is for managedFields only
    assert request["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
    assert request["userInfo"]["username"] == "setpoint-admin"
    assert "system:masters" in request["userInfo"]["groups"]


async def test_a_denial_carries_the_webhooks_status_and_stores_nothing(
        api: API, hooks: Hooks) -> None:
    hooks.on("/validate", lambda r: {"allowed": False, "status": {
        "code": 403, "reason": "Forbidden", "message": "names must start with ok-"}})
    await configure(api, "Validating", "names", webhook(
        "names.example.com", {"url": hooks.url("/validate"), "caBundle": hooks.ca_bundle}))

    status, body = await api.post(CMS, cm("bad"))
    assert status == 403
    assert body["reason"] == "Forbidden"
    assert body["message"] == ('admission webhook "names.example.com" denied the request: '
                               "names must start with ok-")
    assert (await api.get(f"{CMS}/bad"))[0] == 404


async def test_a_denial_without_a_status_is_a_400_without_explanation(
        api: API, hooks: Hooks) -> None:
    hooks.on("/validate", lambda r: {"allowed": False})
    await configure(api, "Validating", "mute", webhook(
        "mute.example.com", {"url": hooks.url("/validate"), "caBundle": hooks.ca_bundle}))
    status, body = await api.post(CMS, cm("x"))
    assert status == 400
    assert body["message"] == ('admission webhook "mute.example.com" denied the request '
                               "without explanation")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_an_unreachable_webhook_fails_closed_unless_its_policy_is_ignore(
        api: API) -> None:
    url = f"https://127.0.0.1:{_free_port()}/validate"
    await configure(api, "Validating", "down", webhook("down.example.com", {"url": url}))
    status, body = await api.post(CMS, cm("x"))
    assert status == 500 and body["reason"] == "InternalError"
    assert body["message"].startswith(
        'Internal error occurred: failed calling webhook "down.example.com": failed to call '
        f'webhook: Post "{url}?timeout=10s": dial tcp 127.0.0.1:')
    assert body["message"].endswith("connect: connection refused")

    status, _ = await api.patch(
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/down",
        [{"op": "add", "path": "/webhooks/0/failurePolicy", "value": "Ignore"}],
        "application/json-patch+json")
    assert status == 200
    assert (await api.post(CMS, cm("x")))[0] == 201


async def test_an_answer_for_another_request_is_refused(api: API, hooks: Hooks) -> None:
    async def wrong_uid(request: Obj) -> Obj:
        return {"allowed": True, "uid": "not-" + request["uid"]}

    hooks.on("/validate", wrong_uid)
    await configure(api, "Validating", "confused", webhook(
        "confused.example.com", {"url": hooks.url("/validate"), "caBundle": hooks.ca_bundle}))
    status, body = await api.post(CMS, cm("x"))
    assert status == 500
    assert "received invalid webhook response: expected response.uid=" in body["message"]


async def test_selectors_and_match_conditions_decide_who_is_asked(
        api: API, hooks: Hooks) -> None:
    hooks.on("/validate", lambda r: {"allowed": True})
    await configure(api, "Validating", "picky", webhook(
        "picky.example.com", {"url": hooks.url("/validate"), "caBundle": hooks.ca_bundle},
        objectSelector={"matchLabels": {"checked": "yes"}},
        namespaceSelector={"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["default"]}]},
        matchConditions=[{"name": "not-skipped",
                          "expression": "object.metadata.name != 'skipped'"}]))

    assert (await api.post(CMS, cm("unlabelled")))[0] == 201
    assert (await api.post(CMS, cm("skipped", {"checked": "yes"})))[0] == 201
    assert (await api.post("/api/v1/namespaces/kube-public/configmaps",
                           cm("elsewhere", {"checked": "yes"})))[0] == 201
    assert hooks.calls["/validate"] == []
    assert (await api.post(CMS, cm("asked", {"checked": "yes"})))[0] == 201
    assert [c["review"]["request"]["name"] for c in hooks.calls["/validate"]] == ["asked"]


async def test_updates_send_the_old_object_and_deletes_can_be_refused(
        api: API, hooks: Hooks) -> None:
    def keep_protected(request: Obj) -> Obj:
        if request["operation"] == "DELETE":
            return {"allowed": False, "status": {"message": "protected"}}
        return {"allowed": True, "warnings": [f"{request['operation']} seen"]}

    hooks.on("/validate", keep_protected)
    rule = {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"],
            "operations": ["*"]}
    await configure(api, "Validating", "guard", webhook(
        "guard.example.com", {"url": hooks.url("/validate"), "caBundle": hooks.ca_bundle},
        rules=[rule]))
    assert (await api.post(CMS, cm("p")))[0] == 201
    async with api.session.patch(f"{api.cluster.url}{CMS}/p", data=orjson.dumps(
            {"data": {"k": "w"}}), headers={"Content-Type": "application/merge-patch+json"},
            ssl=api.ssl) as resp:
        assert resp.status == 200
        assert resp.headers.getall("Warning") == ['299 - "UPDATE seen"']
    update = hooks.calls["/validate"][-1]["review"]["request"]
    assert update["operation"] == "UPDATE"
    assert update["oldObject"]["data"] == {"k": "v"} and update["object"]["data"] == {"k": "w"}
    assert update["options"]["kind"] == "UpdateOptions"

    status, body = await api.delete(f"{CMS}/p")
    assert status == 400
    assert body["message"] == 'admission webhook "guard.example.com" denied the request: ' \
                              "protected"
    delete = hooks.calls["/validate"][-1]["review"]["request"]
    assert delete["object"] is None and delete["oldObject"]["metadata"]["name"] == "p"
    assert delete["options"]["kind"] == "DeleteOptions"
    assert (await api.get(f"{CMS}/p"))[0] == 200


async def test_a_dry_run_is_sent_as_one_and_stores_nothing(
        api: API, hooks: Hooks) -> None:
    hooks.on("/validate", lambda r: {"allowed": True})
    await configure(api, "Validating", "effects", webhook(
        "effects.example.com", {"url": hooks.url("/validate"), "caBundle": hooks.ca_bundle},
        sideEffects="NoneOnDryRun"))
    assert (await api.post(f"{CMS}?dryRun=All", cm("dry")))[0] == 201
    assert hooks.calls["/validate"][-1]["review"]["request"]["dryRun"] is True
    assert (await api.get(f"{CMS}/dry"))[0] == 404
    # (webhooks with side effects, which dry runs refuse, can no longer be stored in v1)


async def test_an_if_needed_webhook_runs_again_after_a_later_one_changed_the_object(
        api: API, hooks: Hooks) -> None:
    hooks.on("/first", lambda r: patch_response(
        [{"op": "add", "path": "/metadata/annotations",
          "value": {"first-saw": ",".join(sorted(r["object"]["metadata"].get("labels")
                                                  or {}))}}]))
    hooks.on("/second", lambda r: patch_response(
        [{"op": "add", "path": "/metadata/labels", "value": {"second": "yes"}}]))
    tls = {"caBundle": hooks.ca_bundle}
    await configure(api, "Mutating", "a-first", webhook(
        "first.example.com", {"url": hooks.url("/first"), **tls},
        reinvocationPolicy="IfNeeded"))
    await configure(api, "Mutating", "b-second", webhook(
        "second.example.com", {"url": hooks.url("/second"), **tls}))

    status, created = await api.post(CMS, cm("r"))
    assert status == 201, created
    assert len(hooks.calls["/first"]) == 2 and len(hooks.calls["/second"]) == 1
    assert created["metadata"]["annotations"] == {"first-saw": "second"}


async def test_webhook_configurations_are_never_sent_to_webhooks(
        api: API, hooks: Hooks) -> None:
    hooks.on("/validate", lambda r: {"allowed": False})
    everything = {"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"],
                  "resources": ["*/*"]}
    await configure(api, "Validating", "lockout", webhook(
        "lockout.example.com", {"url": hooks.url("/validate"), "caBundle": hooks.ca_bundle},
        rules=[everything]))
    assert (await api.post(CMS, cm("x")))[0] == 400
    status, _ = await api.delete(
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/lockout")
    assert status == 200
    assert (await api.post(CMS, cm("x")))[0] == 201


async def test_a_service_reference_reaches_the_webhook_through_its_endpoints(
        api: API, hooks: Hooks) -> None:
    hooks.on("/svc", lambda r: {"allowed": False, "status": {"message": "via service"}})
    status, body = await api.post("/api/v1/namespaces/default/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "hooks"},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 9443}]}})
    assert status == 201, body
    status, body = await api.post("/api/v1/namespaces/default/endpoints", {
        "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "hooks"},
        "subsets": [{"addresses": [{"ip": "127.0.0.1"}],
                     "ports": [{"name": "https", "port": hooks.port}]}]})
    assert status == 201, body
    await configure(api, "Validating", "in-cluster", webhook(
        "svc.example.com", {"service": {"namespace": "default", "name": "hooks",
                                        "path": "/svc"}, "caBundle": hooks.ca_bundle}))
    status, body = await api.post(CMS, cm("x"))
    assert status == 400, body
    assert body["message"].endswith("denied the request: via service")


async def test_a_write_that_raced_while_webhooks_answered_runs_again(
        api: API, hooks: Hooks, cluster: RunningCluster) -> None:
    meddled = 0

    async def meddle(request: Obj) -> Obj:
        nonlocal meddled
        labels = request["object"]["metadata"].get("labels") or {}
        if request["operation"] == "UPDATE" and "meddled" not in labels \
                and "meddling" not in labels:
            # another client changes the object while this update waits for the webhook
            meddled += 1
            status, body = await api.patch(f"{CMS}/race", {"metadata": {"labels": {
                "meddling": "1", "meddled": "yes"}, "annotations": {"times": str(meddled)}}},
                "application/merge-patch+json")
            assert status == 200, body
        return {"allowed": True}

    hooks.on("/validate", meddle)
    assert (await api.post(CMS, cm("race")))[0] == 201
    await configure(api, "Validating", "meddler", webhook(
        "meddler.example.com", {"url": hooks.url("/validate"), "caBundle": hooks.ca_bundle}))

    status, body = await api.patch(f"{CMS}/race", {"data": {"k": "patched"}},
                                   "application/merge-patch+json")
    assert status == 200, body
    assert body["data"] == {"k": "patched"} and body["metadata"]["labels"]["meddled"] == "yes"

    _, live = await api.get(f"{CMS}/race")
    stale = {**live, "data": {"k": "stale"}}
    stale["metadata"] = {**live["metadata"], "labels": {}}
    status, body = await api.put(f"{CMS}/race", stale)
    assert status == 409, body  # a PUT of a given resourceVersion is not re-run


async def test_an_invalid_configuration_is_refused_with_each_field_named(api: API) -> None:
    status, body = await api.post(
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "broken"},
            "webhooks": [
                {"name": "short", "clientConfig": {"url": "http://127.0.0.1/x?y=1"},
                 "admissionReviewVersions": ["v1"], "sideEffects": "Some",
                 "timeoutSeconds": 31,
                 "rules": [{"apiGroups": ["*", "apps"], "apiVersions": ["v1"],
                            "operations": ["CREATE", "PATCH"], "resources": ["*/*", "pods"]}]},
                {"name": "a.b.c", "sideEffects": "None", "admissionReviewVersions": ["v9"],
                 "clientConfig": {"service": {"namespace": "d", "name": "s",
                                              "path": "/ok/not_ok"}}},
                {"name": "a.b.c", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                 "clientConfig": {"url": "https://127.0.0.1/x"},
                 "matchConditions": [{"name": "c", "expression": "object.("}]},
            ]})
    assert status == 422 and body["reason"] == "Invalid"
    fields = [c["field"] for c in body["details"]["causes"]]
    assert fields == [
        "webhooks[0].name",
        "webhooks[0].rules[0].operations[1]",
        "webhooks[0].rules[0].apiGroups",
        "webhooks[0].rules[0].resources",
        "webhooks[0].sideEffects",
        "webhooks[0].timeoutSeconds",
        "webhooks[0].clientConfig.url",
        "webhooks[0].clientConfig.url",
        "webhooks[1].clientConfig.service.path",
        "webhooks[1].admissionReviewVersions",
        "webhooks[2].matchConditions[0].expression",
        "webhooks[2].name",
    ]
    messages = {c["field"]: c["message"] for c in body["details"]["causes"]}
    assert messages["webhooks[0].sideEffects"] == \
        'Unsupported value: "Some": supported values: "None", "NoneOnDryRun"'
    assert messages["webhooks[0].clientConfig.url"] == \
        'Invalid value: "y=1": query parameters are not permitted in the URL'
    assert messages["webhooks[2].name"] == 'Duplicate value: "a.b.c"'


async def test_deleting_a_collection_asks_the_webhooks_about_each_object(
        api: API, hooks: Hooks) -> None:
    def keep(request: Obj) -> Obj:
        if request["oldObject"]["metadata"]["name"] == "keep":
            return {"allowed": False, "status": {"message": "kept"}}
        return {"allowed": True}

    hooks.on("/validate", keep)
    assert (await api.post(CMS, cm("gone", {"batch": "1"})))[0] == 201
    assert (await api.post(CMS, cm("keep", {"batch": "1"})))[0] == 201
    await configure(api, "Validating", "keeper", webhook(
        "keeper.example.com", {"url": hooks.url("/validate"), "caBundle": hooks.ca_bundle},
        rules=[{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"],
                "operations": ["DELETE"]}]))
    status, body = await api.delete(f"{CMS}?labelSelector=batch%3D1")
    assert status == 400
    assert body["message"].endswith("denied the request: kept")
    assert (await api.get(f"{CMS}/gone"))[0] == 404
    assert (await api.get(f"{CMS}/keep"))[0] == 200
    assert [c["review"]["request"]["operation"] for c in hooks.calls["/validate"]] == \
        ["DELETE", "DELETE"]


async def test_an_eviction_is_admitted_as_an_eviction_of_the_pod(
        api: API, hooks: Hooks) -> None:
    hooks.on("/validate", lambda r: {"allowed": False, "status": {
        "code": 429, "reason": "TooManyRequests", "message": "quorum would be lost"}})
    pods = "/api/v1/namespaces/default/pods"
    status, body = await api.post(pods, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "member-0"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    assert status == 201, body
    await configure(api, "Validating", "quorum", webhook(
        "quorum.example.com", {"url": hooks.url("/validate"), "caBundle": hooks.ca_bundle},
        rules=[{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/eviction"],
                "operations": ["CREATE"]}]))

    status, body = await api.post(f"{pods}/member-0/eviction", {
        "apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "member-0"}})
    assert status == 429, body
    assert body["message"].endswith("denied the request: quorum would be lost")
    assert (await api.get(f"{pods}/member-0"))[0] == 200
    [call] = hooks.calls["/validate"]
    request = call["review"]["request"]
    assert request["kind"] == {"group": "policy", "version": "v1", "kind": "Eviction"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "pods"}
    assert request["subResource"] == "eviction" and request["name"] == "member-0"
    assert request["object"]["kind"] == "Eviction"
    # the pod itself, created before, was not sent: the rule names only the subresource
    assert (await api.post(pods, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "member-1"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}}))[0] == 201
    assert len(hooks.calls["/validate"]) == 1


async def test_a_scale_is_admitted_as_a_scale(api: API, hooks: Hooks) -> None:
    def at_most_five(request: Obj) -> Obj:
        if request["object"]["spec"]["replicas"] > 5:
            return {"allowed": False, "status": {"message": "at most 5 replicas"}}
        return {"allowed": True}

    hooks.on("/validate", at_most_five)
    deployments = "/apis/apps/v1/namespaces/default/deployments"
    status, body = await api.post(deployments, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    assert status == 201, body
    await configure(api, "Validating", "scale-limit", webhook(
        "scale.example.com", {"url": hooks.url("/validate"), "caBundle": hooks.ca_bundle},
        rules=[{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["UPDATE"],
                "resources": ["deployments/scale"]}]))

    status, body = await api.patch(f"{deployments}/web/scale", {"spec": {"replicas": 10}},
                                   "application/merge-patch+json")
    assert status == 400, body
    assert body["message"].endswith("denied the request: at most 5 replicas")
    [call] = hooks.calls["/validate"]
    request = call["review"]["request"]
    assert request["kind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert request["resource"]["resource"] == "deployments"
    assert request["subResource"] == "scale"
    assert request["oldObject"]["spec"]["replicas"] == 1

    status, body = await api.patch(f"{deployments}/web/scale", {"spec": {"replicas": 3}},
                                   "application/merge-patch+json")
    assert status == 200 and body["spec"]["replicas"] == 3
    # the deployment itself is not its scale subresource: the rule does not cover it
    status, _ = await api.patch(f"{deployments}/web", {"spec": {"replicas": 9}},
                                "application/merge-patch+json")
    assert status == 200 and len(hooks.calls["/validate"]) == 2


async def test_a_generated_name_is_made_after_the_mutating_webhooks(
        api: API, hooks: Hooks) -> None:
    hooks.on("/mutate", lambda r: {"allowed": True})
    hooks.on("/validate", lambda r: {"allowed": True})
    await configure_mutating_and_validating(api, hooks)
    status, created = await api.post(CMS, {"apiVersion": "v1", "kind": "ConfigMap",
                                           "metadata": {"generateName": "gen-"}})
    assert status == 201 and created["metadata"]["name"].startswith("gen-")
    mutating = hooks.calls["/mutate"][0]["review"]["request"]
    validating = hooks.calls["/validate"][0]["review"]["request"]
    assert mutating["name"] == "" and "name" not in mutating["object"]["metadata"]
    assert validating["name"] == ""
    assert validating["object"]["metadata"]["name"] == created["metadata"]["name"]


async def test_a_put_refused_for_its_resource_version_meets_the_mutating_webhooks_only(
        api: API, hooks: Hooks) -> None:
    """Rule: a PUT's mutating admission runs inside objInfo.UpdatedObject, before the store
    parses, requires and compares the object's resourceVersion, and sees the version as
    sent; validating admission runs after those checks, so a refused version never reaches
    it. A stale version is the 409 Conflict, an unparsable one strconv's 500, a Lease
    without one the 422 Invalid.
    Source: k8s.io/apiserver pkg/endpoints/handlers/update.go (mutatingAdmission.Admit in a
    TransformFunc of rest.DefaultUpdatedObjectInfo, AdmissionToValidateObjectUpdateFunc
    passed to r.Update), pkg/registry/generic/registry/store.go (Update: UpdatedObject,
    then ObjectResourceVersion, "must be specified for an update", OptimisticLockErrorMsg,
    then rest.BeforeUpdate and updateValidation)."""
    hooks.on("/mutate", lambda r: {"allowed": True})
    hooks.on("/validate", lambda r: {"allowed": True})
    rules = [{"apiGroups": ["", "coordination.k8s.io"], "apiVersions": ["v1"],
              "operations": ["UPDATE"], "resources": ["configmaps", "leases"]}]
    await configure_mutating_and_validating(api, hooks, rules=rules)
    status, created = await api.post(CMS, cm("versioned"))
    assert status == 201, created
    leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
    assert (await api.post(leases, {"metadata": {"name": "versioned"}}))[0] == 201

    for path, rv, code in [(f"{CMS}/versioned", "1", 409), (f"{CMS}/versioned", "x1", 500),
                           (f"{leases}/versioned", "", 422)]:
        meta = {"name": "versioned", **({"resourceVersion": rv} if rv else {})}
        status, body = await api.put(path, {"metadata": meta})
        assert status == code, body
        sent = hooks.calls["/mutate"][-1]["review"]["request"]["object"]["metadata"]
        assert sent.get("resourceVersion", "") == rv
    assert len(hooks.calls["/mutate"]) == 3
    assert hooks.calls["/validate"] == []
