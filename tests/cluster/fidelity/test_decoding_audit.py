"""How request bodies of built-in kinds are decoded, as kube-apiserver 1.32 decodes them.

A JSON body (POST, PUT) is decoded by k8s.io/apimachinery runtime/serializer/json straight
into the Go struct with sigs.k8s.io/json, whose literalStore reads an integer field with
strconv.ParseInt of the literal as written (internal/golang/encoding/json/decode.go): ``3.0``
and ``1e2`` are no integers there. The JSON and merge patches keep each value's literal
(evanphx/json-patch's lazyNode holds it raw, merge.go mergeDocs), so their result is refused
the same way, as patch.go's 422 on field ``patch``. A YAML body goes through sigs.k8s.io/yaml's
YAMLToJSON first, which writes the float64 3 back as ``3``, and a strategic merge patch's
result is converted by runtime.DefaultUnstructuredConverter, which takes an integral float
(converter.go fromUnstructured): both accept ``3.0``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.cluster.fidelity.builtin_server import Kube
from tests.waiting import wait_for

APPS = "/apis/apps/v1/namespaces/default/deployments"
PODS = "/api/v1/namespaces/default/pods"
JSON_PATCH = "application/json-patch+json"
MERGE = "application/merge-patch+json"
SMP = "application/strategic-merge-patch+json"
YAML = "application/yaml"


def _send(kube: Kube, method: str, path: str, raw: str,
          content_type: str = "application/json") -> tuple[int, Any]:
    resp: httpx.Response = kube.http.request(method, path, content=raw.encode(),
                                             headers={"Content-Type": content_type})
    return resp.status_code, resp.json()


def _deployment(name: str, replicas: str = "1", strategy: str = "") -> str:
    return ('{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"NAME"},'
            '"spec":{"replicas":REPLICAS,STRATEGY"selector":{"matchLabels":{"a":"b"}},'
            '"template":{"metadata":{"labels":{"a":"b"}},'
            '"spec":{"containers":[{"name":"c","image":"i"}]}}}}').replace(
        "NAME", name).replace("REPLICAS", replicas).replace("STRATEGY", strategy)


@pytest.fixture
def deployment(kube: Kube, request: pytest.FixtureRequest) -> Iterator[str]:
    """A Deployment of this test's own name, deleted after it."""
    name = "decode-" + request.node.name.split("[")[0].removeprefix("test_")[:40].replace(
        "_", "-").rstrip("-")
    status, out = _send(kube, "POST", APPS, _deployment(name))
    assert status == 201, out
    yield name
    kube.http.delete(f"{APPS}/{name}")


@pytest.mark.parametrize("literal", ["3.0", "1e2", "3.50", "-0.0"])
def test_a_float_literal_in_an_integer_field_is_refused_on_create_and_update(
        kube: Kube, deployment: str, literal: str) -> None:
    """sigs.k8s.io/json decode.go literalStore: an int32 field takes what strconv.ParseInt
    takes, the UnmarshalTypeError quoting the literal as sent; create.go and update.go answer
    it through transformDecodeError (handlers/rest.go) as a 400."""
    expected = ('Deployment in version "v1" cannot be handled as a Deployment: json: cannot '
                f"unmarshal number {literal} into Go struct field DeploymentSpec.spec.replicas "
                "of type int32")
    status, out = _send(kube, "POST", APPS, _deployment(deployment + "-new", literal))
    assert (status, out["reason"], out["message"]) == (400, "BadRequest", expected)

    status, current = kube.call("GET", f"{APPS}/{deployment}")
    text = httpx.Response(200, json=current).text.replace('"replicas":1', f'"replicas":{literal}',
                                                           1)
    status, out = _send(kube, "PUT", f"{APPS}/{deployment}", text)
    assert (status, out["message"]) == (400, expected)

    status, out = _send(kube, "PUT", f"{APPS}/{deployment}/scale",
                        '{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":'
                        f'"{deployment}"}},"spec":{{"replicas":{literal}}}}}')
    assert (status, out["message"]) == (400, 'Scale in version "v1" cannot be handled as a '
                                             "Scale: json: cannot unmarshal number "
                                             f"{literal} into Go struct field ScaleSpec.spec."
                                             "replicas of type int32")
    status, stored = kube.call("GET", f"{APPS}/{deployment}")
    assert stored["spec"]["replicas"] == 1


