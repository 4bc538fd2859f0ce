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

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.cluster.fidelity.builtin_server import Kube

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
