"""fieldValidation (Strict, Warn, Ignore, and the default Warn) for every kind of write.

Sources: k8s.io/apiserver pkg/endpoints/handlers/rest.go (the directive), create.go,
update.go and patch.go (strict decoding per verb and patch type), k8s.io/apimachinery
pkg/util/managedfields/internal/structuredmerge.go (apply's typed conversion), and the
apiserver's own integration test test/integration/apiserver/field_validation_test.go.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.conftest import API
from tests.cluster.fidelity.writes import (
    APPLY,
    JSON_PATCH,
    MERGE,
    STRATEGIC,
    WIDGETS,
    create_widget_crd,
    send,
    widget,
)

CM = "/api/v1/namespaces/default/configmaps"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"

DEPLOYMENT_WITH_UNKNOWN = b"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
  namespace: default
spec:
  selector:
    matchLabels: {app: x}
  template:
    metadata:
      labels: {app: x}
    spec:
      containers:
      - name: c
        image: nginx
        bogus: 2
"""


@pytest.mark.parametrize("directive", ["Strict", "Warn", "Ignore", ""])
async def test_apply_with_an_undeclared_field_is_the_typed_conversion_500(
        api: API, directive: str) -> None:
    """Rule: an apply configuration must convert to a typed value before anything else, so
    a field the schema does not declare is structured-merge-diff's plain error, which the
    apiserver answers as a 500 without a reason, whatever fieldValidation says (it does not
    become a warning under Warn). Nothing is created.
    Source: staging/src/k8s.io/apimachinery/pkg/util/managedfields/internal/structuredmerge.go
    (Apply: "failed to create typed patch object (%v): %v" with objectGVKNN), and
    handlers/responsewriters/status.go ErrorToAPIStatus for a non-Status error."""
    query = f"?fieldManager=m&fieldValidation={directive}" if directive else "?fieldManager=m"
    status, body, warnings = await send(api, "PATCH", f"{DEPLOYMENTS}/d{query}",
                                        DEPLOYMENT_WITH_UNKNOWN, content_type=APPLY)
    assert (status, warnings) == (500, [])
    assert body == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "failed to create typed patch object (default/d; apps/v1, Kind=Deployment): "
                   '.spec.template.spec.containers[name="c"].bogus: field not declared in '
                   "schema",
        "code": 500}
    assert (await api.get(f"{DEPLOYMENTS}/d"))[0] == 404


async def test_apply_of_a_custom_resource_with_an_undeclared_field_is_the_same_500(
        api: API) -> None:
    """Rule: the custom resource's structural schema is its apply type, so an undeclared field
    (outside x-kubernetes-preserve-unknown-fields) fails the same way under Warn; a field
    below a preserve-unknown-fields object is declared enough.
    Source: staging/src/k8s.io/apimachinery/pkg/util/managedfields/internal/structuredmerge.go;
    apiextensions-apiserver pkg/apiserver/customresource_handler.go (the CR type converter)."""
    await create_widget_crd(api)
    cfg = widget("w", spec={"size": 1, "extra": True})
    status, body, _ = await send(api, "PATCH", f"{WIDGETS}/w?fieldManager=m&fieldValidation=Warn",
                                 cfg, content_type=APPLY)
    assert (status, body["message"], body.get("reason")) == (
        500, "failed to create typed patch object (/w; fidelity.example.com/v1, Kind=Widget): "
             ".spec.extra: field not declared in schema", None)
    cfg = widget("w", spec={"size": 1, "free": {"anything": {"goes": 1}}})
    status, body, warnings = await send(
        api, "PATCH", f"{WIDGETS}/w?fieldManager=m&fieldValidation=Strict", cfg,
        content_type=APPLY)
    assert (status, warnings) == (201, []), body
    assert body["spec"] == {"size": 1, "free": {"anything": {"goes": 1}}}


APPLY_WITH_DUPLICATES = b"""{
\t"apiVersion": "v1",
\t"kind": "ConfigMap",
\t"metadata": {"name": "dup"},
\t"data": {
\t\t"a": "1",
\t\t"a": "2",
\t\t"b": "3"
\t},
\t"data": {"c": "4", "c": "5"}
}"""


REPEATED_KEYS = ['line 7: key "a" already set in map', 'line 10: key "c" already set in map',
                 'line 10: key "data" already set in map']


@pytest.mark.parametrize(("directive", "expected"), [
    ("Warn", REPEATED_KEYS), ("", REPEATED_KEYS), ("Ignore", [])])
