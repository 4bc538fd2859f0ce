"""CustomResourceDefinitions as kube-apiserver 1.32 (apiextensions-apiserver v0.32) serves them.

Each test names its rule and the source file it was read from; the answers are compared whole
(status code, body with its causes in order, Warning headers).
"""

from __future__ import annotations

import copy
from typing import Any

import orjson

from tests.cluster.conftest import API
from tests.waiting import wait_for

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CRD = f"{CRDS}/widgets.example.com"
WIDGETS = "/apis/example.com/{version}/namespaces/default/widgets"


def _crd(spec_schema: dict[str, Any] | None = None,
         versions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    schema = {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": spec_schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                     "versions": [{"schema": schema, **v} for v in versions or [
                         {"name": "v1", "served": True, "storage": True}]]}}


async def _call(api: API, method: str, path: str, body: Any = None
                ) -> tuple[int, Any, list[str]]:
    """One request; its status, decoded body and Warning headers in order."""
    data = orjson.dumps(body) if body is not None else None
    async with api.session.request(method, api.cluster.url + path, data=data, ssl=api.ssl,
                                   headers={"Content-Type": "application/json"}) as resp:
        text = await resp.text()
        return resp.status, orjson.loads(text) if text else None, resp.headers.getall(
            "Warning", [])


async def _served(api: API, crd: dict[str, Any]) -> None:
    status, body = await api.post(CRDS, crd)
    assert status == 201, body
    version = next(v["name"] for v in crd["spec"]["versions"] if v.get("storage"))
    async def served() -> bool:
        return (await api.get(WIDGETS.format(version=version)))[0] == 200

    await wait_for(served)


def _invalid(causes: list[dict[str, str]]) -> dict[str, Any]:
    """The 422 a CRD write gets, its message built from the causes as the apiserver does."""
    parts = [f"{c['field']}: {c['message']}" for c in causes]
    listed = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'CustomResourceDefinition.apiextensions.k8s.io "widgets.example.com" '
                       f"is invalid: {listed}",
            "reason": "Invalid",
            "details": {"name": "widgets.example.com", "group": "apiextensions.k8s.io",
                        "kind": "CustomResourceDefinition", "causes": causes},
            "code": 422}


def _rule_error(index: int, rule: str, detail: str) -> dict[str, str]:
    return {"reason": "FieldValueInvalid",
            "message": f'Invalid value: apiextensions.ValidationRule{{Rule:"{rule}", '
                       'Message:"", MessageExpression:"", '
                       "Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", "
                       f"OptionalOldSelf:(*bool)(nil)}}: compilation failed: {detail}",
            "field": "spec.validation.openAPIV3Schema.properties[spec]"
                     f".x-kubernetes-validations[{index}].rule"}


SPEC = {"type": "object", "properties": {"name": {"type": "string"},
                                         "replicas": {"type": "integer"}}}
BAD_RULES = [
    ("self.replicas > 0", None),
    # (parser.go VisitSelect places a selection at its dot: the k8s docs' example
    # "self.nonExistingField > 0" is "<input>:1:5: undefined field 'nonExistingField'")
    ("self.nope > 0", "ERROR: <input>:1:5: undefined field 'nope'\n | self.nope > 0\n"
                      " | ....^"),
    ("self.name == 1", "ERROR: <input>:1:11: found no matching overload for '_==_' applied "
                       "to '(string, int)'\n | self.name == 1\n | ..........^"),
    ("self.replicas.size() > 0", "ERROR: <input>:1:19: found no matching overload for "
                                 "'size' applied to 'int.()'\n | self.replicas.size() > 0\n"
                                 " | ..................^"),
]


def _with_rules(rules: list[str]) -> dict[str, Any]:
    return {**SPEC, "x-kubernetes-validations": [{"rule": r} for r in rules]}


