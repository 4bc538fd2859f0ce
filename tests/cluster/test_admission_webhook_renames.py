"""A mutating webhook that moves or renames the object it is asked about.

Sources (k8s.io/apiserver v0.32): pkg/admission/plugin/webhook/mutating/dispatcher.go (the
patched object is taken as the webhook made it: no check of its name or namespace);
pkg/registry/rest/create.go ``BeforeCreate`` and update.go ``BeforeUpdate`` (first
``EnsureObjectNamespaceMatchesRequestNamespace``, registry/rest/meta.go: another namespace
is a 400, none is the request's); pkg/registry/generic/registry/store.go (create: the key
from ``ObjectNameFunc(obj)`` after admission; Update: the key from the URL's name, the
name then judged by ``validateCommonFields``'s ``ValidateObjectMetaAccessorUpdate`` and
the strategy's ``ValidateUpdate``, each naming it immutable).
"""

from __future__ import annotations

from typing import Any

from tests.cluster.conftest import API
from tests.cluster.test_admission_webhooks import CMS, cm, configure, patch_response, webhook
from tests.hookserver import Hooks

Obj = dict[str, Any]

MISMATCH = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "the namespace of the provided object does not match the namespace "
                       "sent on the request", "reason": "BadRequest", "code": 400}



async def test_a_webhook_may_not_move_an_object_and_renames_only_what_it_creates(
        api: API, hooks: Hooks) -> None:
    """Rule: a namespace a mutating webhook sets is refused as the REST layer refuses a
    body's (400 BadRequest), on create and update, and nothing is stored in either
    namespace; a namespace it removes is the request's again; a name it changes on create
    is the name created, on update an Invalid (metadata.name immutable, once from the
    common metadata checks and once from the ConfigMap strategy's)."""
    status, body = await api.post("/api/v1/namespaces", {"metadata": {"name": "other"}})
    assert status == 201, body
    change: list[Obj] = []
    hooks.on("/mutate", lambda r: patch_response(change) if change else {"allowed": True})
    await configure(api, "Mutating", "m", webhook(
        "m.example.com", {"url": hooks.url("/mutate"), "caBundle": hooks.ca_bundle}))
    status, base = await api.post(CMS, cm("base"))
    assert status == 201, base

    change[:] = [{"op": "replace", "path": "/metadata/namespace", "value": "other"}]
    assert await api.post(CMS, cm("moved")) == (400, MISMATCH)
    assert await api.put(f"{CMS}/base", {**base, "data": {"k": "moved"}}) == (400, MISMATCH)
    for namespace in ("default", "other"):
        status, _ = await api.get(f"/api/v1/namespaces/{namespace}/configmaps/moved")
        assert status == 404
    assert (await api.get(f"{CMS}/base"))[1]["data"] == {"k": "v"}

    change[:] = [{"op": "remove", "path": "/metadata/namespace"}]
    status, created = await api.post(CMS, cm("kept"))
    assert (status, created["metadata"]["namespace"]) == (201, "default"), created
    status, updated = await api.put(f"{CMS}/base", {**base, "data": {"k": "kept"}})
    assert (status, updated["metadata"]["namespace"]) == (200, "default"), updated

    change[:] = [{"op": "replace", "path": "/metadata/name", "value": "renamed"}]
    status, created = await api.post(CMS, cm("asked"))
    assert (status, created["metadata"]["name"]) == (201, "renamed"), created
    assert (await api.get(f"{CMS}/asked"))[0] == 404
    status, body = await api.put(f"{CMS}/base", {**updated, "data": {"k": "renamed"}})
    immutable = {"reason": "FieldValueInvalid", "field": "metadata.name",
                 "message": 'Invalid value: "renamed": field is immutable'}
    assert (status, body["reason"], body["message"]) == (
        422, "Invalid", 'ConfigMap "renamed" is invalid: metadata.name: Invalid value: '
                        '"renamed": field is immutable'), body
    assert body["details"] == {"name": "renamed", "kind": "ConfigMap",
                               "causes": [immutable, immutable]}
