"""Admission webhooks against kube-apiserver 1.32: when a webhook is asked, and what a
CONNECT's webhooks leave on the answer (k8s.io/apiserver pkg/admission/plugin/webhook)."""

from __future__ import annotations

from typing import Any

from tests.cluster.conftest import API
from tests.cluster.test_admission_webhooks import Obj, configure, patch_response, webhook
from tests.hookserver import Hooks

EXEC = "exec?command=ls&stdout=true"


def _tls(hooks: Hooks, path: str) -> Obj:
    return {"url": hooks.url(path), "caBundle": hooks.ca_bundle}


def _rules(operation: str, resource: str) -> list[Obj]:
    return [{"apiGroups": [""], "apiVersions": ["v1"], "operations": [operation],
             "resources": [resource]}]


async def test_a_namespace_lookup_fails_the_request_only_for_a_webhook_whose_rules_match(
        api: API, hooks: Hooks) -> None:
    """Rule: the rules are checked before a namespace selector's failure counts: a webhook
    whose rules do not match the request is skipped even when its namespace cannot be found;
    one whose rules match fails the request with the namespace's NotFound.
    Source: k8s.io/apiserver pkg/admission/plugin/webhook/generic/webhook.go (ShouldCallHook
    returns matchNsErr only once an invocation is found), predicates/namespace/matcher.go.
    A CONNECT is admitted before anything is looked up, so its namespace may not exist."""
    hooks.on("/validate", lambda r: {"allowed": True})
    selector = {"matchLabels": {"team": "a"}}
    await configure(api, "Validating", "elsewhere", webhook(
        "elsewhere.example.com", _tls(hooks, "/validate"), namespaceSelector=selector,
        rules=_rules("CREATE", "configmaps")))
    status, body = await api.post(f"/api/v1/namespaces/nowhere/pods/shell/{EXEC}", None)
    assert (status, body["message"]) == (404, 'pods "shell" not found'), body

    await configure(api, "Validating", "execs", webhook(
        "execs.example.com", _tls(hooks, "/validate"), namespaceSelector=selector,
        rules=_rules("CONNECT", "pods/exec")))
    status, body = await api.post(f"/api/v1/namespaces/nowhere/pods/shell/{EXEC}", None)
    assert (status, body["message"]) == (404, 'namespaces "nowhere" not found'), body
    assert hooks.calls["/validate"] == []


async def test_an_object_selector_never_selects_a_connects_options(
        api: API, hooks: Hooks) -> None:
    """Rule: a non-empty objectSelector matches an object only through its metadata; a
    CONNECT's PodExecOptions has none (meta.Accessor fails), so even a selector that empty
    labels satisfy does not select it, and the webhook is not asked.
    Source: k8s.io/apiserver pkg/admission/plugin/webhook/predicates/object/matcher.go
    (matchObject: an accessor error is no match)."""
    hooks.on("/validate", lambda r: {"allowed": False, "status": {"message": "no shells"}})
    await configure(api, "Validating", "unlabelled", webhook(
        "unlabelled.example.com", _tls(hooks, "/validate"),
        objectSelector={"matchExpressions": [{"key": "shell", "operator": "DoesNotExist"}]},
        rules=_rules("CONNECT", "pods/exec")))
    status, body = await api.post(f"/api/v1/namespaces/default/pods/shell/{EXEC}", None)
    assert (status, body["message"]) == (404, 'pods "shell" not found'), body
    assert hooks.calls["/validate"] == []


