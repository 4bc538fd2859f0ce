"""PATCH against kube-apiserver 1.32, rules found in an audit of JSON, merge and strategic
merge patches.

A JSON patch's ``test`` runs in evanphx/json-patch v4 (gopkg.in/evanphx/json-patch.v4 v4.12.0,
as k8s.io/apiserver pkg/endpoints/handlers/patch.go imports it), whose ``lazyNode.equal``
compares scalars by the bytes of their JSON text: the live object's as Go's encoding/json
wrote it (``runtime.Encode(p.codec, currentObject)`` in patch.go) against the operation's value
as the client sent it. Any failed operation is patch.go's generic 422 (NewGenericServerResponse
drops the library's text). Each test writes a Lease of its own name and deletes it; all share
one server (``module_api``).
"""

from __future__ import annotations

import json

import pytest

from tests.cluster.conftest import API
from tests.cluster.fidelity.writes import JSON_PATCH, failure

pytestmark = pytest.mark.asyncio(loop_scope="module")

LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
TEST_FAILED = failure(422, "Invalid",
                      "the server rejected our request due to an error in our request", {})


async def _lease(api: API, name: str, holder: str) -> dict[str, object]:
    status, out = await api.post(LEASES, {"metadata": {"name": name},
                                          "spec": {"holderIdentity": holder,
                                                   "leaseDurationSeconds": 1}})
    assert status == 201, out
    assert isinstance(out, dict)
    return out


async def _test_then_replace(api: API, name: str, test_op: bytes) -> tuple[int, object]:
    """A JSON patch of ``test_op`` (raw JSON) then a replace of the holder, sent as is."""
    raw = (b"[" + test_op + b', {"op": "replace", "path": "/spec/holderIdentity", '
           b'"value": "changed"}]')
    return await api.patch(f"{LEASES}/{name}", None, JSON_PATCH, raw=raw)


_TEXT_CASES = [
    # the live 1 is the text "1": the same number written 1.0 or the boolean true is not it
    ("int", "h", b'{"op": "test", "path": "/spec/leaseDurationSeconds", "value": 1}', True),
    ("float", "h", b'{"op": "test", "path": "/spec/leaseDurationSeconds", "value": 1.0}',
     False),
    ("bool", "h", b'{"op": "test", "path": "/spec/leaseDurationSeconds", "value": true}',
     False),
    # encoding/json escapes <, > and & in the live text ("\u003c"), never non-ASCII letters
    ("html-plain", "a<b", b'{"op": "test", "path": "/spec/holderIdentity", "value": "a<b"}',
     False),
    ("html-escaped", "a<b",
     b'{"op": "test", "path": "/spec/holderIdentity", "value": "a\\u003cb"}', True),
    ("utf8", "\u00e9", '{"op": "test", "path": "/spec/holderIdentity", "value": "\u00e9"}'
     .encode(), True),
    ("unicode-escaped", "\u00e9",
     b'{"op": "test", "path": "/spec/holderIdentity", "value": "\\u00e9"}', False),
    # a null value is Go's nil message: it matches a missing member, not a present one
    ("null-missing", "h", b'{"op": "test", "path": "/spec/nope", "value": null}', True),
    ("null-present", "h", b'{"op": "test", "path": "/spec/holderIdentity", "value": null}',
     False),
    # objects compare member by member, their scalars again by text
    ("object", "h", b'{"op": "test", "path": "/spec", "value": '
     b'{"leaseDurationSeconds": 1, "holderIdentity": "h"}}', True),
    ("object-float", "h", b'{"op": "test", "path": "/spec", "value": '
     b'{"leaseDurationSeconds": 1.0, "holderIdentity": "h"}}', False),
]


@pytest.mark.parametrize(("case", "holder", "test_op", "passes"), _TEXT_CASES,
                         ids=[c[0] for c in _TEXT_CASES])
async def test_a_json_patch_test_compares_values_by_their_json_text(
        module_api: API, case: str, holder: str, test_op: bytes, passes: bool) -> None:
    """Rule: ``test`` compares scalars by JSON text, so a value equal when decoded may fail.
    Source: gopkg.in/evanphx/json-patch.v4 v4.12.0 patch.go (``Patch.test``: ``val == nil``
    passes for a nil value; ``lazyNode.equal``: ``bytes.Equal(n.compact(), o.compact())``);
    encoding/json encode.go (``floatEncoder``, HTML-safe string escaping); k8s.io/apiserver
    pkg/endpoints/handlers/patch.go (``applyJSPatch``: a failed operation is a generic 422)."""
    name = f"jp-test-{case}"
    await _lease(module_api, name, holder)
    try:
        status, out = await _test_then_replace(module_api, name, test_op)
        if passes:
            assert status == 200, out
            assert isinstance(out, dict) and out["spec"]["holderIdentity"] == "changed"
        else:
            assert (status, out) == (422, TEST_FAILED)
    finally:
        await module_api.delete(f"{LEASES}/{name}")


