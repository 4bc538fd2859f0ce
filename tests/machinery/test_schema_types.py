"""The definitions' JSON-Schema rendering writes a nullable field's type as ``[t, "null"]``;
OpenAPI (kube-openapi's ``spec.Schema.Type``, a string array whose single member
kube-apiserver serves as a string) knows no ``null`` type. One helper turns the one into the
other for both readers of the definitions: the served OpenAPI documents and the CEL type
checker's resolved schemas (k8s.io/apiserver pkg/cel/openapi/resolver)."""

from __future__ import annotations

from setpoint.cluster.admission.policy.schemaresolver import resolve_schema
from setpoint.cluster.openapi.schemas import builtin_schema
from setpoint.machinery.schema import definitions, openapi_type

_MATCH_RESOURCES = "io.k8s.api.admissionregistration.v1.MatchResources"


def test_a_nullable_type_list_becomes_its_one_type() -> None:
    assert openapi_type(["string", "null"]) == "string"
    assert openapi_type(["null", "array"]) == "array"


def test_a_type_list_of_several_types_stays_a_list_without_null() -> None:
    assert openapi_type(["integer", "string", "null"]) == ["integer", "string"]


def test_both_readers_of_the_definitions_serve_a_nullable_field_as_one_type() -> None:
    raw = definitions().raw[_MATCH_RESOURCES]["properties"]["matchPolicy"]
    assert raw["type"] == ["string", "null"]  # the rendering the helper exists for
    served = builtin_schema(_MATCH_RESOURCES)["properties"]["matchPolicy"]
    assert served["type"] == "string"
    resolved = resolve_schema(("admissionregistration.k8s.io", "v1",
                               "ValidatingAdmissionPolicy"), None)  # type: ignore[arg-type]
    assert resolved is not None
    match = resolved["properties"]["spec"]["properties"]["matchConstraints"]
    assert match["properties"]["matchPolicy"]["type"] == "string"