async def test_apply_reports_repeated_keys_as_go_yaml_does(
        api: API, directive: str, expected: list[str]) -> None:
    """Rule: after the merge, an apply body (YAML, or JSON which is YAML) is decoded again with
    go-yaml's strict mode; each repeated key becomes a warning "line N: key "k" already set
    in map" (N: the line of the repeated key's value; a value's own repeats come before its
    key's) under Warn and by default, nothing under Ignore; the last value wins.
    Source: staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go
    (applyPatcher.applyPatchToCurrentObject, addStrictDecodingWarnings, parseYAMLWarnings),
    test/integration/apiserver/field_validation_test.go (testFieldValidationApplyCreate)."""
    query = f"&fieldValidation={directive}" if directive else ""
    status, body, warnings = await send(api, "PATCH", f"{CM}/dup?fieldManager=m{query}",
                                        APPLY_WITH_DUPLICATES, content_type=APPLY)
    assert (status, warnings) == (201, expected), body
    assert body["data"] == {"c": "5"}


async def test_strict_apply_with_repeated_keys_is_a_400_listing_every_line(api: API) -> None:
    """Rule: under Strict the same go-yaml errors are a 400 BadRequest "error strict decoding
    YAML: error converting YAML to JSON: yaml: unmarshal errors:" followed by one indented
    line per repeated key; nothing is written.
    Source: staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go
    (applyPatcher.applyPatchToCurrentObject)."""
    status, body, warnings = await send(api, "PATCH",
                                        f"{CM}/dup?fieldManager=m&fieldValidation=Strict",
                                        APPLY_WITH_DUPLICATES, content_type=APPLY)
    assert (status, warnings) == (400, [])
    assert body == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal "
                   'errors:\n  line 7: key "a" already set in map\n  line 10: key "c" already '
                   'set in map\n  line 10: key "data" already set in map',
        "reason": "BadRequest", "code": 400}
    assert (await api.get(f"{CM}/dup"))[0] == 404


INVALID_DEPLOYMENT_JSON = b"""
{
\t"apiVersion": "apps/v1",
\t"kind": "Deployment",
\t"metadata": {
\t\t"name": "dupename",
\t\t"name": "NAME",
\t\t"labels": {"app": "nginx"},
\t\t"unknownMeta": "metaVal"
\t},
\t"spec": {
\t\t"unknown1": "val1",
\t\t"unknownDupe": "valDupe",
\t\t"unknownDupe": "valDupe2",
\t\t"paused": true,
\t\t"paused": false,
\t\t"selector": {"matchLabels": {"app": "nginx"}},
\t\t"template": {
\t\t\t"metadata": {"labels": {"app": "nginx"}},
\t\t\t"spec": {"containers": [{
\t\t\t\t"name": "nginx",
\t\t\t\t"image": "nginx:latest",
\t\t\t\t"unknownNested": "val1",
\t\t\t\t"imagePullPolicy": "Always",
\t\t\t\t"imagePullPolicy": "Never"
\t\t\t}]}
\t\t}
\t}
}"""

INVALID_DEPLOYMENT_YAML = b"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: dupename
  name: NAME
  unknownMeta: metaVal
  labels:
    app: nginx
