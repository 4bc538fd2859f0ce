"""CustomResourceDefinition and custom resource answers checked rule by rule against
apiextensions-apiserver v0.32 and kube-openapi, over real HTTP to one server per module.

Each test writes CRDs of its own group, so the tests share the server without meeting.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

from tests.cluster.conftest import API
from tests.cluster.fidelity.widgets import (
    CRDS,
    create_served,
    widget,
    widget_crd,
)
from tests.waiting import wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")

_groups = itertools.count()


def _crd(spec_schema: dict[str, Any], **version: Any) -> dict[str, Any]:
    """A ``widgets`` CRD in a group no other test uses."""
    return widget_crd(f"g{next(_groups)}.example.com", spec_schema, **version)


def _causes(body: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in body["details"]["causes"]]


async def test_static_rule_field_messages_name_their_field(module_api: API) -> None:
    """validation.go ValidateCustomResourceDefinitionOpenAPISchema: the static checks of an
    x-kubernetes-validations entry say which of its fields is wrong ("message must not contain
    line breaks", "fieldPath must be a valid path"), and CEL is not compiled at a level whose
    schema already has errors."""
    crd = _crd({"type": "object", "properties": {"a": {"type": "string"}},
                "x-kubernetes-validations": [
                    {"rule": "true", "message": "a\nb"},
                    {"rule": "true", "message": "  "},
                    {"rule": "true", "fieldPath": ".b"},
                    {"rule": "true", "fieldPath": "\n"},
                    {"rule": "not cel ("}]})
    status, body = await module_api.post(CRDS, crd)
    assert status == 422, body
    at = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations"
    assert _causes(body) == [
        ("FieldValueInvalid", f"{at}[0].message",
         'Invalid value: "a\\nb": message must not contain line breaks'),
        ("FieldValueInvalid", f"{at}[1].message",
         'Invalid value: "  ": message must be non-empty if specified'),
        ("FieldValueInvalid", f"{at}[2].fieldPath",
         'Invalid value: ".b": fieldPath must be a valid path'),
        ("FieldValueInvalid", f"{at}[3].fieldPath",
         'Invalid value: "\\n": fieldPath must be non-empty if specified'),
        ("FieldValueInvalid", f"{at}[3].fieldPath",
         'Invalid value: "\\n": fieldPath must not contain line breaks'),
        ("FieldValueInvalid", f"{at}[3].fieldPath",
         'Invalid value: "\\n": fieldPath must be a valid path'),
    ]


async def test_date_and_date_time_formats_are_strfmts(module_api: API) -> None:
    """kube-openapi pkg/validation/strfmt: ``date`` is Go's time.Parse("2006-01-02") (a day
    the month lacks fails); ``date-time`` (IsDateTime, time.go) needs seconds and a "Z" or
    ±hh:mm offset after a "T"; apiextensions pkg/apiserver/validation/formats.go keeps both."""
    crd = _crd({"type": "object", "properties": {
        "d": {"type": "array", "items": {"type": "string", "format": "date"}},
        "t": {"type": "array", "items": {"type": "string", "format": "date-time"}}}})
    path = await create_served(module_api, crd)
    good = {"d": ["2024-02-29", "0000-02-29"],
            "t": ["2024-01-02T03:04:05Z", "2024-01-02t03:04:05.123+01:00"]}
    status, body = await module_api.post(path, widget(crd, "good", good))
    assert status == 201, body
    bad = {"d": ["2023-02-29", "2024-13-01", "20240101"],
           "t": ["2024-01-02 03:04:05Z", "2024-01-02T03:04Z", "2024-01-02T03:04:05",
                 "2024-01-02T24:00:00Z"]}
    status, body = await module_api.post(path, widget(crd, "bad", bad))
    assert status == 422, body
    wrong = [(f"spec.{k}[{i}]", v, "date" if k == "d" else "date-time")
             for k, values in bad.items() for i, v in enumerate(values)]
    assert _causes(body) == [
        ("FieldValueTypeInvalid", p, f'Invalid value: "{v}": {p} in body must be of type '
                                     f'{fmt}: "{v}"') for p, v, fmt in wrong]


def _terminating(crd: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in (crd.get("status") or {}).get("conditions") or []
                 if c["type"] == "Terminating"), None)


async def test_a_terminating_definition_refuses_creates(module_api: API) -> None:
    """customresource_handler.go serveResource: while the CRD's Terminating condition is
    True a create is NewMethodNotSupported with the message "create not allowed while custom
    resource definition is terminating"; reads and updates of the remaining objects go on."""
    crd = _crd({"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    path = await create_served(module_api, crd)
    held = widget(crd, "held", {}) | {"metadata": {"name": "held",
                                                    "finalizers": ["example.com/hold"]}}
    assert (await module_api.post(path, held))[0] == 201
    name = crd["metadata"]["name"]
    assert (await module_api.delete(f"{CRDS}/{name}"))[0] == 200

    async def terminating() -> bool:
        cond = _terminating((await module_api.get(f"{CRDS}/{name}"))[1])
        return cond is not None and cond["status"] == "True"

    await wait_for(terminating)
    status, body = await module_api.post(path, widget(crd, "late", {}))
    assert (status, body) == (405, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "create not allowed while custom resource definition is terminating",
        "reason": "MethodNotAllowed",
        "details": {"group": crd["spec"]["group"], "kind": "widgets"}, "code": 405})
    status, _ = await module_api.patch(f"{path}/held", {"metadata": {"finalizers": None}},
                                       "application/merge-patch+json")
    assert status == 200

    async def gone() -> bool:
        return (await module_api.get(f"{CRDS}/{name}"))[0] == 404

    await wait_for(gone)


async def test_cleanup_ends_with_instance_deletion_completed(module_api: API) -> None:
    """pkg/controller/finalizer/crd_finalizer.go: the finalizer controller sets Terminating
    True (InstanceDeletionInProgress), deletes the objects, and removes its finalizer with
    Terminating False, "InstanceDeletionCompleted", "removed all instances"; another
    finalizer keeps the CRD, which shows that last condition."""
    crd = _crd({"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    crd["metadata"]["finalizers"] = ["example.com/keep"]
    path = await create_served(module_api, crd)
    assert (await module_api.post(path, widget(crd, "one", {})))[0] == 201
    name = crd["metadata"]["name"]
    assert (await module_api.delete(f"{CRDS}/{name}"))[0] == 200

    async def cleaned() -> dict[str, Any] | None:
        current = (await module_api.get(f"{CRDS}/{name}"))[1]
        return current if current["metadata"]["finalizers"] == ["example.com/keep"] else None

    current = await wait_for(cleaned)
    cond = _terminating(current)
    assert cond is not None
    assert {k: v for k, v in cond.items() if k != "lastTransitionTime"} == {
        "type": "Terminating", "status": "False", "reason": "InstanceDeletionCompleted",
        "message": "removed all instances"}
    assert (await module_api.get(path))[1]["items"] == []
    status, _ = await module_api.patch(f"{CRDS}/{name}", {"metadata": {"finalizers": None}},
                                       "application/merge-patch+json")
    assert status == 200


async def test_conversion_webhook_client_config_is_validated(module_api: API) -> None:
    """validation.go validateCustomResourceConversion: a Webhook strategy's url is checked by
    apiserver pkg/util/webhook/validation.go ValidateWebhookURL (https only, no query), its
    service by ValidateWebhookService, and conversionReviewVersions by
    validateConversionReviewVersions (duplicates, DNS-1035 labels, one of v1/v1beta1)."""
    crd = _crd({"type": "object"})
    crd["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v9", "v9", "V2"],
        "clientConfig": {"url": "http://hook.example/convert?x=1"}}}
    status, body = await module_api.post(CRDS, crd)
    assert status == 422, body
    at = "spec.conversion"
    dns1035 = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
               "start with an alphabetic character, and end with an alphanumeric character "
               "(e.g. 'my-name',  or 'abc-123', regex used for validation is "
               "'[a-z]([-a-z0-9]*[a-z0-9])?')")
    assert _causes(body) == [
        ("FieldValueInvalid", f"{at}.webhookClientConfig.url",
         "Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: "
         "https://host[/path]"),
        ("FieldValueInvalid", f"{at}.webhookClientConfig.url",
         'Invalid value: "x=1": query parameters are not permitted in the URL'),
        ("FieldValueInvalid", f"{at}.conversionReviewVersions[1]",
         'Invalid value: "v9": duplicate version'),
        ("FieldValueInvalid", f"{at}.conversionReviewVersions[2]",
         f'Invalid value: "V2": {dns1035}'),
        ("FieldValueInvalid", f"{at}.conversionReviewVersions",
         'Invalid value: []string{"v9", "v9", "V2"}: must include at least one of v1, v1beta1'),
    ]
    crd["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1"],
        "clientConfig": {"service": {"name": "", "namespace": "ns", "path": "/a//b"}}}}
    status, body = await module_api.post(CRDS, crd)
    assert status == 422, body
    service = f"{at}.webhookClientConfig.service"
    assert _causes(body) == [
        ("FieldValueRequired", f"{service}.name", "Required value: service name is required"),
        ("FieldValueInvalid", f"{service}.path",
         'Invalid value: "/a//b": segment[1] may not be empty'),
    ]
    crd["spec"]["conversion"] = {"strategy": "None", "webhook": {
        "conversionReviewVersions": ["v1"]}}
    status, body = await module_api.post(CRDS, crd)
    assert status == 422, body
    assert _causes(body) == [
        ("FieldValueForbidden", f"{at}.conversionReviewVersions",
         "Forbidden: should not be set when strategy is not set to Webhook")]