async def test_cel_rules_that_do_not_type_check_are_refused_at_create(api: API) -> None:
    """Rule: every x-kubernetes-validations rule is compiled and type-checked against its
    schema; each failure is a FieldValueInvalid cause on ``...x-kubernetes-validations[i]
    .rule`` carrying the rule as Go prints it and cel-go's ``compilation failed: ERROR:
    <input>:line:col: ...`` text (undefined field, no matching overload at the operator or
    call). apiextensions v0.32 pkg/apis/apiextensions/validation/validation.go
    (CEL compilation of x-kubernetes-validations), pkg/apiserver/schema/cel/compilation.go."""
    rules = [r for r, _ in BAD_RULES]
    status, body = await api.post(CRDS, _crd(_with_rules(rules)))
    assert status == 422
    assert body == _invalid([_rule_error(i, r, d) for i, (r, d) in enumerate(BAD_RULES)
                             if d is not None])


async def test_cel_rules_that_do_not_compile_are_refused_at_update(api: API) -> None:
    """Rule: the same compilation runs on a CRD update; a rule that no longer type-checks
    is refused with the same cause and the stored CRD is unchanged. validation.go
    (ValidateCustomResourceDefinitionUpdate runs the schema validation with the update's
    options)."""
    await _served(api, _crd(_with_rules(["self.replicas > 0"])))
    _, live = await api.get(CRD)
    changed = copy.deepcopy(live)
    changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "x-kubernetes-validations"] = [{"rule": "self.replicas > 0"},
                                       {"rule": BAD_RULES[2][0]}]
    status, body = await api.put(CRD, changed)
    assert status == 422
    assert body == _invalid([_rule_error(1, BAD_RULES[2][0], str(BAD_RULES[2][1]))])
    assert (await api.get(CRD))[1]["metadata"]["resourceVersion"] == \
        live["metadata"]["resourceVersion"]


async def test_cel_rule_over_the_cost_budget_is_refused(api: API) -> None:
    """Rule: a rule whose estimated cost exceeds the per-expression limit by 100x is
    Forbidden, and so is the schema's total; the causes come in the validator's order
    (the rule, its contribution, then the schema). validation.go (cost checks with
    StaticEstimatedCostLimit and StaticEstimatedCRDCostLimit)."""
    spec = {"type": "object", "properties": {"items": {"type": "array",
                                                       "items": {"type": "string"}}},
            "x-kubernetes-validations": [
                {"rule": "self.items.all(x, self.items.all(y, x == y))"}]}
    status, body = await api.post(CRDS, _crd(spec))
    assert status == 422
    hint = ("(try simplifying the rule, or adding maxItems, maxProperties, and maxLength "
            "where arrays, maps, and strings are declared)")
    rule = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    assert body == _invalid([
        {"reason": "FieldValueForbidden", "field": rule,
         "message": f"Forbidden: estimated rule cost exceeds budget by factor of more than "
                    f"100x {hint}"},
        {"reason": "FieldValueForbidden", "field": rule,
         "message": "Forbidden: contributed to estimated rule cost total exceeding cost "
                    "limit for entire OpenAPIv3 schema"},
        {"reason": "FieldValueForbidden", "field": "spec.validation.openAPIV3Schema",
         "message": "Forbidden: x-kubernetes-validations estimated rule cost total for "
                    f"entire OpenAPIv3 schema exceeds budget by factor of more than 100x "
                    f"{hint}"}])


