"""Validation ratcheting of custom resources (CRDValidationRatcheting, on by default in 1.32):
an update keeps values that a later, stricter schema refuses as long as they do not change.

apiextensions-apiserver v0.32 pkg/registry/customresource/strategy.go ValidateUpdate: the
OpenAPI schema and the CEL rules ratchet per correlated value (validation.WithRatcheting,
cel.WithRatcheting), the x-kubernetes-list-type invariants as a whole (checked only when the
stored object has none of those errors). A ratcheted OpenAPI error is dropped silently; a
ratcheted CEL rule failure becomes a Warning with the error's text (pkg/apiserver/schema/cel/
validation.go validateExpressions ``addErr``: ``warning.AddWarning(ctx, "", e.Error())`` when
the rule does not use oldSelf and ``shouldRatchetError``).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.conftest import API
from tests.cluster.fidelity.widgets import widget_crd
from tests.cluster.fidelity.writes import send
from tests.waiting import wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _crd(group: str, strict: bool) -> dict[str, Any]:
    tags: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
    ports: dict[str, Any] = {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "port": {"type": "integer"}}}}
    spec: dict[str, Any] = {"type": "object", "properties": {
        "tags": tags, "other": dict(tags), "ports": ports,
        "size": {"type": "integer"}, "name": {"type": "string"}}}
    if strict:
        tags["x-kubernetes-list-type"] = "set"
        spec["properties"]["other"] = {**tags}
        ports.update({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]})
        ports["items"]["required"] = ["name"]
        spec["properties"]["size"]["maximum"] = 3
        spec["x-kubernetes-validations"] = [{"rule": "self.name.startsWith('w')",
                                             "message": "name must start with w"}]
    return widget_crd(group, spec)


async def _tighten(api: API, group: str, spec: dict[str, Any]) -> str:
    """A widget with ``spec`` stored under the loose schema, then the schema made strict;
    the widget's path."""
    status, body = await api.post(CRDS, _crd(group, strict=False))
    assert status == 201, body
    widgets = f"/apis/{group}/v1/namespaces/default/widgets"

    async def served() -> bool:
        return (await api.get(widgets))[0] == 200
    await wait_for(served)
    status, body = await api.post(widgets, {"apiVersion": f"{group}/v1", "kind": "Widget",
                                            "metadata": {"name": "w"}, "spec": spec})
    assert status == 201, body
    status, crd = await api.get(f"{CRDS}/widgets.{group}")
    strict = _crd(group, strict=True)
    strict["metadata"] = crd["metadata"]
    status, body = await api.put(f"{CRDS}/widgets.{group}", strict)
    assert status == 200, body

    async def strict_served() -> bool:
        status, _ = await api.post(f"{widgets}?dryRun=All", {
            "apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "probe"},
            "spec": {"size": 9, "name": "w"}})
        return status == 422
    await wait_for(strict_served)
    return f"{widgets}/w"


async def _update(api: API, path: str, change: dict[str, Any]) -> tuple[int, Any, list[str]]:
    status, current = await api.get(path)
    assert status == 200, current
    current["spec"].update(change)
    return await send(api, "PUT", path, current)


async def test_unchanged_invalid_values_are_kept_the_rule_failure_a_warning(module_api: API
                                                                           ) -> None:
    """Rule: with ``size: 7`` over a new maximum of 3 and a name a new rule refuses, an update
    changing only a label is accepted, the unchanged spec's rule failure a Warning (the
    maximum draws none); changing the size to another invalid value is refused for the size,
    and the rule (on the changed spec) fails too."""
    ratcheted = ['spec: Invalid value: "object": name must start with w']
    path = await _tighten(module_api, "ratchet-values.example.com",
                          {"size": 7, "name": "x", "tags": ["a"]})
    status, body, warnings = await _update(module_api, path, {})
    assert (status, warnings) == (200, ratcheted), body["message"] if status != 200 else body
    status, current = await module_api.get(path)
    current["metadata"]["labels"] = {"touched": "yes"}
    status, body, warnings = await send(module_api, "PUT", path, current)
    assert (status, warnings) == (200, ratcheted), body["message"] if status != 200 else body
    status, body, _ = await _update(module_api, path, {"size": 8})
    assert status == 422, body
    assert [(c["field"], c["message"]) for c in body["details"]["causes"]] == [
        ("spec.size", "Invalid value: 8: spec.size in body should be less than or equal to 3"),
        ("spec", 'Invalid value: "object": name must start with w')]