async def test_patterns_are_go_regular_expressions(module_api: API) -> None:
    """apiextensions pkg/apiserver/schema/validation.go compiles ``pattern`` with Go's
    regexp.Compile (RE2: no lookarounds or backreferences), quoting Go's parse error; and
    kube-openapi's pattern validator matches with it, where ``$`` is the end of the text
    (not before a trailing newline) and ``\\d`` is ASCII."""
    crd = _crd({"type": "object", "properties": {
        "a": {"type": "string", "pattern": "^(?!x)"},
        "b": {"type": "string", "pattern": "(["},
        "c": {"type": "string", "pattern": "a**"}}})
    status, body = await module_api.post(CRDS, crd)
    assert status == 422, body
    at = "spec.validation.openAPIV3Schema.properties[spec].properties"
    assert _causes(body) == [
        ("FieldValueInvalid", f"{at}[a].pattern",
         'Invalid value: "^(?!x)": must be a valid regular expression, but isn\'t: error '
         "parsing regexp: invalid or unsupported Perl syntax: `(?!`"),
        ("FieldValueInvalid", f"{at}[b].pattern",
         'Invalid value: "([": must be a valid regular expression, but isn\'t: error '
         "parsing regexp: missing closing ]: `[`"),
        ("FieldValueInvalid", f"{at}[c].pattern",
         'Invalid value: "a**": must be a valid regular expression, but isn\'t: error '
         "parsing regexp: invalid nested repetition operator: `**`"),
    ]
    crd = _crd({"type": "object", "properties": {
        "n": {"type": "string", "pattern": "^[a-z]+$"},
        "d": {"type": "string", "pattern": "^\\d+$"}}})
    path = await create_served(module_api, crd)
    status, body = await module_api.post(path, widget(crd, "w", {"n": "abc\n", "d": "١٢"}))
    assert status == 422, body
    assert _causes(body) == [
        ("FieldValueInvalid", "spec.n",
         "Invalid value: \"abc\\n\": spec.n in body should match '^[a-z]+$'"),
        ("FieldValueInvalid", "spec.d",
         "Invalid value: \"١٢\": spec.d in body should match '^\\d+$'"),
    ]