async def test_a_json_patch_test_of_the_empty_pointer_compares_the_whole_object(
        module_api: API) -> None:
    """Rule: ``test`` with the pointer ``""`` compares the whole live object (other operations
    find nothing at ``""``); the object as served, sent back, passes; anything else fails.
    Source: gopkg.in/evanphx/json-patch.v4 v4.12.0 patch.go (``Patch.test``: ``if path == ""``
    compares ``*doc`` itself)."""
    name = "jp-test-whole"
    live = await _lease(module_api, name, "h")
    try:
        whole = json.dumps(live).encode()
        status, out = await _test_then_replace(
            module_api, name, b'{"op": "test", "path": "", "value": ' + whole + b"}")
        assert status == 200, out
        assert isinstance(out, dict) and out["spec"]["holderIdentity"] == "changed"
        status, out = await _test_then_replace(
            module_api, name, b'{"op": "test", "path": "", "value": ' + whole + b"}")
        assert (status, out) == (422, TEST_FAILED)  # the object has changed since
        status, out = await _test_then_replace(
            module_api, name, b'{"op": "test", "path": "", "value": {}}')
        assert (status, out) == (422, TEST_FAILED)
    finally:
        await module_api.delete(f"{LEASES}/{name}")


CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


@pytest.mark.parametrize(("case", "query", "patch", "shown", "detail"), [
    ("map", "", {"data": "x"}, "map[data:x]", "cannot restore map from string"),
    ("struct", "", {"metadata": "x"}, "map[metadata:x]", "cannot restore struct from: string"),
    ("slice", "", {"metadata": {"finalizers": {"a": 1}}}, "map[metadata:map[finalizers:map[a:1]]]",
     "cannot restore slice from map"),
    ("bool", "", {"immutable": "yes"}, "map[immutable:yes]", "unrecognized type: bool"),
    ("int-from-string", "", {"metadata": {"generation": "2"}},
     "map[metadata:map[generation:2]]", "unrecognized type: int64"),
    ("int-from-fraction", "", {"metadata": {"generation": 1.5}},
     "map[metadata:map[generation:1.5]]", "cannot convert float64 to int64"),
    ("string-from-int", "", {"metadata": {"generateName": 5}},
     "map[metadata:map[generateName:5]]", "cannot convert int64 to string"),
    ("strict-unknown", "?fieldValidation=Strict", {"foo": {"bar": 1}}, "map[foo:map[bar:1]]",
     'strict decoding error: unknown field "foo"'),
])
async def test_a_strategic_merge_patchs_result_is_converted_from_a_map_and_shows_the_patch(
        module_api: API, case: str, query: str, patch: dict[str, object], shown: str,
        detail: str) -> None:
    """Rule: a strategic merge patch's result is converted to the typed object from a map, so
    a value of the wrong type is the unstructured converter's error (not encoding/json's), and
    the 422's cause on ``patch`` shows the patch map as Go's ``%+v`` prints it (not the
    patched object's JSON, as for JSON and merge patches).
    Source: k8s.io/apiserver pkg/endpoints/handlers/patch.go (applyPatchToObject:
    ``field.Invalid(field.NewPath("patch"), fmt.Sprintf("%+v", patchMap), err.Error())``);
    k8s.io/apimachinery pkg/runtime/converter.go (fromUnstructured: "cannot convert %s to %s",
    "unrecognized type: %v"; mapFromUnstructured, sliceFromUnstructured,
    structFromUnstructured: "cannot restore ... from")."""
    name = f"smp-convert-{case}"
    status, out = await module_api.post(CONFIGMAPS, {"metadata": {"name": name},
                                                     "data": {"a": "1"}})
    assert status == 201, out
    try:
        status, out = await module_api.patch(f"{CONFIGMAPS}/{name}{query}", patch,
                                             "application/strategic-merge-patch+json")
        cause = f'Invalid value: "{shown}": {detail}'
        assert (status, out["reason"], out["message"]) == (
            422, "Invalid", f' "" is invalid: patch: {cause}')
        assert out["details"]["causes"] == [
            {"reason": "FieldValueInvalid", "message": cause, "field": "patch"}]
    finally:
        await module_api.delete(f"{CONFIGMAPS}/{name}")
