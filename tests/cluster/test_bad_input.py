"""Bad input found by fuzzing: each answered with the Status kube-apiserver gives, never a 500,
and never an object stored that later reads cannot serve."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest

from tests.cluster.conftest import API
from tests.waiting import wait_for

NS = "/api/v1/namespaces/default"
APPS = "/apis/apps/v1/namespaces/default"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
TEMPLATE = {"metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
WORKLOADS = {
    "statefulsets": (APPS, {"apiVersion": "apps/v1", "kind": "StatefulSet",
                            "metadata": {"name": "w"},
                            "spec": {"selector": {"matchLabels": {"a": "b"}},
                                     "serviceName": "w", "template": TEMPLATE}}),
    "deployments": (APPS, {"apiVersion": "apps/v1", "kind": "Deployment",
                           "metadata": {"name": "w"},
                           "spec": {"selector": {"matchLabels": {"a": "b"}},
                                    "template": TEMPLATE}}),
    "replicationcontrollers": (NS, {"apiVersion": "v1", "kind": "ReplicationController",
                                    "metadata": {"name": "w"},
                                    "spec": {"selector": {"a": "b"}, "template": TEMPLATE}}),
}
STRUCTS = {"statefulsets": "StatefulSetSpec", "deployments": "DeploymentSpec",
           "replicationcontrollers": "ReplicationControllerSpec"}
# number literals that no int32 field takes: beyond int32, beyond int64, a float64 (quoted as
# sent: the JSON and merge patches keep the literal, json-patch's lazyNode holding it raw)
OVERFLOWING = [("2147483648", "2147483648"), ("18446744073709551616", "18446744073709551616"),
               ("1e308", "1e308")]


@pytest.mark.parametrize("resource", sorted(WORKLOADS))
@pytest.mark.parametrize(("literal", "quoted"), OVERFLOWING)
async def test_replicas_beyond_int32_are_refused_on_every_write_path(
        api: API, resource: str, literal: str, quoted: str) -> None:
    """Built-in kinds decode into Go structs: a number a Go int32 cannot hold fails
    encoding/json's literalStore ("json: cannot unmarshal number <literal> into Go struct field
    <Struct>.<path> of type int32"). On create and update that is transformDecodeError's 400
    (apiserver endpoints/handlers/rest.go); on a patch, the patched object failing to decode is
    a 422 on field "patch" (handlers/patch.go, applyPatchToCurrentObject); and /scale decodes
    an autoscaling/v1 Scale the same way. Nothing is stored, so the type stays readable."""
    base, obj = WORKLOADS[resource]
    coll = f"{base}/{resource}"
    status, _ = await api.post(coll, obj)
    assert status == 201
    path = f"{coll}/w"
    body = f'{{"spec":{{"replicas":{literal}}}}}'.encode()

    status, out = await api.request("PATCH", f"{path}/scale", raw=body, content_type=MERGE)
    assert status == 422, out
    assert out["details"]["causes"][0]["field"] == "patch"
    assert (f"json: cannot unmarshal number {quoted} into Go struct field ScaleSpec.spec."
            "replicas of type int32") in out["message"]

    status, out = await api.request(
        "PATCH", f"{path}/scale", content_type=JSON_PATCH,
        raw=f'[{{"op":"replace","path":"/spec/replicas","value":{literal}}}]'.encode())
    assert status == 422, out

    status, out = await api.request("PATCH", path, raw=body, content_type=MERGE)
    assert status == 422, out
    assert (f"cannot unmarshal number {quoted} into Go struct field {STRUCTS[resource]}.spec."
            "replicas of type int32") in out["message"]

    status, scale = await api.get(f"{path}/scale")
    assert status == 200
    scale["spec"]["replicas"] = 2**31
    status, out = await api.put(f"{path}/scale", scale)
    assert status == 400, out
    assert out["message"] == ('Scale in version "v1" cannot be handled as a Scale: json: cannot '
                              "unmarshal number 2147483648 into Go struct field ScaleSpec.spec."
                              "replicas of type int32")

    status, current = await api.get(path)
    current["spec"]["replicas"] = 2**31
    status, out = await api.put(path, current)
    assert status == 400, out
    assert out["reason"] == "BadRequest"
    assert f"{STRUCTS[resource]}.spec.replicas of type int32" in out["message"]

    status, out = await api.request(
        "PATCH", f"{path}?fieldManager=m&force=true", content_type="application/apply-patch+yaml",
        raw=f"apiVersion: {obj['apiVersion']}\nkind: {obj['kind']}\nmetadata: {{name: w}}\n"
            f"spec: {{replicas: {literal}}}\n".encode())
    assert status == 400, out

    # nothing was stored: every read of the type still answers
    for read in (coll, path, f"{path}/scale", f"{coll}?watch=false"):
        status, out = await api.get(read)
        assert status == 200, (read, out)
    status, out = await api.get(path)
    assert out["spec"].get("replicas", 1) == 1


async def test_integer_fields_keep_their_int64_range(api: API) -> None:
    """An int64 field takes what int64 holds and no more (encoding/json literalStore)."""
    pod: dict[str, Any] = {"metadata": {"name": "p"},
                           "spec": {"terminationGracePeriodSeconds": 2**63 - 1,
                                    "containers": [{"name": "c", "image": "i"}]}}
    status, out = await api.post(f"{NS}/pods?dryRun=All", pod)
    assert status == 201, out
    pod["spec"]["terminationGracePeriodSeconds"] = 2**63
    status, out = await api.post(f"{NS}/pods", pod)
    assert status == 400
    assert out["message"].endswith(
        "json: cannot unmarshal number 9223372036854775808 into Go struct field "
        "PodSpec.spec.terminationGracePeriodSeconds of type int64")


async def test_the_store_refuses_an_object_it_cannot_encode(api: API) -> None:
    """What cannot be encoded is never stored (etcd3's store encodes before it writes): the
    write fails whole, and later reads of the type still work."""
    from setpoint.machinery.errors import StatusError

    store = api.cluster.api.store
    with pytest.raises(StatusError) as caught:
        store.put("/configmaps", {"metadata": {"name": "x", "namespace": "default"},
                                  "data": {"a": 2**64}})
    assert caught.value.code == 500
    assert store.get("/configmaps", "default", "x") is None
    status, _ = await api.get(f"{NS}/configmaps")
    assert status == 200


@pytest.mark.parametrize(("body", "message"), [
    (b'{"spec": 5}', 'TokenRequest in version "v1" cannot be handled as a TokenRequest: json: '
     "cannot unmarshal number into Go struct field TokenRequest.spec of type "
     "v1.TokenRequestSpec"),
    (b'{"spec": {"audiences": true}}', "json: cannot unmarshal bool into Go struct field "
     "TokenRequestSpec.spec.audiences of type []string"),
    # (Go quotes the literal as sent: sigs.k8s.io/json decode.go literalStore)
    (b'{"spec": {"expirationSeconds": 1e30}}', "json: cannot unmarshal number 1e30 into Go "
     "struct field TokenRequestSpec.spec.expirationSeconds of type int64"),
    (b"[1]", "the object provided is unrecognized (must be of type TokenRequest): couldn't get "
     "version/kind; json parse error: json: cannot unmarshal array into Go value of type "
     'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string '
     '"json:\\"kind,omitempty\\"" }'),
])
async def test_token_request_of_the_wrong_shape_is_a_bad_request(api: API, body: bytes,
                                                                 message: str) -> None:
    """The create handler decodes a TokenRequest into its Go type first (handlers/create.go)."""
    status, out = await api.request("POST", f"{NS}/serviceaccounts/default/token", raw=body)
    assert (status, out["reason"]) == (400, "BadRequest"), out
    assert out["message"].endswith(message), out["message"]


@pytest.mark.parametrize(("path", "body", "detail"), [
    (f"{NS}/configmaps", b'{"kind": ["List"], "apiVersion": "v1", "metadata": {}}',
     "json: cannot unmarshal array into Go struct field .kind of type string "
     '({"kind": ["List"], "apiVersion ...)'),
    ("/apis/networking.k8s.io/v1/namespaces/default/ingresses",
     b'{"apiVersion": {"a": 1}, "kind": 5}',
     "json: cannot unmarshal object into Go struct field .apiVersion of type string "
     '({"apiVersion": {"a": 1}, "kind ...)'),
])
async def test_an_apiversion_or_kind_that_is_no_string_fails_the_serializer(
        api: API, path: str, body: bytes, detail: str) -> None:
    """The json serializer reads apiVersion and kind into strings first (runtime/serializer/
    json/meta.go SimpleMetaFactory.Interpret); create.go's transformDecodeError frames its
    error with the body's first 30 bytes (rest.go summarizeData)."""
    status, out = await api.request("POST", path, raw=body)
    assert (status, out["reason"]) == (400, "BadRequest"), out
    kind = "ConfigMap" if "configmaps" in path else "Ingress"
    assert out["message"] == (f"the object provided is unrecognized (must be of type {kind}): "
                              f"couldn't get version/kind; json parse error: {detail}")


async def test_a_scale_body_of_another_kind_is_refused_before_anything_is_read(
        api: API) -> None:
    """A Scale PUT decodes its body into an autoscaling/v1 Scale first (handlers/update.go,
    then create.go transformDecodeError): a body of another kind is a 400 before the store
    reads the parent or its resourceVersion is parsed (store.go Update)."""
    deployments = "/apis/apps/v1/namespaces/default/deployments"
    body = orjson.dumps({"metadata": {"name": "absent", "resourceVersion": "a"},
                         "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    status, out = await api.request("PUT", f"{deployments}/absent/scale", raw=body)
    assert (status, out["reason"]) == (400, "BadRequest"), out
    assert out["message"] == (
        'SelfSubjectReview in version "v1" cannot be handled as a Scale: converting '
        "(v1.SelfSubjectReview) to (autoscaling.Scale): unknown conversion")


async def test_token_request_longer_than_2_to_the_32_seconds_is_invalid(api: API) -> None:
    """pkg/apis/authentication/validation/validation.go, ValidateTokenRequest."""
    status, out = await api.post(f"{NS}/serviceaccounts/default/token",
                                 {"spec": {"expirationSeconds": 2**40}})
    assert status == 422, out
    assert out["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.expirationSeconds",
        "message": "Invalid value: 1099511627776: may not specify a duration larger than 2^32 "
                   "seconds"}]


async def test_delete_options_of_any_group_version_are_still_taken(api: API) -> None:
    """Per-group DeleteOptions stay accepted (the compatibility handlers/delete.go keeps)."""
    for version in ("v1", "apps/v1", "meta.k8s.io/v1"):
        await api.post(f"{NS}/configmaps", {"metadata": {"name": "cm"}})
        status, out = await api.delete(f"{NS}/configmaps/cm", {
            "kind": "DeleteOptions", "apiVersion": version, "gracePeriodSeconds": 0})
        assert status == 200, (version, out)


async def test_access_review_with_a_string_spec_is_a_bad_request(api: API) -> None:
    status, out = await api.request(
        "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", raw=b'{"spec": "x"}')
    assert (status, out["reason"]) == (400, "BadRequest"), out
    assert out["message"] == (
        'SelfSubjectAccessReview in version "v1" cannot be handled as a SelfSubjectAccessReview:'
        " json: cannot unmarshal string into Go struct field SelfSubjectAccessReview.spec of "
        "type v1.SelfSubjectAccessReviewSpec")


async def test_null_in_a_list_of_structs_decodes_as_the_zero_struct(api: API) -> None:
    """encoding/json leaves a null slice element at the element's zero value: env: [null] is
    an EnvVar with no name, which validation then judges (never a server error)."""
    pod = {"metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i", "env": [None]}]}}
    status, out = await api.post(f"{NS}/pods", pod)
    assert status < 500, out
    status, _ = await api.get(f"{NS}/pods")
    assert status == 200


