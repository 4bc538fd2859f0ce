"""Helpers for the write-path fidelity tests: raw requests that keep the Warning headers, the
Status of a failure as kube-apiserver writes it, a ConfigMap to write to, and a small custom
resource definition with a status subresource."""

from __future__ import annotations

import re
from typing import Any

import orjson

from tests.cluster.conftest import API
from tests.waiting import wait_for

APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"

_WARNING = re.compile(r'^299 - "(.*)"$', re.S)


def failure(code: int, reason: str, message: str,
            details: dict[str, Any] | None = None) -> dict[str, Any]:
    """A failure's Status with its keys in the order kube-apiserver writes them."""
    out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                           "status": "Failure", "message": message, "reason": reason}
    if details is not None:
        out["details"] = details
    out["code"] = code
    return out


async def create_configmap(api: API, name: str,
                           namespace_path: str = "/api/v1/namespaces/default") -> dict[str, Any]:
    """A ConfigMap ``name`` with one key, as created."""
    status, out = await api.post(f"{namespace_path}/configmaps",
                                 {"metadata": {"name": name}, "data": {"a": "1"}})
    assert status == 201, out
    assert isinstance(out, dict)
    return out


async def send(api: API, method: str, path: str, body: Any = None, *,
               content_type: str = "application/json") -> tuple[int, Any, list[str]]:
    """A request answered as (status, decoded body, Warning texts in order)."""
    data = body if isinstance(body, bytes) else orjson.dumps(body) if body is not None else None
    async with api.session.request(method, api.cluster.url + path, data=data,
                                   headers={"Content-Type": content_type},
                                   ssl=api.ssl) as resp:
        text = await resp.text()
        warnings = []
        for header in resp.headers.getall("Warning", []):
            m = _WARNING.match(header)
            warnings.append(m.group(1).replace('\\"', '"').replace("\\\\", "\\")
                            if m else header)
        decoded = orjson.loads(text) if text and resp.content_type.endswith("json") else text
        return resp.status, decoded, warnings


GROUP = "fidelity.example.com"
WIDGETS = f"/apis/{GROUP}/v1/namespaces/default/widgets"
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {"group": GROUP, "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
             "versions": [{
                 "name": "v1", "served": True, "storage": True,
                 "subresources": {"status": {}},
                 "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                     "spec": {"type": "object", "properties": {
                         "size": {"type": "integer"},
                         "free": {"type": "object",
                                  "x-kubernetes-preserve-unknown-fields": True}}},
                     "status": {"type": "object", "properties": {
                         "ready": {"type": "boolean"},
                         "count": {"type": "integer", "minimum": 0}}}}}}}]}}


async def create_widget_crd(api: API) -> None:
    """The Widget CRD created and served."""
    status, body = await api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                  CRD)
    assert status == 201, body

    async def served() -> bool:
        return (await api.get(WIDGETS))[0] == 200

    await wait_for(served)


def widget(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": name},
            **fields}
