"""/openapi/v3 documents compared with the real server's, and usable by kubectl explain."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from setpoint.cluster.openapi.v3 import (
    OpenAPIService,
    document_schema,
    openapi_document,
    openapi_index,
)
from setpoint.cluster.registry import Registry
from tests.cluster.golden import crd_resource_type, golden_body, golden_steps

CM_ITEM = "/api/v1/namespaces/{namespace}/configmaps/{name}"


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry()


@pytest.fixture(scope="module")
def core(registry: Registry) -> dict[str, Any]:
    doc = openapi_document(registry, "api/v1")
    assert doc is not None
    return doc


def _resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    target = schema.get("$ref") or (schema.get("allOf") or [{}])[0].get("$ref")
    if target:
        resolved = doc["components"]["schemas"][target.rsplit("/", 1)[-1]]
        assert isinstance(resolved, dict)
        return resolved
    return schema


def test_index_lists_the_same_documents_as_the_real_server(registry: Registry) -> None:
    expected = golden_body("discovery-openapi-v3", "openapi-v3-index")["paths"]
    index = openapi_index(registry)["paths"]
    assert set(index) == set(expected)
    assert index["api/v1"]["serverRelativeURL"].startswith("/openapi/v3/api/v1?hash=")


def test_core_document_patch_operation_matches(core: dict[str, Any]) -> None:
    expected = golden_body("discovery-openapi-v3", "openapi-v3-core-v1-patch-op")
    patch = core["paths"][CM_ITEM]["patch"]
    want = expected["paths"][CM_ITEM]["patch"]
    assert core["openapi"] == expected["openapi"] and core["info"] == expected["info"]
    assert patch["x-kubernetes-group-version-kind"] == want["x-kubernetes-group-version-kind"]
    assert patch["x-kubernetes-action"] == "patch"
    assert patch["requestBody"]["content"] == want["requestBody"]["content"]
    cm = core["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"]
    assert cm["x-kubernetes-group-version-kind"] == \
        expected["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"][
            "x-kubernetes-group-version-kind"]
    assert cm["type"] == "object"


def test_patch_parameters_match_the_real_server(core: dict[str, Any]) -> None:
    expected = golden_body("discovery-openapi-v3", "openapi-v3-core-v1-patch-params")["value"]
    assert core["paths"][CM_ITEM]["patch"]["parameters"] == expected


def test_apps_schemas_keep_required_and_list_extensions(registry: Registry) -> None:
    expected = golden_body("discovery-openapi-v3", "openapi-v3-apps-deployment-schema-ext")
    doc = openapi_document(registry, "apis/apps/v1")
    assert doc is not None
    schemas = doc["components"]["schemas"]
    want = expected["components"]["schemas"]
    assert schemas["io.k8s.api.apps.v1.DeploymentSpec"]["required"] == \
        want["io.k8s.api.apps.v1.DeploymentSpec"]["required"]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    for key, value in want["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"].items():
        assert containers[key] == value


def test_schemas_use_openapi_v3_spelling(registry: Registry) -> None:
    doc = openapi_document(registry, "apis/apps/v1")
    assert doc is not None
    text = orjson.dumps(doc).decode()
    assert "#/$defs/" not in text and '"null"' not in text
    deployment = doc["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"]
    assert deployment["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]
    assert "enum" not in deployment["properties"]["apiVersion"]
    int_or_string = doc["components"]["schemas"]["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert int_or_string["format"] == "int-or-string"


def test_every_reference_resolves(registry: Registry) -> None:
    for path in ("api/v1", "apis/apps/v1", "apis/batch/v1", "apis/coordination.k8s.io/v1"):
        doc = openapi_document(registry, path)
        assert doc is not None
        names = set(doc["components"]["schemas"])
        refs = {r.rsplit("/", 1)[-1] for r in _refs(doc)}
        assert refs <= names, (path, refs - names)


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        return ([node["$ref"]] if "$ref" in node else []) + [
            r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def test_explain_deployment_spec_path_resolves(registry: Registry) -> None:
    doc = openapi_document(registry, "apis/apps/v1")
    assert doc is not None
    deployment = document_schema(doc, "apps", "v1", "Deployment")
    assert deployment is not None
    spec = _resolve(doc, deployment["properties"]["spec"])
    template = _resolve(doc, spec["properties"]["template"])
    assert "spec" in template["properties"]
    assert spec["properties"]["replicas"]["type"] == "integer"


def test_unknown_paths_have_no_document(registry: Registry) -> None:
    assert openapi_document(registry, "apis/no.such.group/v1") is None
    assert OpenAPIService(registry).document("apis/no.such.group/v1") is None


def test_group_and_root_documents_exist(registry: Registry) -> None:
    for path in ("api", "apis", "apis/apps", "version", "openid/v1/jwks",
                 ".well-known/openid-configuration"):
        doc = openapi_document(registry, path)
        assert doc is not None and doc["openapi"] == "3.0.0", path


def _widget_crd() -> dict[str, Any]:
    crd = golden_steps("crd-create-established-discovery")["wait-established"]["response"][
        "body"]
    assert isinstance(crd, dict)
    return crd


def test_crd_document_is_built_like_apiextensions() -> None:
    crd = _widget_crd()
    group = crd["spec"]["group"]
    registry = Registry()
    registry.replace_custom(group, "widgets", [crd_resource_type(crd)])
    doc = openapi_document(registry, f"apis/{group}/v1")
    assert doc is not None
    widget = document_schema(doc, group, "v1", "Widget")
    assert widget is not None
    assert widget["properties"]["metadata"]["allOf"][0]["$ref"].endswith("v1.ObjectMeta")
    assert widget["properties"]["spec"]["properties"]["replicas"] == {"type": "integer"}
    assert {"apiVersion", "kind"} <= set(widget["properties"])
    reversed_group = ".".join(reversed(group.split(".")))
    assert f"{reversed_group}.v1.WidgetList" in doc["components"]["schemas"]
    item = doc["paths"][f"/apis/{group}/v1/namespaces/{{namespace}}/widgets/{{name}}"]
    assert item["patch"]["x-kubernetes-group-version-kind"] == {
        "group": group, "version": "v1", "kind": "Widget"}
    assert "application/strategic-merge-patch+json" not in \
        item["patch"]["requestBody"]["content"]
    scale = doc["paths"][f"/apis/{group}/v1/namespaces/{{namespace}}/widgets/{{name}}/scale"]
    assert scale["get"]["x-kubernetes-group-version-kind"]["kind"] == "Scale"
    assert "io.k8s.api.autoscaling.v1.Scale" in doc["components"]["schemas"]
    refs = {r.rsplit("/", 1)[-1] for r in _refs(doc)}
    assert refs <= set(doc["components"]["schemas"])


def test_service_rebuilds_only_after_the_registry_changes() -> None:
    crd = _widget_crd()
    group = crd["spec"]["group"]
    registry = Registry()
    service = OpenAPIService(registry)
    core_before = service.document("api/v1")
    index_before = orjson.loads(service.index())
    assert f"apis/{group}/v1" not in index_before["paths"]
    assert service.index() is service.index()

    registry.replace_custom(group, "widgets", [crd_resource_type(crd)])
    index_after = orjson.loads(service.index())
    assert f"apis/{group}/v1" in index_after["paths"]
    assert service.document("api/v1") is core_before  # untouched group-versions are reused
    url = index_after["paths"][f"apis/{group}/v1"]["serverRelativeURL"]
    assert url.endswith(f"hash={service.hash(f'apis/{group}/v1')}")

    registry.remove_custom(group, "widgets")
    assert service.document(f"apis/{group}/v1") is None
    assert f"apis/{group}/v1" not in orjson.loads(service.index())["paths"]