async def test_lone_surrogates_never_reach_a_header_or_break_an_answer(api: API) -> None:
    """Go's decoder turns an unpaired surrogate escape into U+FFFD, in keys as in values; a
    warning naming such a field is quoted as strconv.Quote does."""
    status, out = await api.request(
        "POST", f"{NS}/configmaps?fieldValidation=Warn",
        raw=b'{"metadata": {"name": "s"}, "bogus\\ud800": 1, "data": {"\\udfff": "\\ud800"}}')
    assert status in (201, 422), out
    status, out = await api.request(
        "PATCH", f"{NS}/configmaps/s", content_type=MERGE,
        raw=b'{"metadata": {"labels": {"\\ud800": "x"}}}')
    assert status < 500, out


async def test_apply_with_warn_and_an_unknown_field_is_the_typed_conversion_error(
        api: API) -> None:
    """kube-apiserver converts an apply configuration to its typed value before fieldValidation
    is consulted; an undeclared field is structured-merge-diff's plain error, a 500 without a
    reason (k8s.io/apimachinery pkg/util/managedfields/internal/structuredmerge.go), not a
    warning. See tests/cluster/fidelity/test_field_validation.py."""
    raw = (b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, '
           b'"bogus": 1, "data": {"x": "y"}}')
    async with api.session.request(
            "PATCH", api.cluster.url + f"{NS}/configmaps/a?fieldManager=m&fieldValidation=Warn",
            data=raw, ssl=api.ssl,
            headers={"Content-Type": "application/apply-patch+yaml"}) as resp:
        assert resp.status == 500
        assert "Warning" not in resp.headers
        assert (await resp.json())["message"] == (
            "failed to create typed patch object (/a; /v1, Kind=ConfigMap): .bogus: field not "
            "declared in schema")