async def test_nulls_are_kept_pruned_or_defaulted_by_the_schema(api: API) -> None:
    """Rule: right after pruning, a null the schema neither allows (``nullable``) nor
    defaults is dropped; a non-nullable null with a default becomes the default; a
    nullable null stays null, with or without a default. apiextensions v0.32
    pkg/apiserver/schema/defaulting/prunenulls.go (PruneNonNullableNullsWithoutDefaults,
    called by the schema coercer in customresource_handler.go) and algorithm.go (Default)."""
    spec = {"type": "object", "properties": {
        "kept": {"type": "string", "nullable": True},
        "pruned": {"type": "string"},
        "keptDespiteDefault": {"type": "string", "nullable": True, "default": "d1"},
        "defaulted": {"type": "string", "default": "d2"},
        "object": {"type": "object", "nullable": True, "properties": {"x": {"type": "string"}}},
        "list": {"type": "array", "items": {"type": "string"}},
        "items": {"type": "array", "items": {"type": "string", "default": "d3"}}}}
    await _served(api, _crd(spec))
    status, body, warnings = await _call(api, "POST", WIDGETS.format(version="v1"), {
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"},
        "spec": {"kept": None, "pruned": None, "keptDespiteDefault": None, "defaulted": None,
                 "object": None, "list": None, "items": ["a", None]}})
    assert (status, warnings) == (201, [])
    assert body["spec"] == {"kept": None, "keptDespiteDefault": None, "defaulted": "d2",
                            "object": None, "items": ["a", "d3"]}
    assert (await api.get(WIDGETS.format(version="v1") + "/w1"))[1]["spec"] == body["spec"]


async def test_int_or_string_accepts_either_and_refuses_the_rest(api: API) -> None:
    """Rule: ``x-kubernetes-int-or-string`` is the OpenAPI type [integer, string]: an
    integer or a string passes, a number or a boolean is FieldValueTypeInvalid ``must be of
    type integer,string``, and value validations (pattern, maximum) apply to the matching
    kind only. validation.go (ConvertJSONSchemaPropsWithPostProcess: XIntOrString),
    kube-openapi pkg/validation/validate (type and format validators)."""
    spec = {"type": "object", "properties": {
        "port": {"x-kubernetes-int-or-string": True},
        "share": {"x-kubernetes-int-or-string": True, "pattern": "^[0-9]+%$", "maximum": 5}}}
    await _served(api, _crd(spec))
    path = WIDGETS.format(version="v1")

    def widget(name: str, **values: Any) -> dict[str, Any]:
        return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name},
                "spec": values}

    assert (await api.post(path, widget("ok1", port=80, share="50%")))[0] == 201
    assert (await api.post(path, widget("ok2", port="http", share=3)))[0] == 201
    status, body = await api.post(path, widget("bad", port=1.5, share=True))
    assert status == 422
    assert body["details"]["causes"] == [
        {"reason": "FieldValueTypeInvalid", "field": "spec.port",
         "message": 'Invalid value: "number": spec.port in body must be of type '
                    'integer,string: "number"'},
        {"reason": "FieldValueTypeInvalid", "field": "spec.share",
         "message": 'Invalid value: "boolean": spec.share in body must be of type '
                    'integer,string: "boolean"'}]
    status, body = await api.post(path, widget("bad2", share=7))
    assert (status, body["details"]["causes"]) == (422, [
        {"reason": "FieldValueInvalid", "field": "spec.share",
         "message": "Invalid value: 7: spec.share in body should be less than or equal to 5"}])


async def test_unknown_fields_of_a_custom_resource_by_field_validation(api: API) -> None:
    """Rule: fields the schema prunes are ``unknown field "<path>"``: Warn sends one
    Warning each and creates the object, Strict refuses with a 400 ``strict decoding
    error`` naming them all, Ignore drops them silently. The root's metadata is read
    before pruning, so its unknown fields come first, then the pruned paths sorted.
    customresource_handler.go (schemaCoercingDecoder, unstructuredSchemaCoercer.apply),
    pkg/apiserver/schema/pruning/algorithm.go, k8s.io/apiserver handlers/create.go."""
    await _served(api, _crd({"type": "object", "properties": {"a": {"type": "string"}}}))
    path = WIDGETS.format(version="v1")

    def widget(name: str) -> dict[str, Any]:
        return {"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": name, "foo": 1}, "extra": 1, "spec": {"a": "x", "foo": 1}}

    status, body, warnings = await _call(api, "POST", path + "?fieldValidation=Warn",
                                         widget("w1"))
    assert status == 201
    assert warnings == ['299 - "unknown field \\"metadata.foo\\""',
                        '299 - "unknown field \\"extra\\""',
                        '299 - "unknown field \\"spec.foo\\""']
    assert body["spec"] == {"a": "x"} and "extra" not in body
    status, body, warnings = await _call(api, "POST", path + "?fieldValidation=Strict",
                                         widget("w2"))
    assert (status, warnings) == (400, [])
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": 'Widget in version "v1" cannot be handled as a Widget: strict '
                               'decoding error: unknown field "metadata.foo", unknown field '
                               '"extra", unknown field "spec.foo"',
                    "reason": "BadRequest", "code": 400}
    status, body, warnings = await _call(api, "POST", path + "?fieldValidation=Ignore",
                                         widget("w3"))
    assert (status, warnings, body["spec"]) == (201, [], {"a": "x"})


