"""The order of a write's ``Warning`` headers: the order in which its steps recorded them.

Sources (k8s.io/apiserver v0.32 and kubernetes v1.32): pkg/endpoints/filters/warning.go (the
recorder keeps warnings in the order added, each once); pkg/admission/plugin/webhook/
mutating/dispatcher.go and validating/dispatcher.go (a webhook's ``response.warnings`` added
as it answers); pkg/endpoints/handlers/create.go (``NewManagedFieldsValidatingAdmissionController``
wrapped around the mutating admission, then ``r.Create``); pkg/registry/rest/create.go
(``BeforeCreate``: the strategy's ``WarningsOnCreate`` after validation);
pkg/registry/generic/registry/store.go (createValidation after BeforeCreate);
pkg/registry/core/pod/strategy.go and pkg/api/pod/warnings.go (a pod's warnings).
"""

from __future__ import annotations

from typing import Any

import orjson

from tests.cluster.conftest import API
from tests.cluster.test_admission_webhooks import configure, patch_response, webhook
from tests.hookserver import Hooks

Obj = dict[str, Any]

PODS = "/api/v1/namespaces/default/pods"
POD_RULES = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
              "resources": ["pods"]}]



async def test_warnings_come_in_the_order_the_steps_of_the_create_recorded_them(
        api: API, hooks: Hooks) -> None:
    """Rule: the mutating webhook's warning first (added as it answers), then the
    managed-fields warning (checked once the mutating admission is done), then the pod
    strategy's WarningsOnCreate (a name that is no DNS label, a deprecated annotation) from
    rest.BeforeCreate, then the validating webhook's warning."""
    broken = [{"manager": "hook", "operation": "Update", "apiVersion": "v1",
               "fieldsV1": {"f:spec": {}}}]
    hooks.on("/mutate", lambda r: {**patch_response(
        [{"op": "replace", "path": "/metadata/managedFields", "value": broken}]),
        "warnings": ["from the mutating webhook"]})
    hooks.on("/validate", lambda r: {"allowed": True,
                                     "warnings": ["from the validating webhook"]})
    tls = {"caBundle": hooks.ca_bundle}
    await configure(api, "Mutating", "m", webhook(
        "m.example.com", {"url": hooks.url("/mutate"), **tls}, rules=POD_RULES))
    await configure(api, "Validating", "v", webhook(
        "v.example.com", {"url": hooks.url("/validate"), **tls}, rules=POD_RULES))

    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "web.a", "annotations": {"scheduler.alpha.kubernetes.io/critical-pod": ""}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    async with api.session.post(f"{api.cluster.url}{PODS}", data=orjson.dumps(pod),
                                ssl=api.ssl,
                                headers={"Content-Type": "application/json"}) as resp:
        body = await resp.read()
        assert resp.status == 201, body
        warnings = resp.headers.getall("Warning", [])
    assert warnings == [
        '299 - "from the mutating webhook"',
        '299 - ".metadata.managedFields was in an invalid state after admission; this could '
        'be caused by an outdated mutating admission controller; please fix your requests: '
        'missing fieldsType in managed fields entry 0"',
        '299 - "metadata.name: this is used in the Pod\'s hostname, which can result in '
        'surprising behavior; a DNS label is recommended: [must not contain dots]"',
        '299 - "metadata.annotations[scheduler.alpha.kubernetes.io/critical-pod]: '
        'non-functional in v1.16+; use the \\"priorityClassName\\" field instead"',
        '299 - "from the validating webhook"',
    ]