async def test_warnings_are_deduplicated_and_bounded(api: API) -> None:
    """50,000 duplicate keys of a created object make one warning (the recorder dedupes by
    text); 5,000 distinct unknown fields stay within the recorder's 4096 runes, cut to 256
    runes each (k8s.io/apiserver/pkg/endpoints/filters/warning.go)."""
    dupes = b",".join(b'"a": "%d"' % i for i in range(50_000))
    raw = (b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}, "data": {'
           + dupes + b"}}")
    async with api.session.request(
            "POST", api.cluster.url + f"{NS}/configmaps?fieldValidation=Warn",
            data=raw, ssl=api.ssl,
            headers={"Content-Type": "application/json"}) as resp:
        assert resp.status == 201
        assert resp.headers.getall("Warning") == ['299 - "duplicate field \\"data.a\\""']
    unknown = b",".join(b'"field%05d": 1' % i for i in range(5_000))
    raw = b'{"metadata": {"name": "u"}, ' + unknown + b"}"
    # (aiohttp refuses answers with more than 128 headers; the recorder allows about 160)
    async with httpx.AsyncClient(verify=api.ssl, headers=dict(api.session.headers)) as http:
        created = await http.post(api.cluster.url + f"{NS}/configmaps", content=raw,
                                  headers={"Content-Type": "application/json"})
    assert created.status_code == 201
    warnings = created.headers.get_list("Warning")
    # every warning cut to 256 runes once 4096 were written; none after that
    assert warnings[0] == '299 - "unknown field \\"field00000\\""'
    assert 100 < len(warnings) < 200
    assert sum(len(w) for w in warnings) < 4096 + 256 + len(warnings) * 12