async def test_a_connects_webhook_warnings_are_headers_of_the_servers_answer(
        api: API, hooks: Hooks) -> None:
    """Rule: warnings a CONNECT's webhooks return are Warning headers of the answer the
    server writes (here the pod's NotFound, then a later webhook's denial), mutating
    webhooks' first.
    Source: k8s.io/apiserver pkg/admission/plugin/webhook/mutating/dispatcher.go and
    validating/dispatcher.go (warning.AddWarning for each of result.Warnings, before the
    denial is returned); pkg/endpoints/filters/warning.go (headers set as they are added)."""
    denying = {"on": False}

    def validate(request: Obj) -> Obj:
        return {"allowed": not denying["on"], "warnings": ["validating says"]}

    hooks.on("/mutate", lambda r: {"allowed": True, "warnings": ["mutating says"]})
    hooks.on("/validate", validate)
    await configure(api, "Mutating", "m", webhook(
        "m.example.com", _tls(hooks, "/mutate"), rules=_rules("CONNECT", "pods/exec")))
    await configure(api, "Validating", "v", webhook(
        "v.example.com", _tls(hooks, "/validate"), rules=_rules("CONNECT", "pods/exec")))
    url = f"{api.cluster.url}/api/v1/namespaces/default/pods/shell/{EXEC}"
    expected = ['299 - "mutating says"', '299 - "validating says"']
    async with api.session.post(url, ssl=api.ssl) as resp:
        assert resp.status == 404
        assert resp.headers.getall("Warning") == expected
    denying["on"] = True
    async with api.session.post(url, ssl=api.ssl) as resp:
        assert resp.status == 400
        assert resp.headers.getall("Warning") == expected


async def test_the_built_in_plugins_run_again_after_a_webhook_and_can_reinvoke_it(
        api: API, hooks: Hooks) -> None:
    """Rule: when a mutating webhook changed the object, the whole mutating chain runs once
    more: the built-in plugins (ServiceAccount mounts its token into the container the
    webhook added), then each IfNeeded webhook whose output has changed since it last saw
    it, here by the built-in plugins alone.
    Source: k8s.io/apiserver pkg/admission/reinvocation.go (reinvoker.Admit),
    pkg/admission/plugin/webhook/mutating/dispatcher.go (Dispatch:
    IsOutputChangedSinceLastWebhookInvocation), mutating/reinvocationcontext.go."""
    token_path = "/var/run/secrets/kubernetes.io/serviceaccount"

    def add_sidecar(request: Obj) -> Obj:
        containers = request["object"]["spec"]["containers"]
        if any(c["name"] == "sidecar" for c in containers):
            return {"allowed": True}
        return patch_response([{"op": "add", "path": "/spec/containers/-",
                                "value": {"name": "sidecar", "image": "busybox"}}])

    hooks.on("/mutate", add_sidecar)
    await configure(api, "Mutating", "sidecars", webhook(
        "sidecars.example.com", _tls(hooks, "/mutate"), reinvocationPolicy="IfNeeded",
        rules=_rules("CREATE", "pods")))
    status, pod = await api.post("/api/v1/namespaces/default/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    assert status == 201, pod
    sidecar = pod["spec"]["containers"][1]
    assert [m["mountPath"] for m in sidecar["volumeMounts"]] == [token_path]
    first, again = (c["review"]["request"]["object"] for c in hooks.calls["/mutate"])
    assert len(first["spec"]["containers"]) == 1
    assert again["spec"]["containers"][1]["volumeMounts"][0]["mountPath"] == token_path


async def test_a_mutating_webhook_is_sent_an_empty_list_as_sent_and_storage_reads_null(
        api: API, hooks: Hooks) -> None:
    """Rule: webhooks see the object decoded into its Go type and defaulted, where a
    ``rules: []`` sent is a non-nil empty slice, encoded ``[]`` (an absent one is nil:
    ``null``); only storage's protobuf round trip makes it nil, so the answer reads null.
    Source: k8s.io/apiserver pkg/admission/plugin/webhook/request/admissionreview.go
    (the versioned object encoded as it is); pkg/server/storage/storage_codec.go."""
    hooks.on("/mutate", lambda r: {"allowed": True})
    hooks.on("/validate", lambda r: {"allowed": True})
    rules = [{"apiGroups": ["rbac.authorization.k8s.io"], "apiVersions": ["v1"],
              "operations": ["CREATE"], "resources": ["clusterroles"]}]
    await configure(api, "Mutating", "roles", webhook(
        "roles.example.com", _tls(hooks, "/mutate"), rules=rules))
    await configure(api, "Validating", "roles", webhook(
        "roles.example.com", _tls(hooks, "/validate"), rules=rules))
    roles = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
    bodies: list[tuple[str, Obj]] = [("empty", {"rules": []}), ("absent", {})]
    for name, body in bodies:
        status, created = await api.post(roles, {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name}, **body})
        assert status == 201, created
        assert created["rules"] is None
        assert (await api.get(f"{roles}/{name}"))[1]["rules"] is None
    sent = [c["review"]["request"]["object"]["rules"] for c in hooks.calls["/mutate"]]
    assert sent == [[], None]
    seen = [c["review"]["request"]["object"]["rules"] for c in hooks.calls["/validate"]]
    assert seen == [[], None]


