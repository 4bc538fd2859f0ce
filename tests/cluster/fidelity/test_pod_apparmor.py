"""A new pod's AppArmor annotations and fields, brought in step on create and validated, and
the other pod rules that read annotations, over HTTP.

Sources: kubernetes v1.32 pkg/registry/core/pod/strategy.go ``applyAppArmorVersionSkew``
(called by PrepareForCreate), ``appArmorAnnotationForField``, ``apparmorFieldForAnnotation``
(the warning it adds is ``metadata.annotations[<key>]: deprecated since v1.30; use the
"appArmorProfile" field instead``); pkg/apis/core/validation/validation.go (see the table).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import Kube

PODS = "/api/v1/namespaces/default/pods"
KEY = "container.apparmor.security.beta.kubernetes.io/"
DEPRECATED = 'deprecated since v1.30; use the "appArmorProfile" field instead'


def _create(kube: Kube, body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    resp = kube.http.post(PODS, json=body)
    assert resp.status_code == 201, resp.text
    # each header is 299 - "<text>", the text a Go-quoted string
    warnings = [json.loads(h.split(" ", 2)[2]) for h in resp.headers.get_list("warning")]
    return resp.json(), warnings


def _pod(name: str, annotations: dict[str, str] | None = None,
         pod_context: dict[str, Any] | None = None,
         containers: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers or [{"name": "c", "image": "i"}]}
    if pod_context is not None:
        spec["securityContext"] = pod_context
    return {"metadata": {"name": name, "annotations": annotations or {}}, "spec": spec}


def test_fields_are_copied_to_annotations(kube: Kube) -> None:
    """A container's field, else the pod's, becomes the container's annotation."""
    pod, warnings = _create(kube, _pod(
        "fields", pod_context={"appArmorProfile": {"type": "RuntimeDefault"}},
        containers=[{"name": "a", "image": "i"},
                    {"name": "b", "image": "i", "securityContext": {"appArmorProfile": {
                        "type": "Localhost", "localhostProfile": "prof"}}}]))
    annotations = pod["metadata"]["annotations"]
    assert annotations[KEY + "a"] == "runtime/default"
    assert annotations[KEY + "b"] == "localhost/prof"
    assert not [w for w in warnings if "apparmor" in w]


def test_annotations_are_copied_to_fields_with_a_warning(kube: Kube) -> None:
    """An annotation without a container field becomes the field (not when it repeats the
    pod's profile) and warns; an annotation with no valid field only warns."""
    pod, warnings = _create(kube, _pod(
        "annotations",
        annotations={KEY + "a": "localhost/prof", KEY + "b": "runtime/default"},
        pod_context={"appArmorProfile": {"type": "RuntimeDefault"}},
        containers=[{"name": n, "image": "i"} for n in ("a", "b")]))
    contexts = {c["name"]: c.get("securityContext") for c in pod["spec"]["containers"]}
    assert contexts["a"] == {"appArmorProfile": {"type": "Localhost",
                                                 "localhostProfile": "prof"}}
    assert contexts["b"] is None
    assert [w for w in warnings if "apparmor" in w] == [
        f"metadata.annotations[{KEY}a]: {DEPRECATED}"]
    pod, warnings = _create(kube, _pod("unnamed", annotations={KEY + "c": "localhost/"}))
    assert pod["spec"]["containers"][0].get("securityContext") is None
    assert [w for w in warnings if "apparmor" in w] == [
        f"metadata.annotations[{KEY}c]: {DEPRECATED}"]


def test_windows_pods_are_left_alone(kube: Kube) -> None:
    body = _pod("windows", annotations={KEY + "c": "unconfined"})
    body["spec"]["os"] = {"name": "windows"}
    pod, _ = _create(kube, body)
    assert pod["spec"]["containers"][0].get("securityContext") is None


INV, REQ, FORB, UNSUP, LONG = ("FieldValueInvalid", "FieldValueRequired", "FieldValueForbidden",
                               "FieldValueNotSupported", "FieldValueTooLong")
CONTAINER_PROFILE = "spec.containers[0].securityContext.appArmorProfile"

