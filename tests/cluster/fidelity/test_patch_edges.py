"""PATCH bodies at the edges: merge and strategic merge patches that are no object, patch types
a route does not take, server-side apply configurations of another kind or place.

Each test is one rule of kube-apiserver 1.32, read from the source it cites; all share one
server (``module_api``) and write objects of their own names.
"""

from __future__ import annotations

import pytest

from tests.cluster.conftest import API
from tests.cluster.fidelity.writes import (
    APPLY,
    JSON_PATCH,
    MERGE,
    STRATEGIC,
    create_configmap,
    failure,
    send,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

NS = "/api/v1/namespaces/default"


@pytest.mark.parametrize(("raw", "word"), [
    (b"[1, 2]", "array"), (b'"text"', "string"), (b"5", "number"), (b"true", "bool")])
@pytest.mark.parametrize("validation", ["", "Strict", "Warn"])
async def test_a_merge_patch_that_is_no_object_is_refused_by_the_strict_decoder(
        module_api: API, raw: bytes, word: str, validation: str) -> None:
    """Rule: unless fieldValidation is Ignore (the default is Warn), the merge patch is first
    decoded strictly into a map, and a body that is no object is that decoder's 400.
    Source: k8s.io/apiserver pkg/endpoints/handlers/patch.go (applyJSPatch, MergePatchType:
    kjson.UnmarshalStrict, "error decoding patch: %v"; fieldValidation: "" means Warn)."""
    await create_configmap(module_api, f"mp-{word}-{validation.lower() or 'default'}")
    query = f"?fieldValidation={validation}" if validation else ""
    status, out = await module_api.patch(
        f"{NS}/configmaps/mp-{word}-{validation.lower() or 'default'}{query}", None, MERGE,
        raw=raw)
    assert (status, out) == (400, failure(
        400, "BadRequest", f"error decoding patch: json: cannot unmarshal {word} into Go value "
        "of type map[string]interface {}"))


@pytest.mark.parametrize(("name", "raw"), [("null", b"null"), ("text", b'"text"'),
                                         ("seven", b"7")])
async def test_a_merge_patch_that_is_no_object_under_ignore_is_json_patchs_error(
        module_api: API, name: str, raw: bytes) -> None:
    """Rule: with fieldValidation=Ignore (and for null, which decodes into a nil map under any
    directive) json-patch's MergePatch decides: null or a scalar patch is ErrBadJSONPatch,
    a 400 with its text.
    Source: k8s.io/apiserver pkg/endpoints/handlers/patch.go (applyJSPatch: "retErr ==
    jsonpatch.ErrBadJSONPatch" -> NewBadRequest), gopkg.in/evanphx/json-patch.v4 merge.go
    (MergePatch)."""
    expected = (400, failure(400, "BadRequest", "Invalid JSON Patch"))
    await create_configmap(module_api, f"mpi-{name}")
    assert await module_api.patch(f"{NS}/configmaps/mpi-{name}?fieldValidation=Ignore", None,
                                  MERGE, raw=raw) == expected
    assert await module_api.patch(f"{NS}/configmaps/mpi-{name}", None, MERGE,
                                  raw=b"null") == expected


async def test_a_merge_patch_array_under_ignore_is_the_patched_object_that_cannot_decode(
        module_api: API) -> None:
    """Rule: MergePatch returns an array patch as the whole result, which cannot be decoded
    as an object: a 422 on field "patch" (no kind, no name).
    Source: gopkg.in/evanphx/json-patch.v4 merge.go (MergePatch: "Not an error, just not a
    doc"), k8s.io/apiserver pkg/endpoints/handlers/patch.go (applyPatchToCurrentObject:
    NewInvalid(schema.GroupKind{}, "", field.Invalid(field.NewPath("patch"), ...)))."""
    await create_configmap(module_api, "mp-array-ignore")
    status, out = await module_api.patch(
        f"{NS}/configmaps/mp-array-ignore?fieldValidation=Ignore", None, MERGE, raw=b"[1,2]")
    assert (status, out["reason"], [(c["reason"], c["field"]) for c in
                                    out["details"]["causes"]]) == (
        422, "Invalid", [("FieldValueInvalid", "patch")])


async def test_a_null_strategic_merge_patch_changes_nothing(module_api: API) -> None:
    """Rule: the strategic merge patch is decoded into a map, and null leaves it nil: the
    patch changes nothing and the object comes back as it was (no new resourceVersion).
    Source: k8s.io/apiserver pkg/endpoints/handlers/patch.go (strategicPatchObject:
    kjson.UnmarshalStrict into patchMap, applyPatchToObject)."""
    created = await create_configmap(module_api, "smp-null")
    status, out = await module_api.patch(f"{NS}/configmaps/smp-null", None, STRATEGIC,
                                         raw=b"null")
    assert (status, out["data"], out["metadata"]["resourceVersion"]) == (
        200, {"a": "1"}, created["metadata"]["resourceVersion"])


@pytest.mark.parametrize("content_type", ["application/json", "text/plain",
                                          "application/yaml"])
async def test_a_built_in_patch_route_refuses_other_content_types_in_go_restful(
        module_api: API, content_type: str) -> None:
    """Rule: a built-in resource's PATCH route consumes the four patch types only, so go-restful
    answers any other Content-Type (with a body) before the handler runs: 415 with its own
    text and empty details, written by the apiserver's serviceErrorHandler.
    Source: k8s.io/apiserver pkg/endpoints/installer.go (ws.PATCH(...).Consumes(
    supportedTypes...)), github.com/emicklei/go-restful/v3 jsr311.go (detectRoute:
    "415: Unsupported Media Type"), pkg/server/handler.go (serviceErrorHandler)."""
    await create_configmap(module_api, f"ct-{content_type.rsplit('/', 1)[1]}")
    status, out = await module_api.patch(f"{NS}/configmaps/ct-{content_type.rsplit('/', 1)[1]}",
                                         {"data": {"a": "2"}}, content_type)
    assert (status, out) == (415, failure(415, "UnsupportedMediaType",
                                           "415: Unsupported Media Type", {}))


@pytest.mark.parametrize(("config", "printed"), [
    ("apiVersion: v1\nkind: Secret\n", "/v1, Kind=Secret"),
    ("apiVersion: apps/v1\nkind: ConfigMap\n", "apps/v1, Kind=ConfigMap"),
    ("kind: ConfigMap\n", "/, Kind=ConfigMap"),
    ("apiVersion: v1\n", "/v1, Kind="),
])
async def test_an_apply_configuration_of_another_kind_fails_the_version_check(
        module_api: API, config: str, printed: str) -> None:
    """Rule: the field manager's outermost layer compares the configuration's group, version
    and kind with the endpoint's and prints the configuration's GroupVersionKind.
    Source: k8s.io/apimachinery pkg/util/managedfields/internal/versioncheck.go
    (versionCheckManager.Apply: "invalid object type: %v"), pkg/runtime/schema/
    group_version.go (GroupVersionKind.String)."""
    status, out = await module_api.patch(
        f"{NS}/configmaps/apply-kind?fieldManager=tester", None, APPLY,
        raw=(config + "metadata:\n  name: apply-kind\n").encode())
    assert (status, out) == (400, failure(400, "BadRequest",
                                           f"invalid object type: {printed}"))


async def test_an_apply_configuration_in_another_namespace_is_refused(module_api: API) -> None:
    """Rule: the applied object's namespace is checked against the URL as a patched object's
    is, for a new object as for an existing one.
    Source: k8s.io/apiserver pkg/endpoints/handlers/patch.go (applyPatch:
    EnsureObjectNamespaceMatchesRequestNamespace)."""
    expected = (400, failure(400, "BadRequest", "the namespace of the provided object does "
                              "not match the namespace sent on the request"))
    config = (b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: apply-ns\n"
              b"  namespace: kube-system\n")
    assert await module_api.patch(f"{NS}/configmaps/apply-ns?fieldManager=tester", None,
                                  APPLY, raw=config) == expected
    status, out = await module_api.get(f"{NS}/configmaps/apply-ns")
    assert status == 404, out
    await create_configmap(module_api, "apply-ns")
    assert await module_api.patch(f"{NS}/configmaps/apply-ns?fieldManager=tester", None,
                                  APPLY, raw=config) == expected


async def test_an_apply_creating_an_object_needs_its_name_in_the_configuration(
        module_api: API) -> None:
    """Rule: an apply that creates starts from an empty object, so a configuration without a
    name (a generateName does not count) leaves the object nameless, which checkName
    refuses; an existing object keeps its name.
    Source: k8s.io/apiserver pkg/endpoints/handlers/patch.go (applyPatcher.createNewObject,
    applyPatch: checkName), handlers/rest.go (checkName), handlers/namer.go (errEmptyName)."""
    config = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: gen-\n"
    assert await module_api.patch(f"{NS}/configmaps/apply-unnamed?fieldManager=tester", None,
                                  APPLY, raw=config) == (400, failure(
        400, "BadRequest", "the name of the object (apply-unnamed based on URL) was "
        "undeterminable: name must be provided"))
    await create_configmap(module_api, "apply-unnamed")
    status, out = await module_api.patch(
        f"{NS}/configmaps/apply-unnamed?fieldManager=tester", None, APPLY,
        raw=b"apiVersion: v1\nkind: ConfigMap\ndata:\n  b: '2'\n")
    assert (status, out["metadata"]["name"], out["data"]) == (
        200, "apply-unnamed", {"a": "1", "b": "2"})


@pytest.mark.parametrize(("raw", "message"), [
    (b"- a\n- b\n", "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: "
                    "cannot unmarshal array into Go value of type map[string]interface {}"),
    (b"just text\n", "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: "
                     "cannot unmarshal string into Go value of type map[string]interface {}"),
    (b"null\n", "invalid object type: /, Kind="),
    (b"", "invalid object type: /, Kind="),
])
async def test_an_apply_body_that_is_no_map(module_api: API, raw: bytes, message: str) -> None:
    """Rule: the apply configuration is unmarshalled by sigs.k8s.io/yaml into a map: another
    value is its decoding error; null (or nothing) leaves the map empty, which the field
    manager's version check refuses.
    Source: k8s.io/apiserver pkg/endpoints/handlers/patch.go (applyPatcher.
    applyPatchToCurrentObject: "error decoding YAML: %v"), sigs.k8s.io/yaml yaml.go
    (Unmarshal: "error unmarshaling JSON: %w", jsonUnmarshal: "while decoding JSON: %v"),
    k8s.io/apimachinery pkg/util/managedfields/internal/versioncheck.go."""
    assert await module_api.patch(f"{NS}/configmaps/apply-no-map?fieldManager=tester", None,
                                  APPLY, raw=raw) == (400, failure(400, "BadRequest", message))


@pytest.mark.parametrize(("content_type", "validation", "message"), [
    (JSON_PATCH, "", "error decoding patch: invalid character 'x' after object key"),
    (JSON_PATCH, "Ignore", "invalid character 'x' after object key"),
    (MERGE, "Strict", "error decoding patch: invalid character 'x' after object key"),
    (MERGE, "Ignore", "Invalid JSON Patch"),
    (STRATEGIC, "", "invalid character 'x' after object key"),
])
async def test_a_patch_that_is_not_json_is_the_scanners_error(
        module_api: API, content_type: str, validation: str, message: str) -> None:
    """Rule: each patch type's decoder meets the text first: JSON and merge patches are
    decoded strictly unless fieldValidation is Ignore ("error decoding patch: " and Go's
    scanner error), then json-patch's DecodePatch (its error as is) or MergePatch
    (ErrBadJSONPatch); a strategic merge patch's decoder error is the message as is.
    Source: k8s.io/apiserver pkg/endpoints/handlers/patch.go (applyJSPatch,
    strategicPatchObject), encoding/json scanner.go (stateEndValue: "after object key")."""
    name = f"syntax-{content_type.split('/')[1].split('-')[0]}-{validation.lower() or 'default'}"
    await create_configmap(module_api, name)
    query = f"?fieldValidation={validation}" if validation else ""
    assert await module_api.patch(f"{NS}/configmaps/{name}{query}", None, content_type,
                                  raw=b'{"data" x}') == (400, failure(400, "BadRequest",
                                                                      message))


@pytest.mark.parametrize(("raw", "go_error"), [
    (b"apiVersion: v1\nkind: ConfigMap: x\n",
     "yaml: line 2: mapping values are not allowed in this context"),
    # a parser error's line is counted from 0: go-yaml names the line before the problem
    (b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n data:\n  a: b\n",
     "yaml: line 4: did not find expected key"),
    (b"apiVersion: v1\ndata: [1, 2\n", "yaml: line 2: did not find expected ',' or ']'"),
    (b"kind: @x\n", "yaml: found character that cannot start any token"),
    (b"kind: ConfigMap\n\tdata: x\n",
     "yaml: line 2: found a tab character that violates indentation"),
    (b"kind: 'ConfigMap\n", "yaml: line 2: found unexpected end of stream"),
    (b"kind: *k\n", "yaml: unknown anchor 'k' referenced"),
])
async def test_an_apply_body_that_is_no_yaml_is_go_yamls_error(
        module_api: API, raw: bytes, go_error: str) -> None:
    """Rule: the apply configuration is read by sigs.k8s.io/yaml Unmarshal, whose go-yaml v2
    (a port of libyaml: the same problems) words its failure "yaml: line N: <problem>" with
    N the problem's line from 0 (+1 for a scanner error) or the context's, and applyPatcher
    answers it as a 400 BadRequest without details.
    Source: k8s.io/apiserver v0.32 pkg/endpoints/handlers/patch.go (applyPatcher.
    applyPatchToCurrentObject: "error decoding YAML: %v"), sigs.k8s.io/yaml v1.4.0 yaml.go
    (unmarshal: "error converting YAML to JSON: %w"), goyaml.v2/decode.go (parser.fail,
    "unknown anchor '%s' referenced"), goyaml.v2/scannerc.go and parserc.go (the problems)."""
    path = f"{NS}/configmaps/apply-no-yaml?fieldManager=tester"
    assert await module_api.patch(path, None, APPLY, raw=raw) == (400, failure(
        400, "BadRequest", f"error decoding YAML: error converting YAML to JSON: {go_error}"))


async def test_a_yaml_body_that_is_no_yaml_is_go_yamls_error_summarized(
        module_api: API) -> None:
    """Rule: a YAML create or update body is converted by the YAML serializer's
    yaml.YAMLToJSON, whose error (go-yaml's, no prefix) create.go reports through
    transformDecodeError with the body's first 30 bytes in hex.
    Source: k8s.io/apimachinery v0.32 pkg/runtime/serializer/json/json.go (Decode:
    yaml.YAMLToJSON), sigs.k8s.io/yaml v1.4.0 yaml.go (YAMLToJSON), k8s.io/apiserver
    pkg/endpoints/handlers/rest.go (transformDecodeError, summarizeData)."""
    raw = b"apiVersion: v1\nkind: ConfigMap: x\n"
    assert await module_api.post(f"{NS}/configmaps", None, raw=raw,
                                 content_type="application/yaml") == (400, failure(
        400, "BadRequest", "the object provided is unrecognized (must be of type ConfigMap): "
        "yaml: line 2: mapping values are not allowed in this context "
        f"({raw[:30].hex()} ...)"))


async def test_a_json_patch_path_is_read_after_its_first_slash(module_api: API) -> None:
    """Rule: the JSON patch library splits a path at every "/" and drops the first piece
    unread, so "x/data/a" is /data/a; a path with no "/" addresses nothing and the operation
    fails (the generic 422).
    Source: gopkg.in/evanphx/json-patch.v4 patch.go (findObject: strings.Split(path, "/"),
    split[1:len(split)-1]; "len(split) < 2" -> nil), k8s.io/apiserver pkg/endpoints/handlers/
    patch.go (applyJSPatch: patchObj.Apply error -> NewGenericServerResponse(422))."""
    await create_configmap(module_api, "jp-first-slash")
    path = f"{NS}/configmaps/jp-first-slash"
    status, out = await module_api.patch(
        path, [{"op": "replace", "path": "x/data/a", "value": "9"}], JSON_PATCH)
    assert (status, out["data"]) == (200, {"a": "9"})
    assert await module_api.patch(path, [{"op": "replace", "path": "data", "value": "9"}],
                                  JSON_PATCH) == (422, failure(
        422, "Invalid", "the server rejected our request due to an error in our request", {}))


async def test_a_json_patchs_own_strict_problems_are_json_patch_warnings(
        module_api: API) -> None:
    """Rule: under Warn (the default) the JSON patch is decoded strictly into []jsonPatchOp
    first: an operation's keys beyond op, path, from and value are unknown, a repeated key a
    duplicate, each problem "json patch "-prefixed, in the body's order, and listed before
    the patched object's own unknown fields.
    Source: k8s.io/apiserver v0.32 pkg/endpoints/handlers/patch.go (jsonPatchOp; applyJSPatch:
    kjson.UnmarshalStrict, "json patch %v"; applyPatchToCurrentObject:
    append(appliedStrictErrs, strictError.Errors()...) -> addStrictDecodingWarnings)."""
    await create_configmap(module_api, "jp-strict-warn")
    body = (b'[{"op":"replace","op":"replace","path":"/data/a","value":"2","foo":1},'
            b'{"op":"add","path":"/bar","value":1}]')
    status, out, warnings = await send(module_api, "PATCH",
                                       f"{NS}/configmaps/jp-strict-warn", body,
                                       content_type=JSON_PATCH)
    assert (status, out["data"], warnings) == (200, {"a": "2"}, [
        'json patch duplicate field "[0].op"', 'json patch unknown field "[0].foo"',
        'unknown field "bar"'])


async def test_a_json_patch_ops_repeated_key_is_reported_where_it_is_repeated(
        module_api: API) -> None:
    """Rule: strict decoding of []jsonPatchOp reports a repeated key when it meets the
    repeat, after an unknown key met before it.
    Source: k8s.io/apiserver v0.32 pkg/endpoints/handlers/patch.go (applyJSPatch:
    kjson.UnmarshalStrict), sigs.k8s.io/json internal/golang/encoding/json/decode.go (object:
    the strict error saved as each key is read)."""
    await create_configmap(module_api, "jp-repeat-order")
    status, _, warnings = await send(
        module_api, "PATCH", f"{NS}/configmaps/jp-repeat-order",
        b'[{"op":"replace","path":"/data/a","value":"2","foo":1,"op":"replace"}]',
        content_type=JSON_PATCH)
    assert (status, warnings) == (200, ['json patch unknown field "[0].foo"',
                                        'json patch duplicate field "[0].op"'])


async def test_a_strict_json_patch_lists_its_own_problems_before_the_objects(
        module_api: API) -> None:
    """Rule: under Strict the same problems are one 422 on field "patch", the patch's first.
    Source: k8s.io/apiserver v0.32 pkg/endpoints/handlers/patch.go (applyPatchToCurrentObject:
    NewInvalid(..., field.Invalid(field.NewPath("patch"), ..., NewStrictDecodingError(...))))."""
    await create_configmap(module_api, "jp-strict")
    status, out = await module_api.patch(
        f"{NS}/configmaps/jp-strict?fieldValidation=Strict", None, JSON_PATCH,
        raw=b'[{"op":"add","path":"/bar","value":1,"foo":1}]')
    assert (status, out["reason"], out["details"]["causes"][0]["field"]) == (
        422, "Invalid", "patch")
    assert out["message"].endswith(
        ': strict decoding error: json patch unknown field "[0].foo", unknown field "bar"')


async def test_a_merge_patchs_repeated_unknown_key_is_a_duplicate_then_unknown(
        module_api: API) -> None:
    """Rule: a merge patch is decoded strictly into a map, where every repeated key is a
    duplicate; the patched object's unknown fields come after, so a repeated unknown key is
    reported twice, as the patch's duplicate and as the object's unknown field.
    Source: k8s.io/apiserver v0.32 pkg/endpoints/handlers/patch.go (applyJSPatch,
    MergePatchType: kjson.UnmarshalStrict into map[string]interface{};
    applyPatchToCurrentObject: append(appliedStrictErrs, strictError.Errors()...))."""
    await create_configmap(module_api, "mp-strict-warn")
    status, _, warnings = await send(module_api, "PATCH", f"{NS}/configmaps/mp-strict-warn",
                                     b'{"foo":1,"foo":2}', content_type=MERGE)
    assert (status, warnings) == (200, ['duplicate field "foo"', 'unknown field "foo"'])