async def test_an_equivalent_version_is_converted_by_the_crds_conversion_webhook(
        api: API, hooks: Hooks) -> None:
    """Rule: with ``matchPolicy: Equivalent`` a webhook whose rules name another version of
    a custom resource is sent the object converted to that version by the CRD's conversion
    webhook (v2 calls v1's ``spec.size`` ``spec.replicas``), and its patch, made there, is
    converted back.
    Source: k8s.io/apiserver pkg/admission/plugin/webhook/generic/webhook.go (ShouldCallHook:
    the equivalent resource's kind), mutating/dispatcher.go (versionedAttributeAccessor,
    ConvertVersionedAttributes; the patched object converted back)."""
    from tests.cluster.test_conversion_webhooks import V1, convert, version

    hooks.on("/convert", convert)
    hooks.on("/mutate", lambda r: patch_response(
        [{"op": "replace", "path": "/spec/replicas", "value": r["object"]["spec"]["replicas"]
          + 1}]))
    hooks.on("/validate", lambda r: {"allowed": True})
    status, body = await api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                           "listKind": "WidgetList"},
                 "versions": [version("v1", "size", storage=True),
                              version("v2", "replicas", storage=False)],
                 "conversion": {"strategy": "Webhook", "webhook": {
                     "conversionReviewVersions": ["v1"],
                     "clientConfig": _tls(hooks, "/convert")}}}})
    assert status == 201, body
    rules = [{"apiGroups": ["example.com"], "apiVersions": ["v2"], "operations": ["CREATE"],
              "resources": ["widgets"]}]
    await configure(api, "Mutating", "widgets", webhook(
        "widgets.example.com", _tls(hooks, "/mutate"), rules=rules))
    await configure(api, "Validating", "widgets", webhook(
        "widgets.example.com", _tls(hooks, "/validate"), rules=rules))

    async def create() -> tuple[int, Obj]:
        return await api.post(V1, {"apiVersion": "example.com/v1", "kind": "Widget",
                                   "metadata": {"name": "w"}, "spec": {"size": 3}})

    status, created = await wait_for_served(create)
    assert status == 201, created
    assert created["spec"] == {"size": 4}
    for path, replicas in (("/mutate", 3), ("/validate", 4)):
        [call] = hooks.calls[path]
        request = call["review"]["request"]
        assert request["kind"] == {"group": "example.com", "version": "v2", "kind": "Widget"}
        assert request["requestKind"]["version"] == "v1"
        assert request["object"]["apiVersion"] == "example.com/v2"
        assert request["object"]["spec"] == {"replicas": replicas}


async def wait_for_served(create: Any) -> tuple[int, Obj]:
    """The create, once the new CRD is served (its establishment is asynchronous)."""
    from tests.waiting import wait_for

    outcome: list[tuple[int, Obj]] = []

    async def served() -> bool:
        outcome[:] = [await create()]
        return outcome[0][0] != 404

    await wait_for(served)
    return outcome[0]