async def test_columns_stop_at_a_json_path_that_does_not_parse(module_api: API) -> None:
    """pkg/registry/customresource/tableconvertor/tableconvertor.go New: a column whose
    JSONPath the client-go jsonpath parser refuses ends the list (the convertor built so far is
    returned with the error, and customresource_handler.go serves with it), so that column and
    every later one are missing from the Table."""
    crd = _crd({"type": "object", "properties": {"n": {"type": "integer"},
                                                 "s": {"type": "string"}}},
               additionalPrinterColumns=[
                   {"name": "N", "type": "integer", "jsonPath": ".spec.n"},
                   {"name": "Broken", "type": "string", "jsonPath": ".spec.items[0"},
                   {"name": "S", "type": "string", "jsonPath": ".spec.s"}])
    path = await create_served(module_api, crd)
    assert (await module_api.post(path, widget(crd, "w", {"n": 3, "s": "x"})))[0] == 201
    status, table = await module_api.get(
        path, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert status == 200, table
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "N"]
    assert [r["cells"] for r in table["rows"]] == [["w", 3]]


async def test_names_in_use_are_refused_one_by_one_and_not_served(module_api: API) -> None:
    """pkg/controller/status/naming_controller.go calculateNamesAndConditions: each requested
    name is granted unless another CRD of the group holds it; the last conflict found names
    NamesAccepted's reason, and status.acceptedNames holds what was granted.
    customresource_handler.go serves nothing while neither NamesAccepted nor Established is
    True (the delegate's 404), and the discovery controller lists Established CRDs only."""
    first = _crd({"type": "object"})
    first["spec"]["names"]["shortNames"] = ["wd"]
    await create_served(module_api, first)
    group = first["spec"]["group"]
    second = copy.deepcopy(first)
    second["metadata"]["name"] = f"gadgets.{group}"
    second["spec"]["names"] = {"plural": "gadgets", "singular": "widget", "kind": "Gadget",
                               "shortNames": ["wd", "gd"], "categories": ["things"]}
    assert (await module_api.post(CRDS, second))[0] == 201

    async def named() -> dict[str, Any] | None:
        status = (await module_api.get(f"{CRDS}/gadgets.{group}"))[1].get("status") or {}
        return status if status.get("conditions") else None

    status = await wait_for(named)
    assert [(c["type"], c["status"], c["reason"], c["message"])
            for c in status["conditions"]] == [
        ("NamesAccepted", "False", "ShortNamesConflict", '"wd" is already in use'),
        ("Established", "False", "NotAccepted", "not all names are accepted")]
    assert status["acceptedNames"] == {"plural": "gadgets", "kind": "Gadget",
                                       "listKind": "GadgetList", "categories": ["things"]}
    assert await module_api.get(f"/apis/{group}/v1/namespaces/default/gadgets") == (
        404, "404 page not found\n")
    resources = (await module_api.get(f"/apis/{group}/v1"))[1]["resources"]
    assert [r["name"] for r in resources] == ["widgets"]


