"""Embedded resources (x-kubernetes-embedded-resource): their defaults must make valid
objects, checked when the CRD is written, and a request's embedded TypeMeta and ObjectMeta
must decode.

kube-apiserver 1.32: apiextensions-apiserver v0.32 pkg/apiserver/schema/defaulting/
validation.go (validate: a default is coerced and validated as ObjectMeta/TypeMeta with
pkg/apiserver/schema/objectmeta before its schema; a default inside an embedded resource's
apiVersion, kind or metadata must "result in valid metadata" of the object around it,
built by surroundingobject.go with kind Validation, apiVersion validation/v1).
"""

from __future__ import annotations

from typing import Any

from tests.cluster.conftest import API
from tests.waiting import wait_for

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
SCHEMA = "spec.validation.openAPIV3Schema.properties[spec].properties[e]"


def _crd(embedded: dict[str, Any]) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "e": {"type": "object", "x-kubernetes-embedded-resource": True, **embedded}}}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "holders.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "holders", "kind": "Holder"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}}]}}


TYPE_META = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}}


async def _causes(api: API, embedded: dict[str, Any]) -> list[tuple[str, str, str]]:
    status, body = await api.post(CRDS, _crd(embedded))
    assert status == 422, body
    return sorted((c["reason"], c["field"], c["message"]) for c in body["details"]["causes"])


async def test_an_embedded_default_needs_kind_and_valid_metadata(api: API) -> None:
    assert await _causes(api, {"properties": TYPE_META, "default": {"apiVersion": "v1"}}) == [
        ("FieldValueRequired", f"{SCHEMA}.default.kind", "Required value: must not be empty")]
    props = {**TYPE_META, "metadata": {"type": "object"}}
    default = {"apiVersion": "v1", "kind": "Thing", "metadata": {"name": "a/b"}}
    assert await _causes(api, {"properties": props, "default": default}) == [
        ("FieldValueInvalid", f"{SCHEMA}.default.metadata.name",
         "Invalid value: \"a/b\": may not contain '/'")]
    # a valid one is accepted
    default["metadata"] = {"name": "ok"}
    status, body = await api.post(CRDS, _crd({"properties": props, "default": default}))
    assert status == 201, body


async def test_defaults_inside_type_and_object_meta_must_result_in_valid_metadata(
        api: API) -> None:
    props = {"apiVersion": {"type": "string", "default": "a/b/c"},
             "kind": {"type": "string"},
             "metadata": {"type": "object", "properties": {
                 "name": {"type": "string", "default": "a/b"}}}}
    assert await _causes(api, {"properties": props}) == [
        ("FieldValueInvalid", f"{SCHEMA}.properties[apiVersion].default",
         'Invalid value: "a/b/c": must result in valid metadata: apiVersion: Invalid value: '
         '"a/b/c": unexpected GroupVersion string: a/b/c'),
        ("FieldValueInvalid", f"{SCHEMA}.properties[metadata].properties[name].default",
         'Invalid value: "a/b": must result in valid metadata: metadata.name: Invalid value: '
         "\"a/b\": may not contain '/'"),
    ]


async def test_embedded_metadata_that_does_not_decode_is_a_bad_request(api: API) -> None:
    # customresource_handler.go unstructuredSchemaCoercer.apply: objectmeta.CoerceWithOptions
    # without DropInvalidFields for request bodies; its field error is the decode error
    # transformDecodeError answers with (k8s.io/apiserver/pkg/endpoints/handlers/rest.go)
    crd = _crd({"x-kubernetes-preserve-unknown-fields": True})
    status, body = await api.post(CRDS, crd)
    assert status == 201, body

    async def served() -> bool:
        return (await api.get(HOLDERS))[0] == 200

    await wait_for(served)
    prefix = 'Holder in version "v1" cannot be handled as a Holder: '
    cases = [
        ({"labels": "x"}, 'spec.e.metadata: Invalid value: map[string]interface {}{"labels":"x"}'
                          ": json: cannot unmarshal string into Go struct field "
                          "ObjectMeta.labels of type map[string]string"),
        ({"name": 5}, 'spec.e.metadata: Invalid value: map[string]interface {}{"name":5}: json: '
                      "cannot unmarshal number into Go struct field ObjectMeta.name of type "
                      "string"),
        ("meta", 'spec.e.metadata: Invalid value: "meta": json: cannot unmarshal string into Go '
                 "value of type v1.ObjectMeta"),
    ]
    for meta, message in cases:
        status, body = await api.post(HOLDERS, _holder({"apiVersion": "v1", "kind": "Pod",
                                                        "metadata": meta}))
        assert (status, body["reason"], body["message"]) == (400, "BadRequest",
                                                             prefix + message), body
    status, body = await api.post(HOLDERS, _holder({"apiVersion": "v1", "kind": 5}))
    assert (status, body["message"]) == (
        400, prefix + "spec.e.kind: Invalid value: 5: must be a string"), body


HOLDERS = "/apis/example.com/v1/namespaces/default/holders"


def _holder(embedded: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Holder", "metadata": {"name": "h1"},
            "spec": {"e": embedded}}