# (case, pod, expected causes): pkg/apis/core/validation/validation.go
# ValidateAppArmorProfileField (pod and container security contexts),
# validateAppArmorAnnotationsAndFieldsMatchOnCreate (ValidatePodCreate, after the sync),
# ValidatePodSpecificAnnotations (mirror pod, deletion cost, seccomp and AppArmor annotations)
INVALID_CASES: list[tuple[str, dict[str, Any], dict[tuple[str, str], int]]] = [
    ("localhost-unnamed", _pod("localhost-unnamed", containers=[
        {"name": "c", "image": "i",
         "securityContext": {"appArmorProfile": {"type": "Localhost"}}}]),
     {(f"{CONTAINER_PROFILE}.localhostProfile", REQ): 1}),
    ("localhost-padded", _pod("localhost-padded", pod_context={
        "appArmorProfile": {"type": "Localhost", "localhostProfile": " p"}}),
     {("spec.securityContext.appArmorProfile.localhostProfile", INV): 1}),
    ("localhost-too-long", _pod("localhost-too-long", pod_context={
        "appArmorProfile": {"type": "Localhost", "localhostProfile": "p" * 4096}}),
     {("spec.securityContext.appArmorProfile.localhostProfile", LONG): 1}),
    ("default-named", _pod("default-named", pod_context={
        "appArmorProfile": {"type": "RuntimeDefault", "localhostProfile": "p"}}),
     {("spec.securityContext.appArmorProfile.localhostProfile", INV): 1}),
    ("no-type", _pod("no-type", pod_context={"appArmorProfile": {}}),
     {("spec.securityContext.appArmorProfile.type", REQ): 1}),
    ("bad-type", _pod("bad-type", pod_context={"appArmorProfile": {"type": "Strict"}}),
     {("spec.securityContext.appArmorProfile.type", UNSUP): 1}),
    ("type-mismatch", _pod("type-mismatch", annotations={KEY + "c": "localhost/p"}, containers=[
        {"name": "c", "image": "i",
         "securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}}}]),
     {(f"{CONTAINER_PROFILE}.type", FORB): 1}),
    ("profile-mismatch", _pod("profile-mismatch", annotations={KEY + "c": "localhost/p"},
                              containers=[{"name": "c", "image": "i", "securityContext": {
                                  "appArmorProfile": {"type": "Localhost",
                                                      "localhostProfile": "q"}}}]),
     {(f"{CONTAINER_PROFILE}.localhostProfile", FORB): 1}),
    ("bad-annotation", _pod("bad-annotation", annotations={KEY + "c": "strict"}),
     {(f"metadata.annotations[{KEY}c]", INV): 1}),
    ("unknown-container", _pod("unknown-container", annotations={KEY + "x": "unconfined"}),
     {(f"metadata.annotations[{KEY}x]", INV): 1}),
    ("seccomp", _pod("seccomp", annotations={
        "seccomp.security.alpha.kubernetes.io/pod": "strict",
        "container.seccomp.security.alpha.kubernetes.io/c": "localhost/../p"}),
     {("metadata.annotations.seccomp.security.alpha.kubernetes.io/pod", INV): 1,
      ("metadata.annotations.container.seccomp.security.alpha.kubernetes.io/c", INV): 1}),
    ("deletion-cost", _pod("deletion-cost", annotations={
        "controller.kubernetes.io/pod-deletion-cost": "+1"}),
     {("metadata.annotations[controller.kubernetes.io/pod-deletion-cost]", INV): 1}),
    ("mirror-unbound", _pod("mirror-unbound", annotations={"kubernetes.io/config.mirror": "x"}),
     {("metadata.annotations[kubernetes.io/config.mirror]", INV): 1}),
]


@pytest.mark.parametrize(("case", "body", "expected"), INVALID_CASES,
                         ids=[c[0] for c in INVALID_CASES])
def test_apparmor_and_annotation_rules(kube: Kube, case: str, body: dict[str, Any],
                                       expected: dict[tuple[str, str], int]) -> None:
    assert kube.reject("POST", PODS, body) == Counter(expected)


def test_apparmor_messages_are_kubernetes_words(kube: Kube) -> None:
    assert kube.messages("POST", PODS, _pod("words", annotations={KEY + "c": "strict"})) == {
        f"metadata.annotations[{KEY}c]": [
            'Invalid value: "strict": invalid AppArmor profile name: "strict"']}
    # (a pod's own profile never clashes: the sync gives the container the annotation's)
    assert kube.messages("POST", PODS, _pod("words", annotations={KEY + "c": "localhost/p"},
                                            containers=[{"name": "c", "image": "i",
                                                         "securityContext": {"appArmorProfile": {
                                                             "type": "Unconfined"}}}])) == {
        f"{CONTAINER_PROFILE}.type": ["Forbidden: apparmor type in annotation and field must "
                                      "match"]}
    assert kube.messages("POST", PODS, _pod("words", annotations={
        "controller.kubernetes.io/pod-deletion-cost": "2147483648"})) == {
        "metadata.annotations[controller.kubernetes.io/pod-deletion-cost]": [
            'Invalid value: "2147483648": must be a 32bit integer']}


def test_valid_annotations_are_accepted(kube: Kube) -> None:
    _create(kube, _pod("valid-annotations", annotations={
        "controller.kubernetes.io/pod-deletion-cost": "-5",
        "seccomp.security.alpha.kubernetes.io/pod": "runtime/default",
        KEY + "c": "localhost/p"}))