async def test_storage_version_change_and_stored_versions(api: API) -> None:
    """Rule: moving ``storage: true`` to another version appends it to
    status.storedVersions; exactly one version must be the storage version; a version still
    in storedVersions cannot leave spec.versions (``must appear in spec.versions``, the
    wording of v0.32); storedVersions must hold the storage version.
    validation.go (ValidateCustomResourceDefinitionStoredVersions, spec.versions checks),
    pkg/registry/customresourcedefinition/strategy.go."""
    await _served(api, _crd(versions=[{"name": "v1alpha1", "served": True, "storage": True},
                                      {"name": "v1", "served": True, "storage": False}]))
    _, crd = await api.get(CRD)
    crd["spec"]["versions"][0]["storage"], crd["spec"]["versions"][1]["storage"] = False, True
    status, crd = await api.put(CRD, crd)
    assert (status, crd["status"]["storedVersions"]) == (200, ["v1alpha1", "v1"])

    both = copy.deepcopy(crd)
    both["spec"]["versions"][0]["storage"] = True
    status, body = await api.put(CRD, both)
    assert (status, body) == (422, _invalid([{
        "reason": "FieldValueInvalid", "field": "spec.versions",
        # the value is the internal spec.Versions as %#v prints it (the identical schemas
        # moved to the spec by v1/conversion.go)
        "message": "Invalid value: []apiextensions.CustomResourceDefinitionVersion{"
                   + ", ".join(
                       f'apiextensions.CustomResourceDefinitionVersion{{Name:"{name}", '
                       "Served:true, Storage:true, Deprecated:false, "
                       "DeprecationWarning:(*string)(nil), "
                       "Schema:(*apiextensions.CustomResourceValidation)(nil), "
                       "Subresources:(*apiextensions.CustomResourceSubresources)(nil), "
                       "AdditionalPrinterColumns:"
                       "[]apiextensions.CustomResourceColumnDefinition(nil), "
                       "SelectableFields:[]apiextensions.SelectableField(nil)}"
                       for name in ("v1alpha1", "v1"))
                   + "}: must have exactly one version marked as storage version"}]))

    dropped = copy.deepcopy(crd)
    dropped["spec"]["versions"] = dropped["spec"]["versions"][1:]
    status, body = await api.put(CRD, dropped)
    assert (status, body) == (422, _invalid([{
        "reason": "FieldValueInvalid", "field": "status.storedVersions[0]",
        "message": 'Invalid value: "v1alpha1": must appear in spec.versions'}]))

    stale = copy.deepcopy(crd)
    stale["status"]["storedVersions"] = ["v1alpha1"]
    status, body = await api.put(CRD + "/status", stale)
    assert (status, body) == (422, _invalid([{
        "reason": "FieldValueInvalid", "field": "status.storedVersions",
        "message": 'Invalid value: []string{"v1alpha1"}: must have the storage version v1'}]))