WIDGETS_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                 "openAPIV3Schema": {"type": "object",
                                     "x-kubernetes-preserve-unknown-fields": True}}}]}}
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"


@pytest.mark.parametrize(("metadata", "problem"), [
    ({"name": ["w"]}, "array into Go struct field ObjectMeta.name of type string"),
    ({"name": 5}, "number into Go struct field ObjectMeta.name of type string"),
    ({"name": "w", "labels": ["x"]},
     "array into Go struct field ObjectMeta.labels of type map[string]string"),
    ({"name": "w", "annotations": {"a": 1}},
     "number into Go struct field ObjectMeta.annotations.a of type string"),
])
async def test_custom_resource_metadata_of_the_wrong_type_is_a_bad_request(
        api: API, metadata: dict[str, object], problem: str) -> None:
    """The CRD handler's decoder round-trips a custom resource's metadata through a Go
    ObjectMeta (apiextensions-apiserver pkg/apiserver/schema/objectmeta/coerce.go,
    GetObjectMetaWithOptions, malformed fields kept for request bodies), so a value of the
    wrong JSON type is transformDecodeError's 400 (apiserver endpoints/handlers/rest.go), for
    a create and a replace alike. It was a 500 (a list name reached the name validator)."""
    assert (await api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                           WIDGETS_CRD))[0] == 201

    async def served() -> bool:
        return (await api.get("/apis/example.com/v1"))[0] == 200

    await wait_for(served)
    status, out = await api.post(WIDGETS, {"apiVersion": "example.com/v1", "kind": "Widget",
                                           "metadata": metadata})
    assert status == 400, out
    assert out["message"] == ('Widget in version "v1" cannot be handled as a Widget: '
                              f"json: cannot unmarshal {problem}")
    assert (await api.post(WIDGETS, {"apiVersion": "example.com/v1", "kind": "Widget",
                                     "metadata": {"name": "w"}}))[0] == 201
    if "ObjectMeta.name " not in problem:
        status, out = await api.request("PUT", f"{WIDGETS}/w", {
            "apiVersion": "example.com/v1", "kind": "Widget", "metadata": metadata})
        assert status == 400, out
        assert problem in out["message"]
    assert (await api.get(WIDGETS))[0] == 200


