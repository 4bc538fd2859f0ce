"""gnostic's OpenAPI v2 protobuf: a JSON Swagger document maps to the message gnostic builds,
and the YAML text of free-form values reads back as the same values."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from setpoint.machinery.protobuf import openapiv2 as gn
from setpoint.machinery.protobuf.goyaml import marshal

DOC: dict[str, Any] = {
    "swagger": "2.0",
    "info": {"title": "Kubernetes", "version": "1.32.0"},
    "paths": {
        "/api/v1/namespaces/{namespace}/configmaps/{name}": {
            "parameters": [{"name": "name", "in": "path", "required": True, "type": "string",
                            "uniqueItems": True, "description": "name of the ConfigMap"}],
            "patch": {
                "consumes": ["application/merge-patch+json"],
                "parameters": [
                    {"in": "body", "name": "body", "required": True,
                     "schema": {"$ref": "#/definitions/Patch"}},
                    {"in": "query", "name": "fieldValidation", "type": "string",
                     "uniqueItems": True},
                    {"$ref": "#/parameters/pretty"},
                ],
                "responses": {"200": {"description": "OK",
                                      "schema": {"$ref": "#/definitions/ConfigMap"}},
                              "401": {"description": "Unauthorized"}},
                "schemes": ["https"],
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": {"group": "", "kind": "ConfigMap",
                                                    "version": "v1"},
            },
        },
    },
    "definitions": {
        "ConfigMap": {
            "type": "object",
            "properties": {
                "data": {"type": "object", "additionalProperties": {"type": "string"}},
                "immutable": {"type": "boolean"},
                "ports": {"type": "array", "items": {"type": "integer", "format": "int32"},
                          "x-kubernetes-list-type": "set"},
            },
            "additionalProperties": False,
            "x-kubernetes-group-version-kind": [{"group": "", "kind": "ConfigMap",
                                                 "version": "v1"}],
        },
        "Patch": {"type": "object", "minProperties": 0, "maximum": 2.5, "enum": ["a", 1]},
    },
    "security": [{"BearerToken": []}],
    "securityDefinitions": {"BearerToken": {"type": "apiKey", "name": "authorization",
                                            "in": "header"}},
}


@pytest.fixture(scope="module")
def tree() -> dict[str, Any]:
    return gn.document(DOC)


def _path(tree: dict[str, Any]) -> dict[str, Any]:
    (pair,) = tree["paths"]["path"]
    assert pair["name"] == "/api/v1/namespaces/{namespace}/configmaps/{name}"
    value = pair["value"]
    assert isinstance(value, dict)
    return value


def _definition(tree: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p["value"] for p in tree["definitions"]["additional_properties"]
                if p["name"] == name)


def test_field_numbers_come_from_kubectls_descriptors() -> None:
    document = gn.table()[gn.DOCUMENT]
    assert {f.name: f.number for f in document.numbered}["paths"] == 8
    assert document.fields["definitions"].message == "openapi.v2.Definitions"
    schema = gn.table()["openapi.v2.Schema"]
    assert schema.by_key["$ref"].name == "_ref"
    assert schema.fields["vendor_extension"].number == 31


def test_vendor_extensions_are_named_any_holding_yaml(tree: dict[str, Any]) -> None:
    patch = _path(tree)["patch"]
    extensions = {e["name"]: e["value"]["yaml"] for e in patch["vendor_extension"]}
    assert extensions["x-kubernetes-action"] == "patch\n"
    # what kubectl's query-parameter verifier unmarshals into map[string]string
    assert yaml.safe_load(extensions["x-kubernetes-group-version-kind"]) == {
        "group": "", "kind": "ConfigMap", "version": "v1"}
    gvk = _definition(tree, "ConfigMap")["vendor_extension"][-1]
    assert gvk["value"]["yaml"] == '- group: ""\n  kind: ConfigMap\n  version: v1\n'


def test_parameters_take_the_oneof_alternative_gnostic_matches(tree: dict[str, Any]) -> None:
    item = _path(tree)
    (path_param,) = item["parameters"]
    assert path_param["parameter"]["non_body_parameter"]["path_parameter_sub_schema"] == {
        "required": True, "in": "path", "name": "name", "type": "string",
        "unique_items": True, "description": "name of the ConfigMap"}
    body, query, reference = item["patch"]["parameters"]
    assert body["parameter"]["body_parameter"]["schema"] == {"_ref": "#/definitions/Patch"}
    assert query["parameter"]["non_body_parameter"]["query_parameter_sub_schema"]["name"] == \
        "fieldValidation"
    assert reference == {"json_reference": {"_ref": "#/parameters/pretty"}}


def test_responses_are_keyed_by_code_with_schema_items(tree: dict[str, Any]) -> None:
    codes = _path(tree)["patch"]["responses"]["response_code"]
    assert [c["name"] for c in codes] == ["200", "401"]
    ok = codes[0]["value"]["response"]
    assert ok["schema"] == {"schema": {"_ref": "#/definitions/ConfigMap"}}
    assert codes[1]["value"]["response"] == {"description": "Unauthorized"}


def test_schemas_map_types_items_and_additional_properties(tree: dict[str, Any]) -> None:
    cm = _definition(tree, "ConfigMap")
    assert cm["type"] == {"value": ["object"]}
    # a oneof keeps its zero value: additionalProperties false is on the wire
    assert cm["additional_properties"] == {"boolean": False}
    props = {p["name"]: p["value"] for p in cm["properties"]["additional_properties"]}
    assert props["data"]["additional_properties"] == {"schema": {"type": {"value": ["string"]}}}
    assert props["ports"]["items"] == {"schema": [{"type": {"value": ["integer"]},
                                                   "format": "int32"}]}
    patch = _definition(tree, "Patch")
    assert "min_properties" not in patch  # proto3 leaves zero values off
    assert patch["maximum"] == 2.5
    assert [e["yaml"] for e in patch["enum"]] == ["a\n", "1\n"]


def test_security_requirements_and_definitions(tree: dict[str, Any]) -> None:
    (requirement,) = tree["security"]
    assert requirement == {"additional_properties": [{"name": "BearerToken", "value": {}}]}
    (definition,) = tree["security_definitions"]["additional_properties"]
    assert definition["value"] == {"api_key_security": {
        "type": "apiKey", "name": "authorization", "in": "header"}}


def test_bytes_follow_go_field_order_and_proto3_presence() -> None:
    small = {"swagger": "2.0", "info": {"title": "t", "version": "v"}, "paths": {}}
    # swagger (1), info (2: title, version), then paths (8) present but empty
    assert gn.encode_document(small) == (b"\x0a\x032.0" + b"\x12\x06\x0a\x01t\x12\x01v"
                                         + b"\x42\x00")


def test_decoding_the_bytes_gives_back_the_message(tree: dict[str, Any]) -> None:
    data = gn.encode(gn.DOCUMENT, tree)
    assert gn.decode(gn.DOCUMENT, data) == tree


@pytest.mark.parametrize(("doc", "message"), [
    ({"swagger": "2.0", "paths": {}}, "missing required properties: info"),
    ({**DOC, "definitions": {"X": {"type": "object", "nullable": True}}},
     "invalid property: nullable"),
    ({**DOC, "definitions": {"X": {"oneOf": [{"type": "string"}]}}},
     "invalid property: oneOf"),
    ({**DOC, "swagger": "3.0"}, "unexpected value for swagger"),
    ({**DOC, "paths": {"api": {}}}, "invalid properties: api"),
])
def test_documents_gnostic_refuses_raise(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(gn.GnosticError, match=message):
        gn.document(doc)


def test_a_parameter_in_no_known_location_is_refused() -> None:
    bad = {"swagger": "2.0", "info": {"title": "t", "version": "v"},
           "paths": {"/x": {"parameters": [{"in": "cookie", "name": "c", "type": "string"}]}}}
    with pytest.raises(gn.GnosticError, match="invalid ParametersItem"):
        gn.document(bad)


# -- YAML text ------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "text"), [
    ("merge", "merge\n"),
    ("retainKeys,merge", "retainKeys,merge\n"),
    ("", '""\n'),
    ("true", '"true"\n'),
    ("yes", '"yes"\n'),  # YAML 1.1 readers (yaml.v2, kubectl's) would read a boolean
    ("1.5", '"1.5"\n'),
    ("a: b", "'a: b'\n"),
    (["name", "port"], "- name\n- port\n"),
    ({"a": {"b": [1, {"c": None}]}}, "a:\n    b:\n        - 1\n        - c: null\n"),
    ([{"a": [1, 2], "d": {}}], "- a:\n    - 1\n    - 2\n  d: {}\n"),
    (True, "true\n"),
    (3, "3\n"),
])
def test_yaml_is_laid_out_as_yaml_v3_writes_it(value: Any, text: str) -> None:
    assert marshal(value) == text


@pytest.mark.parametrize("value", [
    "line\nbreak", "tab\tinside", " leading", "it's", "#hash", "- dash", "@at", "0x1F",
    "2024-01-02", "é ü", "null", "~", {"k": ["", "on", 1.25, False]}, [[1], []],
])
def test_yaml_reads_back_as_the_same_value(value: Any) -> None:
    assert yaml.safe_load(marshal(value)) == value
