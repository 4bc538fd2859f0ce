"""A new pod's AppArmor annotations and fields, brought in step on create, over HTTP.

Source: kubernetes v1.32 pkg/registry/core/pod/strategy.go ``applyAppArmorVersionSkew``
(called by PrepareForCreate), ``appArmorAnnotationForField``, ``apparmorFieldForAnnotation``;
the warning it adds is ``metadata.annotations[<key>]: deprecated since v1.30; use the
"appArmorProfile" field instead``.
"""

from __future__ import annotations

import json
from typing import Any

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
        annotations={KEY + "a": "localhost/prof", KEY + "b": "runtime/default",
                     KEY + "c": "localhost/"},
        pod_context={"appArmorProfile": {"type": "RuntimeDefault"}},
        containers=[{"name": n, "image": "i"} for n in ("a", "b", "c")]))
    contexts = {c["name"]: c.get("securityContext") for c in pod["spec"]["containers"]}
    assert contexts["a"] == {"appArmorProfile": {"type": "Localhost",
                                                 "localhostProfile": "prof"}}
    assert contexts["b"] is None and contexts["c"] is None
    assert [w for w in warnings if "apparmor" in w] == [
        f"metadata.annotations[{KEY}a]: {DEPRECATED}",
        f"metadata.annotations[{KEY}c]: {DEPRECATED}"]


def test_windows_pods_are_left_alone(kube: Kube) -> None:
    body = _pod("windows", annotations={KEY + "c": "unconfined"})
    body["spec"]["os"] = {"name": "windows"}
    pod, _ = _create(kube, body)
    assert pod["spec"]["containers"][0].get("securityContext") is None