async def test_apply_to_a_stored_object_missing_a_list_key_is_kube_apiservers_500(
        api: API) -> None:
    """ValidateServiceAccount (pkg/apis/core/validation/validation.go) checks only metadata,
    so a ServiceAccount whose ``secrets`` (a map list keyed by name) has an item without
    ``name`` is stored. Server-side apply then cannot make it a typed value:
    structuredMergeManager.Apply (k8s.io/apimachinery
    pkg/util/managedfields/internal/structuredmerge.go) returns "failed to create typed live
    object", with structured-merge-diff's words (typed/validate.go, typed/helpers.go), as a
    plain error: ErrorToAPIStatus makes it a 500 with no reason. The object stays readable."""
    status, _ = await api.post(f"{NS}/serviceaccounts", {
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "nameless"},
        "secrets": [{"namespace": "default"}]})
    assert status == 201
    status, body = await api.patch(
        f"{NS}/serviceaccounts/nameless?fieldManager=m",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "nameless"}},
        "application/apply-patch+yaml")
    assert (status, body) == (500, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "failed to create typed live object (default/nameless; /v1, "
                   "Kind=ServiceAccount): .secrets: element 0: associative list with keys has "
                   "an element that omits key field \"name\" (and doesn't have default value)",
        "code": 500})
    status, body = await api.get(f"{NS}/serviceaccounts/nameless")
    assert status == 200 and body["secrets"] == [{"namespace": "default"}]


async def test_a_condition_without_type_is_stored_with_gos_empty_type(api: API) -> None:
    """ValidateServiceStatusUpdate (pkg/apis/core/validation/validation.go) checks metadata
    and status.loadBalancer only, so a condition without ``type`` is accepted through
    /status; decoded into metav1.Condition (``Type string `json:"type"```, not omitempty) it
    is stored with ``type: ""``, so the key of the conditions map list is there and a later
    server-side apply builds its typed live object and succeeds."""
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
           "spec": {"ports": [{"port": 80}]}}
    status, _ = await api.post(f"{NS}/services", svc)
    assert status == 201
    status, patched = await api.patch(f"{NS}/services/svc/status",
                                      {"status": {"conditions": [{"status": "True"}]}},
                                      "application/merge-patch+json")
    assert status == 200
    [condition] = patched["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == ("", "True", "")
    status, body = await api.patch(f"{NS}/services/svc?fieldManager=m", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"}},
        "application/apply-patch+yaml")
    assert status == 200, body


@pytest.mark.parametrize("path", [f"{NS}/bindings", f"{NS}/pods/p/binding"])
async def test_a_null_binding_is_the_same_bad_request_on_both_binding_endpoints(
        api: API, path: str) -> None:
    """/bindings and pods/binding are the same storage (LegacyBindingREST hands its create to
    BindingREST, pkg/registry/core/pod/storage/storage.go) behind the same create handler's
    decoder (k8s.io/apiserver/pkg/endpoints/handlers/create.go): a body of JSON null, with
    or without a Content-Type, is the same 400 on both."""
    for content_type in ("application/json", ""):
        status, body = await api.request("POST", path, raw=b"null", content_type=content_type)
        assert (status, body["reason"], body["message"]) == (
            400, "BadRequest", "the object provided is unrecognized (must be of type Binding)")


async def test_a_finalize_body_of_the_wrong_shape_is_a_bad_request(api: API) -> None:
    """namespaces/finalize decodes its body as a Namespace like any update
    (pkg/registry/core/namespace/storage/storage.go FinalizeREST, served by the generic
    UpdateResource handler): a spec that is no object is a 400, not a 500 (found by the
    request fuzzer, seed 5)."""
    status, _ = await api.post("/api/v1/namespaces", {"metadata": {"name": "fin"}})
    assert status == 201
    status, answer = await api.put("/api/v1/namespaces/fin/finalize",
                                   {"apiVersion": "v1", "kind": "Namespace",
                                    "metadata": {"name": "fin"}, "spec": True})
    assert status == 400, answer
    assert answer == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'Namespace in version "v1" cannot be handled as a Namespace: json: cannot '
                   "unmarshal bool into Go struct field Namespace.spec of type v1.NamespaceSpec",
        "reason": "BadRequest", "code": 400}