async def test_list_types_ratchet_as_a_whole(module_api: API) -> None:
    """Rule: while the stored object breaks a list-type invariant (``tags`` repeats "a" under
    a new ``x-kubernetes-list-type: set``), an update is not list-type checked at all: a new
    duplicate in ``other`` is accepted. Once the stored object is clean, a duplicate is
    refused, each repeated value reported once, at its second occurrence (listtype/
    validation.go validateListSet), a map list's by its key."""
    path = await _tighten(module_api, "ratchet-lists.example.com",
                          {"tags": ["a", "a"], "other": ["x"], "name": "w"})
    status, body, warnings = await _update(module_api, path, {"other": ["x", "x"]})
    assert (status, warnings) == (200, []), body["message"] if status != 200 else body
    status, body, _ = await _update(module_api, path, {"tags": ["a"], "other": ["x"]})
    assert status == 200, body
    status, body, _ = await _update(module_api, path, {
        "tags": ["a", "b", "a", "a", "b"],
        "ports": [{"name": "http", "port": 80}, {"name": "http", "port": 81}]})
    assert status == 422, body
    # (sorted: Go walks an object's properties in map order, which is random)
    assert sorted((c["field"], c["message"]) for c in body["details"]["causes"]) == [
        ("spec.ports[1]", 'Duplicate value: map[string]interface {}{"name":"http"}'),
        ("spec.tags[2]", 'Duplicate value: "a"'),
        ("spec.tags[4]", 'Duplicate value: "b"')]


async def test_rule_failures_ratchet_by_correlation(module_api: API) -> None:
    """Rule: rules added after the object was stored ratchet by apiserver pkg/cel/common/
    equality.go correlation: an atomic list's items (no old value of their own) with the
    list, map-list items by key (a reordered map list is unchanged); a changed value fails,
    and the still-ratcheted failures reach the 422 as Warnings (the warning recorder writes
    headers as they come, whatever the answer)."""
    group = "ratchet-correlation.example.com"
    crd = _crd(group, strict=False)
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["ports"].update(
        {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]})
    spec["properties"]["ports"]["items"]["required"] = ["name"]
    status, body = await module_api.post(CRDS, crd)
    assert status == 201, body
    widgets = f"/apis/{group}/v1/namespaces/default/widgets"

    async def served() -> bool:
        return (await module_api.get(widgets))[0] == 200
    await wait_for(served)
    status, body = await module_api.post(widgets, {
        "apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"tags": ["ab", "c"], "ports": [{"name": "a", "port": 1},
                                                {"name": "b", "port": 20}]}})
    assert status == 201, body
    status, current = await module_api.get(f"{CRDS}/widgets.{group}")
    spec = current["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["tags"]["items"]["x-kubernetes-validations"] = [
        {"rule": "self.size() > 1", "message": "tag too short"}]
    spec["properties"]["ports"]["items"]["x-kubernetes-validations"] = [
        {"rule": "self.port > 10", "message": "port too low"}]
    status, body = await module_api.put(f"{CRDS}/widgets.{group}", current)
    assert status == 200, body

    async def rules_served() -> bool:
        status, _ = await module_api.post(f"{widgets}?dryRun=All", {
            "apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "probe"},
            "spec": {"tags": ["c"]}})
        return status == 422
    await wait_for(rules_served)
    tag = 'spec.tags[1]: Invalid value: "string": tag too short'
    status, body, warnings = await _update(module_api, f"{widgets}/w", {
        "ports": [{"name": "b", "port": 20}, {"name": "a", "port": 1}]})
    assert (status, sorted(warnings)) == (
        200, ['spec.ports[1]: Invalid value: "object": port too low', tag]), body
    status, body, warnings = await _update(module_api, f"{widgets}/w", {
        "ports": [{"name": "b", "port": 20}, {"name": "a", "port": 2}]})
    assert (status, warnings) == (422, [tag]), body
    assert [(c["field"], c["message"]) for c in body["details"]["causes"]] == [
        ("spec.ports[1]", 'Invalid value: "object": port too low')]
