"""CustomResourceSchema behaviour beyond the recorded scenarios."""

from __future__ import annotations

from typing import Any

from setpoint.cluster.apiextensions.schema import CustomResourceSchema, validate_crd


def _crd(spec_schema: dict[str, Any], **version: Any) -> dict[str, Any]:
    v = {"name": "v1", "served": True, "storage": True,
         "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec_schema}}},
         **version}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "things.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "things", "singular": "thing", "kind": "Thing"},
                     "versions": [v]}}


def _obj(spec: Any, name: str = "t") -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": name},
            "spec": spec}


def _fields(causes: list[Any]) -> list[tuple[str, str]]:
    return sorted((c.reason, c.field) for c in causes)


def _schema(spec_schema: dict[str, Any], **version: Any) -> CustomResourceSchema:
    crd = _crd(spec_schema, **version)
    assert validate_crd(crd) == []
    return CustomResourceSchema(crd, "v1")


def test_transition_rule_runs_only_on_update() -> None:
    rule = {"rule": "self >= oldSelf", "message": "may not decrease"}
    s = _schema({"type": "object", "properties": {
        "n": {"type": "integer", "x-kubernetes-validations": [rule]}}})
    assert s.validate(_obj({"n": 5})) == []
    causes = s.validate(_obj({"n": 4}), old=_obj({"n": 5}))
    assert [(c.field, c.message) for c in causes] == [
        ("spec.n", 'Invalid value: "integer": may not decrease')]


def test_optional_old_self_sees_no_value_on_create() -> None:
    rule = {"rule": "!oldSelf.hasValue() || self.n >= oldSelf.value().n", "optionalOldSelf": True}
    s = _schema({"type": "object", "properties": {"n": {"type": "integer"}},
                 "x-kubernetes-validations": [rule]})
    assert s.validate(_obj({"n": 1})) == []
    assert _fields(s.validate(_obj({"n": 1}), old=_obj({"n": 2}))) == [
        ("FieldValueInvalid", "spec")]


def test_unchanged_invalid_values_are_ratcheted_on_update() -> None:
    s = _schema({"type": "object", "properties": {"a": {"type": "integer", "maximum": 3},
                                                  "b": {"type": "string"}}})
    old = _obj({"a": 10, "b": "x"})
    assert _fields(s.validate(old)) == [("FieldValueInvalid", "spec.a")]
    assert s.validate(_obj({"a": 10, "b": "y"}), old=old) == []
    assert _fields(s.validate(_obj({"a": 11, "b": "y"}), old=old)) == [
        ("FieldValueInvalid", "spec.a")]


def test_numbers_compare_across_int_and_double_in_rules() -> None:
    s = _schema({"type": "object",
                 "properties": {"ratio": {"type": "number"}, "n": {"type": "integer"}},
                 "x-kubernetes-validations": [{"rule": "self.ratio < self.n"}]})
    assert s.validate(_obj({"ratio": 1, "n": 2})) == []
    assert [c.message for c in s.validate(_obj({"ratio": 2.5, "n": 2}))] == [
        'Invalid value: "object": failed rule: self.ratio < self.n']


def test_kubernetes_cel_libraries_are_available() -> None:
    rules = ["self.name.lowerAscii().split('-')[0] == 'app'",
             "self.name.indexOf('-') == 3 && self.name.substring(0, 3) == 'APP'",
             "self.items.isSorted() && self.items.sum() == 6 && self.items.max() == 3",
             "self.name.find('[0-9]+') == '42'",
             "quantity(self.mem).isGreaterThan(quantity('1Gi'))",
             "isQuantity(self.mem) && !isQuantity('abc')",
             "url('https://example.com:8443/x').getPort() == '8443'",
             "cidr('10.0.0.0/8').containsIP(ip('10.1.2.3'))"]
    s = _schema({"type": "object", "x-kubernetes-validations": [{"rule": r} for r in rules],
                 "properties": {"name": {"type": "string"}, "mem": {"type": "string"},
                                "items": {"type": "array", "items": {"type": "integer"}}}})
    assert s.validate(_obj({"name": "APP-42", "mem": "2Gi", "items": [1, 2, 3]})) == []
    failed = s.validate(_obj({"name": "web-1", "mem": "1Mi", "items": [3, 1]}))
    assert [c.message.split("failed rule: ")[1] for c in failed] == rules[:5]


def test_rule_evaluation_errors_are_invalid_causes() -> None:
    s = _schema({"type": "object", "properties": {"a": {"type": "integer"}},
                 "x-kubernetes-validations": [{"rule": "self.a > 0"}]})
    (cause,) = s.validate(_obj({}))
    assert cause.field == "spec"
    assert cause.message.endswith("evaluating rule: self.a > 0")


def test_null_is_defaulted_unless_nullable_and_nullable_accepts_null() -> None:
    s = _schema({"type": "object", "properties": {
        "a": {"type": "string", "default": "x"},
        "b": {"type": "string", "nullable": True},
        "c": {"type": "string"}}})
    obj = s.default(_obj({"a": None, "b": None}))
    assert obj["spec"] == {"a": "x", "b": None}
    assert s.validate(obj) == []
    assert _fields(s.validate(_obj({"c": None}))) == [("FieldValueTypeInvalid", "spec.c")]