async def test_embedded_resource_metadata_is_object_meta(module_api: API) -> None:
    """pkg/apiserver/schema/objectmeta/validation.go validateEmbeddedResource: an embedded
    resource's apiVersion must parse as a group/version, and its metadata is checked by
    ValidateObjectMeta with path.ValidatePathSegmentName (so "Upper_Case" is a fine name, a
    slash is not) and with its labels and annotations."""
    crd = _crd({"type": "object", "properties": {"t": {
        "type": "object", "x-kubernetes-embedded-resource": True,
        "x-kubernetes-preserve-unknown-fields": True}}})
    path = await create_served(module_api, crd)
    ok = {"t": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Upper_Case"}}}
    status, body = await module_api.post(path, widget(crd, "ok", ok))
    assert status == 201, body
    bad = {"t": {"apiVersion": "a/b/c", "kind": "ConfigMap",
                 "metadata": {"name": "x/y", "labels": {"bad key!": "v"}}}}
    status, body = await module_api.post(path, widget(crd, "bad", bad))
    assert status == 422, body
    assert _causes(body) == [
        ("FieldValueInvalid", "spec.t.apiVersion",
         'Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c'),
        ("FieldValueInvalid", "spec.t.metadata.name",
         "Invalid value: \"x/y\": may not contain '/'"),
        ("FieldValueInvalid", "spec.t.metadata.labels",
         "Invalid value: \"bad key!\": name part must consist of alphanumeric characters, "
         "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
         "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
         "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    ]


async def test_struct_values_print_as_go_prints_them(module_api: API) -> None:
    """validation.go reports the storage-version count with the internal versions as its
    value (field.Invalid of spec.Versions: %#v, the schemas identical in every version moved
    to the spec by v1/conversion.go), and a rule's compile error with the ValidationRule,
    whose Reason and OptionalOldSelf are pointers: %#v prints their address, not their value.
    """
    crd = _crd({"type": "object"})
    crd["spec"]["versions"].append({**crd["spec"]["versions"][0], "name": "v2",
                                    "deprecated": True, "deprecationWarning": "old",
                                    "additionalPrinterColumns": [
                                        {"name": "A", "type": "string", "jsonPath": ".a"}]})
    status, body = await module_api.post(CRDS, crd)
    assert status == 422, body
    version = ("apiextensions.CustomResourceDefinitionVersion{{Name:\"{name}\", Served:true, "
               "Storage:true, Deprecated:{deprecated}, DeprecationWarning:(*string)({warning}), "
               "Schema:(*apiextensions.CustomResourceValidation)(nil), "
               "Subresources:(*apiextensions.CustomResourceSubresources)(nil), "
               "AdditionalPrinterColumns:[]apiextensions.CustomResourceColumnDefinition"
               "{columns}, SelectableFields:[]apiextensions.SelectableField(nil)}}")
    v1 = version.format(name="v1", deprecated="false", warning="nil", columns="(nil)")
    v2 = version.format(
        name="v2", deprecated="true", warning="0xc000000000",
        columns='{apiextensions.CustomResourceColumnDefinition{Name:"A", Type:"string", '
                'Format:"", Description:"", Priority:0, JSONPath:".a"}}')
    assert _causes(body) == [
        ("FieldValueInvalid", "spec.versions",
         f"Invalid value: []apiextensions.CustomResourceDefinitionVersion{{{v1}, {v2}}}: "
         "must have exactly one version marked as storage version")]
    crd = _crd({"type": "object", "properties": {"a": {"type": "string"}},
                "x-kubernetes-validations": [
                    {"rule": "self.b", "reason": "FieldValueForbidden",
                     "optionalOldSelf": True}]})
    status, body = await module_api.post(CRDS, crd)
    assert status == 422, body
    ((_, _, message),) = _causes(body)
    assert message.startswith(
        'Invalid value: apiextensions.ValidationRule{Rule:"self.b", Message:"", '
        'MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(0xc000000000), '
        'FieldPath:"", OptionalOldSelf:(*bool)(0xc000000000)}: compilation failed: '), message


async def test_a_version_without_a_schema_is_refused_with_the_reason(module_api: API) -> None:
    """validation.go validateCustomResourceDefinitionSpec: a v1 create requires a schema in
    every version (requireOpenAPISchema), "Required value: schemas are required"."""
    crd = _crd({"type": "object"})
    del crd["spec"]["versions"][0]["schema"]
    status, body = await module_api.post(CRDS, crd)
    assert status == 422, body
    assert _causes(body) == [("FieldValueRequired", "spec.versions[0].schema.openAPIV3Schema",
                              "Required value: schemas are required")]


async def test_scale_of_an_object_without_spec_replicas(module_api: API) -> None:
    """pkg/registry/customresource/etcd.go ScaleREST.Get: a custom resource without a value
    at specReplicasPath answers apierrors.NewInternalError("the spec replicas field %q does not
    exist"); an update of its scale goes on (scaleUpdatedObjectInfo marks the old replicas as
    unset) and sets the field."""
    crd = _crd({"type": "object", "properties": {"replicas": {"type": "integer"}}},
               subresources={"scale": {"specReplicasPath": ".spec.replicas",
                                       "statusReplicasPath": ".status.replicas"}})
    path = await create_served(module_api, crd)
    assert (await module_api.post(path, widget(crd, "w", {})))[0] == 201
    detail = 'the spec replicas field ".spec.replicas" does not exist'
    assert await module_api.get(f"{path}/w/scale") == (500, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f"Internal error occurred: {detail}", "reason": "InternalError",
        "details": {"causes": [{"message": detail}]}, "code": 500})
    status, scale = await module_api.patch(f"{path}/w/scale", {"spec": {"replicas": 2}},
                                           "application/merge-patch+json")
    assert (status, scale["spec"]) == (200, {"replicas": 2}), scale
    assert (await module_api.get(f"{path}/w"))[1]["spec"] == {"replicas": 2}