async def test_deprecated_versions_warn_on_every_request(api: API) -> None:
    """Rule: every request through a deprecated served version carries ``Warning: 299 -``
    with its deprecationWarning, or by default ``<group>/<version> <Kind> is deprecated``
    followed by ``; use <group>/<v> <Kind>`` for the highest-priority newer served version
    that is not deprecated; errors carry it too, current versions never.
    customresource_handler.go (getOrCreateServingInfoFor, defaultDeprecationWarning,
    the warnings added in ServeHTTP before the verb is served)."""
    await _served(api, _crd(versions=[
        {"name": "v1alpha1", "served": True, "storage": False, "deprecated": True},
        {"name": "v1beta1", "served": True, "storage": False, "deprecated": True,
         "deprecationWarning": "widgets v1beta1 goes away in 2.0"},
        {"name": "v1beta2", "served": True, "storage": False},
        {"name": "v1", "served": True, "storage": True}]))
    alpha = '299 - "example.com/v1alpha1 Widget is deprecated; use example.com/v1 Widget"'
    body = {"apiVersion": "example.com/v1alpha1", "kind": "Widget", "metadata": {"name": "w1"}}
    status, _, warnings = await _call(api, "POST", WIDGETS.format(version="v1alpha1"), body)
    assert (status, warnings) == (201, [alpha])
    status, _, warnings = await _call(api, "GET", WIDGETS.format(version="v1alpha1") + "/w1")
    assert (status, warnings) == (200, [alpha])
    status, _, warnings = await _call(api, "GET", WIDGETS.format(version="v1alpha1") + "/no")
    assert (status, warnings) == (404, [alpha])
    status, _, warnings = await _call(api, "GET", WIDGETS.format(version="v1beta1"))
    assert (status, warnings) == (200, ['299 - "widgets v1beta1 goes away in 2.0"'])
    for version in ("v1beta2", "v1"):
        status, _, warnings = await _call(api, "GET", WIDGETS.format(version=version))
        assert (status, warnings) == (200, [])


async def test_non_structural_schema_causes(api: API) -> None:
    """Rule: a schema that is not structural is refused with one cause per violation;
    ValidateStructural's causes (types inside anyOf, missing types, fields known only from
    anyOf) are sorted by their ``field: message`` text, and the OpenAPI schema checks
    (additionalProperties beside properties) follow them. apiextensions v0.32
    pkg/apiserver/schema/validation.go (ValidateStructuralWithOptions sorts),
    pkg/apis/apiextensions/validation/validation.go (ValidateCustomResourceDefinitionOpenAPISchema
    runs after it)."""
    spec = {"properties": {"a": {"type": "string",
                                 "anyOf": [{"type": "string"},
                                           {"properties": {"x": {"type": "string"}}}]},
                           "b": {}},
            "additionalProperties": False}
    status, body = await api.post(CRDS, _crd(spec))
    base = "spec.validation.openAPIV3Schema.properties[spec]"
    assert (status, body) == (422, _invalid([
        {"reason": "FieldValueForbidden", "field": f"{base}.properties[a].anyOf[0].type",
         "message": "Forbidden: must be empty to be structural"},
        {"reason": "FieldValueForbidden",
         "field": f"{base}.properties[a].anyOf[1].properties[x].type",
         "message": "Forbidden: must be empty to be structural"},
        {"reason": "FieldValueRequired", "field": f"{base}.properties[a].properties[x]",
         "message": f"Required value: because it is defined in "
                    f"{base}.properties[a].anyOf[1].properties[x]"},
        {"reason": "FieldValueRequired", "field": f"{base}.properties[b].type",
         "message": "Required value: must not be empty for specified object fields"},
        {"reason": "FieldValueRequired", "field": f"{base}.type",
         "message": "Required value: must not be empty for specified object fields"},
        {"reason": "FieldValueForbidden", "field": f"{base}.additionalProperties",
         "message": "Forbidden: additionalProperties and properties are mutual exclusive"}]))