@pytest.mark.parametrize("content_type", [MERGE, JSON_PATCH])
def test_a_float_literal_patched_into_an_integer_field_is_the_patch_422(
        kube: Kube, deployment: str, content_type: str) -> None:
    """handlers/patch.go jsonPatcher.applyPatchToCurrentObject: the patched JSON keeps the
    patch's literal (json-patch lazyNode), and its decoding error is a 422 Invalid on field
    ``patch``; on /scale as well."""
    body = ('{"spec":{"replicas":1e2}}' if content_type == MERGE
            else '[{"op":"replace","path":"/spec/replicas","value":1e2}]')
    for path, struct in ((f"{APPS}/{deployment}", "DeploymentSpec"),
                         (f"{APPS}/{deployment}/scale", "ScaleSpec")):
        status, out = _send(kube, "PATCH", path, body, content_type)
        assert (status, out["reason"]) == (422, "Invalid"), out
        cause = out["details"]["causes"][0]
        assert cause["field"] == "patch"
        assert cause["message"].endswith(
            f"json: cannot unmarshal number 1e2 into Go struct field {struct}.spec.replicas "
            "of type int32"), cause
    status, stored = kube.call("GET", f"{APPS}/{deployment}")
    assert stored["spec"]["replicas"] == 1


def test_an_integral_float_via_yaml_or_strategic_merge_patch_is_its_integer(
        kube: Kube, deployment: str) -> None:
    """sigs.k8s.io/yaml YAMLToJSON re-encodes go-yaml's float64 3 as ``3`` before the JSON
    decoder reads it; the strategic merge patch's result map is converted by
    runtime/converter.go, which turns an integral float64 into the int field."""
    status, out = _send(kube, "PATCH", f"{APPS}/{deployment}", '{"spec":{"replicas":3.0}}', SMP)
    assert (status, out["spec"]["replicas"]) == (200, 3), out
    status, out = _send(kube, "POST", APPS, (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: NAME-yaml}\n"
        "spec:\n  replicas: 2.0\n  selector: {matchLabels: {a: b}}\n"
        "  template:\n    metadata: {labels: {a: b}}\n"
        "    spec: {containers: [{name: c, image: i}]}\n").replace("NAME", deployment), YAML)
    try:
        assert (status, out["spec"]["replicas"]) == (201, 2), out
    finally:
        kube.http.delete(f"{APPS}/{deployment}-yaml")


@pytest.mark.parametrize(("value", "sent"), [("1.5", "number 1.5"), ("3.0", "number 3.0"),
                                             ("true", "bool"), ("2147483648",
                                                                "number 2147483648"),
                                             ("[1]", "array")])
def test_int_or_string_takes_what_an_int32_takes(kube: Kube, deployment: str, value: str,
                                                 sent: str) -> None:
    """apimachinery util/intstr/intstr.go UnmarshalJSON: a value not quoted is
    json.Unmarshal'd into IntVal, an int32; the outer decoder gives that UnmarshalTypeError
    the field's context (sigs.k8s.io/json decode.go addErrorContext)."""
    strategy = ('"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":VALUE}},'
                .replace("VALUE", value))
    status, out = _send(kube, "POST", APPS, _deployment(deployment + "-is", strategy=strategy))
    assert (status, out["message"]) == (
        400, 'Deployment in version "v1" cannot be handled as a Deployment: json: cannot '
             f"unmarshal {sent} into Go struct field RollingUpdateDeployment.spec.strategy."
             "rollingUpdate.maxSurge of type int32")


