"""Admission webhooks against kube-apiserver 1.32: when a webhook is asked, and what a
CONNECT's webhooks leave on the answer (k8s.io/apiserver pkg/admission/plugin/webhook)."""

from __future__ import annotations

from tests.cluster.conftest import API
from tests.cluster.test_admission_webhooks import Obj, configure, webhook
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