def test_int_or_string_accepts_both_and_rejects_others() -> None:
    s = _schema({"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": True}}})
    assert s.validate(_obj({"port": 80})) == s.validate(_obj({"port": "http"})) == []
    assert _fields(s.validate(_obj({"port": True}))) == [("FieldValueTypeInvalid", "spec.port")]


def test_embedded_resources_need_apiversion_and_kind() -> None:
    s = _schema({"type": "object", "properties": {"template": {
        "type": "object", "x-kubernetes-embedded-resource": True,
        "x-kubernetes-preserve-unknown-fields": True}}})
    # objectmeta/validation.go validateEmbeddedResource: the metadata is checked by
    # ValidateObjectMeta with path segment names ("Bad_Name" would pass)
    assert _fields(s.validate(_obj({"template": {"metadata": {"name": "bad/name"}}}))) == [
        ("FieldValueInvalid", "spec.template.metadata.name"),
        ("FieldValueRequired", "spec.template.apiVersion"),
        ("FieldValueRequired", "spec.template.kind")]


def test_preserved_fields_are_kept_and_specified_ones_below_are_pruned() -> None:
    s = _schema({"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                 "properties": {"known": {"type": "object",
                                          "properties": {"a": {"type": "string"}}}}})
    obj = _obj({"free": 1, "known": {"a": "x", "b": "y"}})
    assert s.unknown_fields(obj) == ["spec.known.b"]
    assert s.prune(obj)["spec"] == {"free": 1, "known": {"a": "x"}}


def test_scale_replicas_must_be_a_non_negative_integer() -> None:
    s = _schema({"type": "object", "properties": {"replicas": {"type": "integer"}}},
                subresources={"scale": {"specReplicasPath": ".spec.replicas",
                                        "statusReplicasPath": ".status.replicas"}})
    assert _fields(s.validate(_obj({"replicas": -1}))) == [
        ("FieldValueInvalid", ".spec.replicas")]


def test_wrong_kind_is_the_only_cause() -> None:
    s = _schema({"type": "object"})
    obj = {**_obj({}), "kind": "Gizmo", "metadata": {"name": "Bad_Name"}}
    assert _fields(s.validate(obj)) == [("FieldValueInvalid", "kind")]


def test_crd_schema_rules_follow_the_structural_schema_rules() -> None:
    crd = _crd({"properties": {"a": {"type": "string"}}})
    assert _fields(validate_crd(crd)) == [
        ("FieldValueRequired", "spec.validation.openAPIV3Schema.properties[spec].type")]
    crd = _crd({"type": "object", "properties": {"a": {"type": "integer", "default": "x"}}})
    assert _fields(validate_crd(crd)) == [(
        "FieldValueTypeInvalid",
        "spec.validation.openAPIV3Schema.properties[spec].properties[a].default")]
    crd = _crd({"type": "object", "x-kubernetes-validations": [{"rule": "self.nope > 1"}],
                "properties": {"a": {"type": "integer"}}})
    assert _fields(validate_crd(crd)) == [(
        "FieldValueInvalid",
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule")]


def test_unbounded_rules_exceed_the_cost_budget() -> None:
    rule = [{"rule": "self.all(x, x.matches('^[a-z]+$'))"}]
    unbounded = _crd({"type": "array", "items": {"type": "string"},
                      "x-kubernetes-validations": rule})
    assert ("FieldValueForbidden",
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
            ) in _fields(validate_crd(unbounded))
    bounded = _crd({"type": "array", "maxItems": 10,
                    "items": {"type": "string", "maxLength": 64},
                    "x-kubernetes-validations": rule})
    assert validate_crd(bounded) == []


def test_per_version_schemas_are_reported_under_their_version() -> None:
    crd = _crd({"type": "object"})
    second = {"name": "v2", "served": True, "storage": False,
              "schema": {"openAPIV3Schema": {"type": "object", "properties": {"x": {}}}}}
    crd["spec"]["versions"].append(second)
    assert _fields(validate_crd(crd)) == [
        ("FieldValueRequired", "spec.versions[1].schema.openAPIV3Schema.properties[x].type")]


def test_crd_names_and_versions_are_checked() -> None:
    crd = _crd({"type": "object"})
    crd["metadata"]["name"] = "other.example.com"
    crd["spec"]["versions"][0]["storage"] = False
    crd["spec"]["scope"] = "Global"
    assert _fields(validate_crd(crd)) == [
        ("FieldValueInvalid", "metadata.name"), ("FieldValueInvalid", "spec.versions"),
        ("FieldValueNotSupported", "spec.scope")]


def test_protected_groups_need_the_approval_annotation() -> None:
    crd = _crd({"type": "object"})
    crd["spec"]["group"] = "things.k8s.io"
    crd["metadata"]["name"] = "things.things.k8s.io"
    assert _fields(validate_crd(crd)) == [
        ("FieldValueRequired", "metadata.annotations[api-approved.kubernetes.io]")]
