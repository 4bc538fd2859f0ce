"""The resourceVersion a write sends in its object: parsed as a number before anything else
of the update is checked.

kube-apiserver 1.32: k8s.io/apiserver pkg/registry/generic/registry/store.go (Update: inside
the storage's update function, ``Versioner().ObjectResourceVersion(obj)`` right after
``objInfo.UpdatedObject``, before the create-on-update branch, the strategy and validation)
and pkg/storage/api_object_versioner.go (ObjectResourceVersion: ``strconv.ParseUint(version,
10, 64)``, its error returned bare). Nothing above the store turns a *strconv.NumError into a
Status (storeerr.InterpretUpdateError knows storage errors only), so
responsewriters.ErrorToAPIStatus writes a 500 with no reason and strconv's words. That is
what kube-apiserver says, and what clients see: the recorded corpus holds it
(conformance/golden/configmap-conflicts.json, step update-with-garbage-rv), so the embedded
server keeps the same code, reason and message.

Reads with ``?resourceVersion=abc`` are test_resource_versions.py's
(test_non_numeric_resource_version); they already matched.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.conftest import API
from tests.cluster.fidelity.writes import APPLY, JSON_PATCH, MERGE, STRATEGIC, create_configmap

pytestmark = pytest.mark.asyncio(loop_scope="module")

NS = "/api/v1/namespaces/default"


def _parse_uint_500(value: str, why: str = "invalid syntax") -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'strconv.ParseUint: parsing "{value}": {why}', "code": 500}


async def _unchanged(api: API, before: dict[str, Any]) -> None:
    status, now = await api.get(f"{NS}/configmaps/{before['metadata']['name']}")
    assert status == 200
    assert now["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert now["data"] == before["data"]


@pytest.mark.parametrize("value", ["abc", "-1", "1.5"])
async def test_put_with_a_non_numeric_resource_version_is_strconvs_500(
        module_api: API, value: str) -> None:
    """store.go Update → ObjectResourceVersion: the bare strconv error, a 500 (not the
    Conflict a mismatched number gets); the object is untouched."""
    name = f"put-rv-{value.replace('.', '').replace('-', 'm')}"
    cm = await create_configmap(module_api, name)
    status, out = await module_api.put(f"{NS}/configmaps/{name}", {
        "metadata": {"name": name, "resourceVersion": value}, "data": {"a": "2"}})
    assert (status, out) == (500, _parse_uint_500(value))
    await _unchanged(module_api, cm)


async def test_a_resource_version_out_of_uint64_range(module_api: API) -> None:
    """strconv.ParseUint's range error ("value out of range"), the same 500."""
    cm = await create_configmap(module_api, "put-rv-range")
    big = "99999999999999999999"
    status, out = await module_api.put(f"{NS}/configmaps/put-rv-range", {
        "metadata": {"name": "put-rv-range", "resourceVersion": big}})
    assert (status, out) == (500, _parse_uint_500(big, "value out of range"))
    await _unchanged(module_api, cm)


async def test_the_parse_comes_before_validation(module_api: API) -> None:
    """ObjectResourceVersion runs before rest.BeforeUpdate's validation: an invalid object
    with an unparsable resourceVersion is the 500, not the 422."""
    await create_configmap(module_api, "put-rv-invalid")
    status, out = await module_api.put(f"{NS}/configmaps/put-rv-invalid", {
        "metadata": {"name": "put-rv-invalid", "resourceVersion": "abc",
                     "labels": {"-bad-": "x"}}})
    assert (status, out) == (500, _parse_uint_500("abc"))


@pytest.mark.parametrize(("kind", "content_type", "patch"), [
    ("merge", MERGE, {"metadata": {"resourceVersion": "abc"}}),
    ("strategic", STRATEGIC, {"metadata": {"resourceVersion": "abc"}}),
    ("json", JSON_PATCH, [{"op": "replace", "path": "/metadata/resourceVersion",
                           "value": "abc"}]),
])
async def test_a_patch_that_sets_a_non_numeric_resource_version(
        module_api: API, kind: str, content_type: str, patch: Any) -> None:
    """handlers/patch.go hands the patched object to the same store.go Update
    (UpdatedObject is the patch): the same 500."""
    cm = await create_configmap(module_api, f"patch-rv-{kind}")
    status, out = await module_api.patch(f"{NS}/configmaps/patch-rv-{kind}", patch,
                                         content_type)
    assert (status, out) == (500, _parse_uint_500("abc"))
    await _unchanged(module_api, cm)


async def test_apply_with_a_non_numeric_resource_version_updates_or_creates_nothing(
        module_api: API) -> None:
    """Server-side apply goes through store.go Update too, with forceAllowCreate: the parse
    precedes the create branch, so an absent object is not created either."""
    cm = await create_configmap(module_api, "apply-rv")
    config = ('{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "%s", '
              '"resourceVersion": "abc"}, "data": {"b": "9"}}')
    for name in ("apply-rv", "apply-rv-new"):
        status, out = await module_api.patch(
            f"{NS}/configmaps/{name}?fieldManager=tester", None, APPLY,
            raw=(config % name).encode())
        assert (status, out) == (500, _parse_uint_500("abc")), name
    await _unchanged(module_api, cm)
    status, _ = await module_api.get(f"{NS}/configmaps/apply-rv-new")
    assert status == 404


async def test_resource_versions_are_compared_as_numbers(module_api: API) -> None:
    """store.go Update compares the parsed uint64s (``newResourceVersion !=
    existingResourceVersion``): a leading zero names the same version, a different number
    is the Conflict."""
    cm = await create_configmap(module_api, "rv-numbers")
    current = cm["metadata"]["resourceVersion"]
    status, out = await module_api.put(f"{NS}/configmaps/rv-numbers", {
        "metadata": {"name": "rv-numbers", "resourceVersion": str(int(current) + 1000)}})
    assert (status, out["reason"]) == (409, "Conflict")
    status, out = await module_api.put(f"{NS}/configmaps/rv-numbers", {
        "metadata": {"name": "rv-numbers", "resourceVersion": f"0{current}"},
        "data": {"a": "2"}})
    assert status == 200, out
    assert out["data"] == {"a": "2"}