@pytest.mark.parametrize("value", ["true", "{}", "[]"])
def test_a_quantity_that_is_no_number_or_string_is_the_quantity_format_error(
        kube: Kube, value: str) -> None:
    """apimachinery pkg/api/resource/quantity.go UnmarshalJSON hands any unquoted value to
    ParseQuantity, whose ErrFormatWrong is the decoder's error as is."""
    status, out = _send(kube, "POST", PODS, (
        '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"decode-quantity"},"spec":'
        '{"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":VALUE}}}]}}')
        .replace("VALUE", value))
    assert (status, out["message"]) == (
        400, 'Pod in version "v1" cannot be handled as a Pod: quantities must match the '
             "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


def test_an_integer_literal_of_any_length_is_refused_quoting_it(kube: Kube) -> None:
    """sigs.k8s.io/json reads a number of any length (checkValid has no bound); into an int32
    field strconv.ParseInt fails and the literal is quoted whole (decode.go literalStore).
    Never a 500, whatever the number's size."""
    literal = "9" * 5000
    status, out = _send(kube, "POST", APPS, _deployment("decode-long-number", literal))
    assert (status, out["message"]) == (
        400, 'Deployment in version "v1" cannot be handled as a Deployment: json: cannot '
             f"unmarshal number {literal} into Go struct field DeploymentSpec.spec.replicas "
             "of type int32")


def test_invalid_utf8_in_a_json_string_is_one_replacement_character_a_byte(
        kube: Kube) -> None:
    """sigs.k8s.io/json decode.go unquoteBytes: invalid UTF-8 in a string is not an error,
    each bad byte becomes U+FFFD (utf8.DecodeRune's RuneError of size 1)."""
    cms = "/api/v1/namespaces/default/configmaps"
    resp = kube.http.post(cms, content=b'{"apiVersion":"v1","kind":"ConfigMap","metadata":'
                                       b'{"name":"decode-utf8"},"data":{"a":"x\xff\xe2\x82y"}}',
                          headers={"Content-Type": "application/json"})
    try:
        assert resp.status_code == 201, resp.text
        assert resp.json()["data"]["a"] == "x\ufffd\ufffd\ufffdy"
    finally:
        kube.http.delete(f"{cms}/decode-utf8")


def test_yaml_reads_numbers_and_documents_as_go_yaml_v2(kube: Kube) -> None:
    """sigs.k8s.io/yaml's YAMLToJSON: go-yaml v2 (resolve.go yamlStyleFloat) reads ``1e2``
    as a float, so it is 100 in an int32 field and a number no string field takes; its
    Unmarshal decodes the stream's first document only (yaml.go unmarshal: one p.parse())."""
    status, out = _send(kube, "POST", APPS, (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: decode-yaml-float}\n"
        "spec:\n  replicas: 1e1\n  selector: {matchLabels: {a: b}}\n"
        "  template:\n    metadata: {labels: {a: b}}\n"
        "    spec: {containers: [{name: c, image: i}]}\n"
        "---\nkind: Ignored\n"), YAML)
    try:
        assert (status, out["spec"]["replicas"]) == (201, 10), out
    finally:
        kube.http.delete(f"{APPS}/decode-yaml-float")
    status, out = _send(kube, "POST", "/api/v1/namespaces/default/configmaps",
                        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: decode-yaml-note\n"
                        "  annotations: {a: 1e2}\n", YAML)
    assert (status, out["message"]) == (
        400, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot '
             "unmarshal number into Go struct field ObjectMeta.metadata.annotations.a of type "
             "string")


@pytest.mark.parametrize(("data", "offset"), [("abc", 0), ("ab$c", 2), ("YQ=", 3),
                                              ("YQ==x", 4), ("Y===", 1)])
def test_secret_data_that_is_not_base64_names_go_s_offset(kube: Kube, data: str,
                                                          offset: int) -> None:
    """encoding/base64 base64.go decodeQuantum (StdEncoding, padding wanted): the
    CorruptInputError offset of a cut quantum is where the quantum began, of a bad byte
    that byte, of missing or trailing padding the end or the garbage."""
    status, out = _send(kube, "POST", "/api/v1/namespaces/default/secrets",
                        '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"decode-b64"},'
                        f'"data":{{"a":"{data}"}}}}')
    assert (status, out["message"]) == (
        400, 'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at '
             f"input byte {offset}")


