"""What openapi-gen adds to the built-in definitions kube-apiserver 1.32 serves: the ``enum``
lists and "Possible enum values" text (in /openapi/v3 and /openapi/v2, and as ``kubectl
explain`` shows them) and the v3 ``default`` values.

The served definitions are pkg/generated/openapi/zz_generated.openapi.go with the OpenAPIEnums
feature gate on (its default; k8s.io/apiserver pkg/util/openapi/enablement.go); openapi-gen
writes the enum list and the description paragraph from each ``+enum`` type's constants
(k8s.io/kube-openapi pkg/generators/enum.go, ``enumType.DescriptionLines``/``ValueStrings``,
and openapi.go ``generateDescription``). The expected texts below are those of the Go types in
k8s.io/api v0.32.0: apps/v1/types.go (DeploymentStrategyType), core/v1/types.go
(RestartPolicy, PullPolicy, ServiceExternalTrafficPolicy with its aliased constants),
discovery/v1/types.go (AddressType, constants converted from core/v1's IPFamily) and
networking/v1/types.go (PathType, a multi-line comment collapsed).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from setpoint.cluster import RunningCluster
from setpoint.cluster.openapi.schemas import builtin_schema
from setpoint.cluster.openapi.v2_schemas import builtin_definition
from tests.cluster.conftest import API
from tests.conftest import kubectl_path

STRATEGY_TYPE = {
    "description": "Type of deployment. Can be \"Recreate\" or \"RollingUpdate\". Default is "
                   "RollingUpdate.\n\nPossible enum values:\n"
                   " - `\"Recreate\"` Kill all existing pods before creating new ones.\n"
                   " - `\"RollingUpdate\"` Replace the old ReplicaSets by new one using rolling "
                   "update i.e gradually scale down the old ReplicaSets and scale up the new "
                   "one.",
    "enum": ["Recreate", "RollingUpdate"],
    "type": "string",
}
RESTART_POLICY = {
    "description": "Restart policy for all containers within the pod. One of Always, "
                   "OnFailure, Never. In some contexts, only a subset of those values may be "
                   "permitted. Default to Always. More info: https://kubernetes.io/docs/"
                   "concepts/workloads/pods/pod-lifecycle/#restart-policy\n\n"
                   "Possible enum values:\n - `\"Always\"`\n - `\"Never\"`\n - `\"OnFailure\"`",
    "enum": ["Always", "Never", "OnFailure"],
    "type": "string",
}
IMAGE_PULL_POLICY = {
    "description": "Image pull policy. One of Always, Never, IfNotPresent. Defaults to Always "
                   "if :latest tag is specified, or IfNotPresent otherwise. Cannot be updated. "
                   "More info: https://kubernetes.io/docs/concepts/containers/images"
                   "#updating-images\n\nPossible enum values:\n"
                   " - `\"Always\"` means that kubelet always attempts to pull the latest "
                   "image. Container will fail If the pull fails.\n"
                   " - `\"IfNotPresent\"` means that kubelet pulls if the image isn't present "
                   "on disk. Container will fail if the image isn't present and the pull "
                   "fails.\n"
                   " - `\"Never\"` means that kubelet never pulls an image, but only uses a "
                   "local image. Container will fail if the image isn't present",
    "enum": ["Always", "IfNotPresent", "Never"],
    "type": "string",
}
TRAFFIC_POLICY_VALUES = (
    "\n\nPossible enum values:\n - `\"Cluster\"` routes traffic to all endpoints.\n"
    " - `\"Local\"` preserves the source IP of the traffic by routing only to endpoints on the "
    "same node as the traffic was received on (dropping the traffic if there are no local "
    "endpoints).")
ADDRESS_TYPE_VALUES = (
    "\n\nPossible enum values:\n - `\"FQDN\"` represents a FQDN.\n"
    " - `\"IPv4\"` represents an IPv4 Address.\n - `\"IPv6\"` represents an IPv6 Address.")
PATH_TYPE_LAST = (
    " - `\"Prefix\"` matches based on a URL path prefix split by '/'. Matching is case "
    "sensitive and done on a path element by element basis. A path element refers to the list "
    "of labels in the path split by the '/' separator. A request is a match for path p if "
    "every p is an element-wise prefix of p of the request path. Note that if the last element "
    "of the path is a substring of the last element in request path, it is not a match (e.g. "
    "/foo/bar matches /foo/bar/baz, but does not match /foo/barbaz). If multiple matching "
    "paths exist in an Ingress spec, the longest matching path is given priority. Examples: - "
    "/foo/bar does not match requests to /foo/barbaz - /foo/bar matches request to /foo/bar "
    "and /foo/bar/baz - /foo and /foo/ both match requests to /foo and /foo/. If both paths "
    "are present in an Ingress spec, the longest matching path (/foo/) is given priority.")


def _prop(schema: dict[str, Any], name: str) -> dict[str, Any]:
    prop: dict[str, Any] = schema["properties"][name]
    return prop


@pytest.mark.parametrize("render", [builtin_schema, builtin_definition], ids=["v3", "v2"])
def test_enum_properties_match_the_generated_1_32_definitions(render: Any) -> None:
    assert _prop(render("io.k8s.api.apps.v1.DeploymentStrategy"), "type") == STRATEGY_TYPE
    assert _prop(render("io.k8s.api.core.v1.PodSpec"), "restartPolicy") == RESTART_POLICY
    assert _prop(render("io.k8s.api.core.v1.Container"), "imagePullPolicy") == \
        IMAGE_PULL_POLICY
    # constants re-exported through an alias type count once
    traffic = _prop(render("io.k8s.api.core.v1.ServiceSpec"), "externalTrafficPolicy")
    assert traffic["enum"] == ["Cluster", "Local"]
    assert traffic["description"].endswith(TRAFFIC_POLICY_VALUES)
    # constants whose value is another package's constant, converted
    address = _prop(render("io.k8s.api.discovery.v1.EndpointSlice"), "addressType")
    assert address["enum"] == ["FQDN", "IPv4", "IPv6"]
    assert address["description"].endswith(ADDRESS_TYPE_VALUES)
    path_type = _prop(render("io.k8s.api.networking.v1.HTTPIngressPath"), "pathType")
    assert path_type["enum"] == ["Exact", "ImplementationSpecific", "Prefix"]
    assert path_type["description"].endswith(PATH_TYPE_LAST)
    # a field of a type without +enum keeps its plain description
    assert "enum" not in _prop(render("io.k8s.api.core.v1.Container"), "restartPolicy")
    assert "Possible enum values" not in \
        _prop(render("io.k8s.api.core.v1.Container"), "name")["description"]


async def _explain(cluster: RunningCluster, tmp_path: Path, field: str) -> str:
    kubeconfig = tmp_path / "kubeconfig"
    if not kubeconfig.exists():
        kubeconfig.write_bytes(cluster.kubeconfig.read_bytes())
        kubeconfig.chmod(0o600)
    proc = await asyncio.create_subprocess_exec(
        kubectl_path(), "--kubeconfig", str(kubeconfig),
        "--cache-dir", str(tmp_path / f"cache-{field}"), "explain", field,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)})
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, f"kubectl explain {field}: {out.decode()}{err.decode()}"
    return out.decode()


async def test_kubectl_explain_shows_enum_values(cluster: RunningCluster, api: API,
                                                 tmp_path: Path) -> None:
    """kubectl 1.32 explain (staging/src/k8s.io/kubectl/pkg/explain/v2/templates/plaintext.tmpl)
    prints a field's ``enum`` as ``ENUM:`` (the field explained) or ``enum:`` (a listed
    field), from the /openapi/v3 document."""
    strategy = await _explain(cluster, tmp_path, "deployment.spec.strategy")
    assert "  type\t<string>\n  enum: Recreate, RollingUpdate\n" in strategy
    assert "Possible enum values:" in strategy
    assert ' - `"Recreate"` Kill all existing pods before creating new ones.' in strategy
    restart = await _explain(cluster, tmp_path, "pod.spec.restartPolicy")
    assert "FIELD: restartPolicy <string>\nENUM:\n    Always\n    Never\n    OnFailure\n" \
        in restart
    assert ' - `"OnFailure"`' in restart
    # /openapi/v2 (kubectl up to 1.28, client generators) carries the same lists
    status, swagger = await api.get("/openapi/v2")
    assert status == 200
    definitions = swagger["definitions"]
    assert definitions["io.k8s.api.apps.v1.DeploymentStrategy"]["properties"]["type"] == \
        STRATEGY_TYPE
    assert definitions["io.k8s.api.core.v1.PodSpec"]["properties"]["restartPolicy"] == \
        RESTART_POLICY


# -- defaults (OpenAPI v3 only) -------------------------------------------------------------
# Entries of kubernetes/kubernetes v1.32 api/openapi-spec/v3/apis__apps__v1_openapi.json,
# api__v1_openapi.json and apis__authentication.k8s.io__v1_openapi.json (openapi-gen's
# generateDefault / mustEnforceDefault in k8s.io/kube-openapi pkg/generators/openapi.go).

def _ref(name: str) -> dict[str, Any]:
    return {"$ref": "#/components/schemas/" + name}


def test_v3_defaults_match_the_1_32_spec_entries() -> None:
    deployment = builtin_schema("io.k8s.api.apps.v1.Deployment")["properties"]
    # a non-pointer struct member defaults to {}, its $ref wrapped in allOf
    assert {k: v for k, v in deployment["spec"].items() if k != "description"} == {
        "allOf": [_ref("io.k8s.api.apps.v1.DeploymentSpec")], "default": {}}
    assert deployment["metadata"]["default"] == {}
    port = builtin_schema("io.k8s.api.core.v1.ContainerPort")["properties"]
    assert port["containerPort"] == {
        "default": 0, "description": "Number of port to expose on the pod's IP address. This "
        "must be a valid port number, 0 < x < 65536.", "format": "int32", "type": "integer"}
    assert port["hostPort"].get("default") is None  # omitempty: no zero value enforced
    assert port["protocol"]["default"] == "TCP"  # +default="TCP"
    containers = builtin_schema("io.k8s.api.core.v1.PodSpec")["properties"]["containers"]
    assert containers["items"] == {"allOf": [_ref("io.k8s.api.core.v1.Container")],
                                   "default": {}}
    labels = builtin_schema("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")["properties"]
    assert labels["labels"]["additionalProperties"] == {"default": "", "type": "string"}
    # a member of a custom-schema type (metav1.Time) gets none
    assert "default" not in labels["creationTimestamp"]
    extra = builtin_schema("io.k8s.api.authentication.v1.UserInfo")["properties"]["extra"]
    assert extra["additionalProperties"] == {"items": {"default": "", "type": "string"},
                                             "type": "array"}


def test_v2_definitions_carry_no_defaults() -> None:
    spec = builtin_definition("io.k8s.api.apps.v1.Deployment")["properties"]["spec"]
    assert spec == {"$ref": "#/definitions/io.k8s.api.apps.v1.DeploymentSpec",
                    "description": "Specification of the desired behavior of the Deployment."}
    assert "default" not in builtin_definition("io.k8s.api.core.v1.ContainerPort")[
        "properties"]["containerPort"]