async def test_yaml_binary_and_timestamp_scalars_decode_as_go_yaml_decodes_them(
        api: API) -> None:
    """goyaml.v2 decode.go ``scalar``: ``!!binary`` is base64 decoded into a Go string (made
    valid UTF-8 by encoding/json), a timestamp keeps its text; bad base64 is go-yaml's
    failf. PyYAML would have stored a name ``b'hello'`` and Python's datetime text."""
    body = (b"metadata: {name: !!binary aGVsbG8=}\n"
            b"data: {a: !!binary /w==, t: 2001-12-14t21:59:43.10-05:00}\n")
    status, created = await api.post(f"{NS}/configmaps", None, raw=body,
                                     content_type="application/yaml")
    assert status == 201, created
    assert created["metadata"]["name"] == "hello"
    assert created["data"] == {"a": "\ufffd", "t": "2001-12-14t21:59:43.10-05:00"}
    bad = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {a: !!binary ==}\n"
    status, refused = await api.post(f"{NS}/configmaps", None, raw=bad,
                                     content_type="application/yaml")
    assert status == 400
    assert refused["message"].startswith(
        "the object provided is unrecognized (must be of type ConfigMap): "
        "yaml: !!binary value contains invalid base64 data (")
    status, refused = await api.patch(f"{NS}/configmaps/b?fieldManager=m", None,
                                      "application/apply-patch+yaml", raw=bad)
    assert (status, refused["message"]) == (
        400, "error decoding YAML: error converting YAML to JSON: "
             "yaml: !!binary value contains invalid base64 data")
    assert (await api.get(f"{NS}/configmaps/b"))[0] == 404


async def test_each_unpaired_surrogate_escape_is_one_replacement_character(api: API) -> None:
    """sigs.k8s.io/json (encoding/json) decode.go ``unquoteBytes``: a ``\\uXXXX`` surrogate
    with no partner is written as one U+FFFD (a pair is one rune); a byte of invalid UTF-8
    is one U+FFFD each (``utf8.DecodeRune`` takes one byte of a broken sequence). The
    surrogate's three UTF-8 bytes must not become three, on create as on a merge patch."""
    raw = (b'{"metadata": {"name": "u", "annotations": {"lone": "\\ud800", '
           b'"reversed": "x\\udc00\\ud800y", "pair": "\\ud83d\\ude00", '
           b'"bytes": "\xe2\x82A\xff"}}}')
    status, created = await api.request("POST", f"{NS}/configmaps", raw=raw)
    assert status == 201, created
    assert created["metadata"]["annotations"] == {
        "lone": "\ufffd", "reversed": "x\ufffd\ufffdy", "pair": "\U0001f600",
        "bytes": "\ufffd\ufffdA\ufffd"}
    status, patched = await api.request(
        "PATCH", f"{NS}/configmaps/u", content_type=MERGE,
        raw=b'{"metadata": {"annotations": {"lone": "a\\udfffb"}}}')
    assert status == 200, patched
    assert patched["metadata"]["annotations"]["lone"] == "a\ufffdb"
    status, read = await api.get(f"{NS}/configmaps/u")
    assert status == 200
    assert read["metadata"]["annotations"] == {**created["metadata"]["annotations"],
                                               "lone": "a\ufffdb"}