spec:
  unknown1: val1
  unknownDupe: valDupe
  unknownDupe: valDupe2
  paused: true
  paused: false
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:latest
        unknownNested: val1
        imagePullPolicy: Always
        imagePullPolicy: Never"""

JSON_PROBLEMS = [
    'duplicate field "metadata.name"', 'unknown field "metadata.unknownMeta"',
    'unknown field "spec.unknown1"', 'unknown field "spec.unknownDupe"',
    'duplicate field "spec.paused"',
    'unknown field "spec.template.spec.containers[0].unknownNested"',
    'duplicate field "spec.template.spec.containers[0].imagePullPolicy"']
YAML_LINES = ['line 5: key "name" already set in map',
              'line 12: key "unknownDupe" already set in map',
              'line 14: key "paused" already set in map',
              'line 28: key "imagePullPolicy" already set in map']
YAML_UNKNOWN = ['unknown field "metadata.unknownMeta"',
                'unknown field "spec.template.spec.containers[0].unknownNested"',
                'unknown field "spec.unknown1"', 'unknown field "spec.unknownDupe"']


async def test_typed_json_body_problems_are_listed_in_document_order(api: API) -> None:
    """Rule: a built-in kind's JSON body is decoded into its Go type by sigs.k8s.io/json,
    which reports unknown and repeated fields as it meets them, with full paths and list
    indices ("spec.template.spec.containers[0].unknownNested"); a field both unknown and
    repeated is reported once, as unknown. Strict: one 400 listing them; Warn: one warning each.
    Source: test/integration/apiserver/field_validation_test.go (testFieldValidationPost),
    staging/src/k8s.io/apimachinery/pkg/runtime/serializer/json/json.go (strict decoding)."""
    status, body, _ = await send(api, "POST", f"{DEPLOYMENTS}?fieldValidation=Strict",
                                 INVALID_DEPLOYMENT_JSON.replace(b"NAME", b"strict"))
    assert (status, body["reason"]) == (400, "BadRequest")
    assert body["message"] == ('Deployment in version "v1" cannot be handled as a Deployment: '
                               "strict decoding error: " + ", ".join(JSON_PROBLEMS))
    status, body, warnings = await send(api, "POST", f"{DEPLOYMENTS}?fieldValidation=Warn",
                                        INVALID_DEPLOYMENT_JSON.replace(b"NAME", b"warn"))
    assert (status, warnings) == (201, JSON_PROBLEMS)
    assert (body["metadata"]["name"], body["spec"]["paused"]) == ("warn", False)


async def test_a_repeated_field_is_reported_where_it_is_repeated(api: API) -> None:
    """Rule: the decoder reports a repeated field when it meets the repeat, so an unknown
    field between the first occurrence and the repeat comes first.
    Source: sigs.k8s.io/json internal/golang/encoding/json/decode.go (object: the strict
    error saved as each key is read), k8s.io/apimachinery pkg/runtime/serializer/json/json.go
    (strict decoding errors in the order saved)."""
    body = (b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"repeat"},'
            b'"data":{"a":"1"},"bogus":1,"data":{"b":"2"}}')
    status, out, warnings = await send(api, "POST", CM, body)
    assert (status, out["data"], warnings) == (
        201, {"a": "1", "b": "2"}, ['unknown field "bogus"', 'duplicate field "data"'])


async def test_typed_yaml_body_lists_go_yaml_lines_then_unknown_fields(api: API) -> None:
    """Rule: a YAML body is converted to JSON strictly first: repeated keys are go-yaml's
    "yaml: unmarshal errors:" list (one warning per line under Warn), then the unknown fields
    of the converted JSON, whose keys are sorted.
    Source: test/integration/apiserver/field_validation_test.go (post-*-validation-yaml),
    staging/src/k8s.io/apimachinery/pkg/runtime/serializer/json/json.go (YAML strict path),
    handlers/rest.go (addStrictDecodingWarnings splits the yaml list)."""
    status, body, _ = await send(api, "POST", f"{DEPLOYMENTS}?fieldValidation=Strict",
                                 INVALID_DEPLOYMENT_YAML.replace(b"NAME", b"strict"),
                                 content_type="application/yaml")
    assert status == 400
    assert body["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
        "yaml: unmarshal errors:\n" + "\n".join(f"  {line}" for line in YAML_LINES) + ", "
        + ", ".join(YAML_UNKNOWN))
    status, body, warnings = await send(api, "POST", DEPLOYMENTS,
                                        INVALID_DEPLOYMENT_YAML.replace(b"NAME", b"warn"),
                                        content_type="application/yaml")
    assert (status, warnings) == (201, YAML_LINES + YAML_UNKNOWN), body


async def test_a_repeated_key_is_printed_as_go_quotes_it(api: API) -> None:
    """Rule: go-yaml prints a repeated key with ``%#v``, which for a string is
    strconv.Quote: printable Unicode as it is (not JSON's \\u escapes), a non-printable rune
    escaped (\\u200b).
    Source: sigs.k8s.io/yaml goyaml.v2 decode.go (setMapIndex: "line %d: key %#v already set
    in map"), Go src/strconv/quote.go (appendEscapedRune)."""
    body = ('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: quoted\ndata:\n'
            '  ключ: "1"\n  ключ: "2"\n  "a\\u200b": "3"\n  "a\\u200b": "4"\n').encode()
    status, out, _ = await send(api, "PATCH", f"{CM}/quoted?fieldManager=m&fieldValidation=Strict",
                                body, content_type=APPLY)
    assert (status, out["message"]) == (
        400, "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal "
             'errors:\n  line 7: key "ключ" already set in map\n'
             '  line 9: key "a\\u200b" already set in map'), out


PATCH_DEPLOYMENT = {
    "metadata": {"name": "NAME"},
    "spec": {"selector": {"matchLabels": {"app": "x"}},
             "template": {"metadata": {"labels": {"app": "x"}},
                          "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


async def _patched_deployment_warnings(api: API, name: str, patch: Any,
                                       content_type: str) -> list[str]:
    created = {**PATCH_DEPLOYMENT, "metadata": {"name": name}}
    status, _, _ = await send(api, "POST", DEPLOYMENTS, created)
    assert status == 201
    status, body, warnings = await send(api, "PATCH", f"{DEPLOYMENTS}/{name}?fieldValidation=Warn",
                                        patch, content_type=content_type)
    assert status == 200, body
    return warnings


async def test_a_merge_patch_warns_in_the_order_of_the_patched_json(api: API) -> None:
    """Rule: the patched object is the JSON text evanphx/json-patch's MergePatch writes, in
    which every object the patch merges into is a Go map (marshaled with sorted keys), and
    the strict decoder warns in the order it meets fields there: a new "spec.bogus" comes
    before an unknown field under "spec.template", though it follows it in the patch and the
    stored object has "template" first.
    Source: k8s.io/apiserver pkg/endpoints/handlers/patch.go (jsonPatcher.applyJSPatch,
    applyPatchToCurrentObject: DecodeInto the patched JSON, strict errors as warnings),
    github.com/evanphx/json-patch merge.go (mergeDocs over partialDoc, pruneNulls)."""
    patch = {"spec": {"template": {"spec": {"containers": [
        {"name": "c", "image": "nginx", "zeta": 1, "alpha": 2}]}}, "bogus": 1}}
    assert await _patched_deployment_warnings(api, "merge-order", patch, MERGE) == [
        'unknown field "spec.bogus"',
        'unknown field "spec.template.spec.containers[0].alpha"',
        'unknown field "spec.template.spec.containers[0].zeta"']


async def test_a_json_patch_warns_in_the_order_of_the_patched_json(api: API) -> None:
    """Rule: json-patch v4 turns every object an operation's path walks through into a Go
    map (findObject: intoDoc), marshaled with sorted keys; an added value keeps its own text.
    So "spec.aaa", added last, is met first, and the added object's members keep the patch's
    order ("z" before "y").
    Source: patch.go applyJSPatch (Patch.Apply, then strict DecodeInto), evanphx/json-patch
    patch.go (findObject, lazyNode.MarshalJSON)."""
    ops = [{"op": "add", "path": "/spec/zzz", "value": 1},
           {"op": "add", "path": "/spec/template/spec/containers/0/colour", "value": "red"},
           {"op": "add", "path": "/spec/aaa", "value": {"z": 1, "y": 2}}]
    assert await _patched_deployment_warnings(api, "json-order", ops, JSON_PATCH) == [
        'unknown field "spec.aaa"', 'unknown field "spec.template.spec.containers[0].colour"',
        'unknown field "spec.zzz"']


async def test_a_strategic_patch_warns_in_text_order_after_the_patchs_own_problems(
        api: API) -> None:
    """Rule: a strategic merge patch's result is converted from a map, and the converter
    sorts its unknown-field errors by their text; the patch's own repeated keys come first.
    Source: patch.go applyPatchToObject (append(strictErrs, strictError.Errors()...)),
    k8s.io/apimachinery pkg/runtime/converter.go FromUnstructuredWithValidation (sort.Slice
    of unknownFieldErrors by Error())."""
    patch = (b'{"spec":{"zzz":1,"paused":true,"paused":false,"template":{"spec":{"containers":'
             b'[{"name":"c","zeta":1}]}},"aaa":2}}')
    assert await _patched_deployment_warnings(api, "smp-order", patch, STRATEGIC) == [
        'duplicate field "spec.paused"', 'unknown field "spec.aaa"',
        'unknown field "spec.template.spec.containers[0].zeta"', 'unknown field "spec.zzz"']


async def test_a_repeated_key_merges_into_a_struct_and_not_into_a_map(api: API) -> None:
    """Rule: a built-in kind's body is decoded into Go structs, where a repeated member is
    decoded into the one before it (two ``data`` maps merge), under Ignore too; a custom
    resource's body and a patch document are decoded into maps, where the last one wins.
    Source: apimachinery runtime/serializer/json/json.go Serializer.unmarshal (Unstructured
    into a map[string]interface{}); sigs.k8s.io/json decode.go object() and
    objectInterface(); apiserver handlers/patch.go (jsonpatch.MergePatch's partialDoc)."""
    status, body, warnings = await send(
        api, "POST", f"{CM}?fieldValidation=Ignore",
        b'{"metadata":{"name":"rep"},"data":{"a":"1"},"data":{"b":"2"}}')
    assert (status, warnings, body["data"]) == (201, [], {"a": "1", "b": "2"}), body
    status, body, warnings = await send(
        api, "PATCH", f"{CM}/rep?fieldValidation=Warn",
        b'{"data":{"c":"3"},"data":{"d":"4"}}', content_type=MERGE)
    assert (status, warnings, body["data"]) == (
        200, ['duplicate field "data"'], {"a": "1", "b": "2", "d": "4"}), body
    await create_widget_crd(api)
    raw = (b'{"apiVersion":"fidelity.example.com/v1","kind":"Widget","metadata":{"name":"rep"},'
           b'"spec":{"free":{"a":1}},"spec":{"size":2}}')
    status, body, warnings = await send(api, "POST", f"{WIDGETS}?fieldValidation=Warn", raw)
    assert (status, warnings, body["spec"]) == (201, ['duplicate field "spec"'], {"size": 2}), body