def test_a_custom_resource_takes_an_integral_float_as_the_integer_go_writes(
        kube: Kube) -> None:
    """A custom resource is decoded as unstructured JSON (sigs.k8s.io/json
    UnmarshalCaseSensitivePreserveInts: ``3.0`` is a float64), which the structural schema's
    type check takes as an integer when integral (kube-openapi validate/type.go
    ``isFloatInt``, swag.IsFloat64AJSONInteger) and encoding/json writes back as ``3``; a
    fraction is the schema's "must be of type integer"."""
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    status, out = kube.call("POST", crds, {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "decodings.audit.example.com"},
        "spec": {"group": "audit.example.com", "scope": "Namespaced",
                 "names": {"plural": "decodings", "kind": "Decoding"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                     "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                         "type": "object", "properties": {"n": {"type": "integer"}}}}}}}]}})
    assert status == 201, out
    path = "/apis/audit.example.com/v1/namespaces/default/decodings"
    try:
        asyncio.run(wait_for(lambda: kube.http.get(path).status_code == 200))
        for name, literal, shown in (("three", "3.0", b'"n":3}'), ("hundred", "1e2", b'"n":100}')):
            resp = kube.http.post(path, content=(
                '{"apiVersion":"audit.example.com/v1","kind":"Decoding","metadata":{"name":"'
                + name + '"},"spec":{"n":' + literal + "}}").encode(),
                headers={"Content-Type": "application/json"})
            assert resp.status_code == 201, resp.text
            assert shown in kube.http.get(f"{path}/{name}").content
        status, out = _send(kube, "POST", path, '{"apiVersion":"audit.example.com/v1","kind":'
                                                '"Decoding","metadata":{"name":"half"},'
                                                '"spec":{"n":3.5}}')
        assert (status, out["details"]["causes"][0]["message"]) == (
            422, 'Invalid value: "number": spec.n in body must be of type integer: "number"')
    finally:
        kube.http.delete(f"{crds}/decodings.audit.example.com")


@pytest.mark.parametrize(("value", "problem"), [
    ("yesterday", 'as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"'),
    ("2024-01-02", 'as "2006-01-02T15:04:05Z07:00": cannot parse "" as "T"'),
    ("2024-01-02 10:00:00Z", 'as "2006-01-02T15:04:05Z07:00": cannot parse " 10:00:00Z" as '
                             '"T"'),
    ("2024-01-02T10:00:00+0100", 'as "2006-01-02T15:04:05Z07:00": cannot parse "+0100" as '
                                 '"Z07:00"'),
    ("2024-13-02T10:00:00Z", ": month out of range"),
    ("2024-02-30T10:00:00Z", ": day out of range"),
    ("2024-01-02T10:00:00Zx", ': extra text: "x"'),
])
def test_a_time_go_cannot_parse_is_its_parse_error(kube: Kube, value: str,
                                                   problem: str) -> None:
    """metav1.Time UnmarshalJSON (apimachinery pkg/apis/meta/v1/time.go) is
    time.Parse(time.RFC3339, ...), whose ParseError names the element it stopped at, or the
    field out of range (Go src/time/format.go parse)."""
    status, out = _send(kube, "POST", "/api/v1/namespaces/default/configmaps",
                        '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"decode-time",'
                        f'"creationTimestamp":"{value}"}}}}')
    assert (status, out["message"]) == (
        400, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: parsing time '
             f'"{value}"{" " if problem.startswith("as") else ""}{problem}')


_MICRO = "2006-01-02T15:04:05.000000Z07:00"


@pytest.mark.parametrize(("value", "problem"), [
    ("2024-01-02T10:00:00Z", f'as "{_MICRO}": cannot parse "Z" as ".000000"'),
    ("2024-01-02T10:00:00.12345Z", f'as "{_MICRO}": cannot parse ".12345Z" as ".000000"'),
    ("2024-01-02T10:00:00.1234567Z", f'as "{_MICRO}": cannot parse "7Z" as "Z07:00"'),
    ("2024-13-02T10:00:00.000000Z", ": month out of range"),
    ("2024-02-30T10:00:00.000000+01:00", ": day out of range"),
])
def test_a_micro_time_go_cannot_parse_is_its_parse_error(kube: Kube, value: str,
                                                         problem: str) -> None:
    """metav1.MicroTime UnmarshalJSON (apimachinery pkg/apis/meta/v1/micro_time.go) is
    time.Parse(RFC3339Micro, ...): exactly six fraction digits (format.go stdFracSecond0),
    then the same range checks as any layout."""
    status, out = _send(kube, "POST", "/apis/events.k8s.io/v1/namespaces/default/events",
                        '{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":'
                        '{"name":"decode-micro"},"reportingController":"a.io/b",'
                        '"reportingInstance":"i","action":"A","reason":"R","type":"Normal",'
                        f'"regarding":{{"kind":"Pod","name":"p"}},"eventTime":"{value}"}}')
    assert (status, out["message"]) == (
        400, 'Event in version "v1" cannot be handled as a Event: parsing time '
             f'"{value}"{" " if problem.startswith("as") else ""}{problem}')


def test_a_micro_time_with_an_offset_is_written_back_in_utc(kube: Kube) -> None:
    """A MicroTime Go parses is written back in UTC with six digits (micro_time.go
    MarshalJSON: ``UTC().Format(RFC3339Micro)``), a comma before the fraction taken as a
    period."""
    path = "/apis/events.k8s.io/v1/namespaces/default/events"
    status, out = _send(kube, "POST", path,
                        '{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":'
                        '{"name":"decode-micro-utc"},"reportingController":"a.io/b",'
                        '"reportingInstance":"i","action":"A","reason":"R","type":"Normal",'
                        '"regarding":{"kind":"Pod","name":"p"},'
                        '"eventTime":"2024-01-02T11:00:00,123456+01:00"}')
    try:
        assert (status, out["eventTime"]) == (201, "2024-01-02T10:00:00.123456Z"), out
    finally:
        kube.http.delete(f"{path}/decode-micro-utc")
