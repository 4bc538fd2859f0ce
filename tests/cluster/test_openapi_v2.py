"""/openapi/v2: the Swagger 2.0 document kubectl 1.27 reads for apply, in JSON and gnostic
protobuf, with built-in kinds and CRDs as the real apiserver publishes them."""

from __future__ import annotations

import asyncio
import hashlib
import os
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest

from setpoint.cluster import RunningCluster
from setpoint.cluster.openapi.v2 import (
    JSON,
    PROTOBUF,
    OpenAPIV2Service,
    etag_matches,
    negotiate,
    swagger_document,
)
from setpoint.cluster.registry import Registry
from setpoint.machinery.protobuf import openapiv2 as gn
from tests.cluster.conftest import API
from tests.cluster.golden import crd_resource_type
from tests.conftest import kubectl_path

GROUP = "gadgets.example.com"
GADGET = "com.example.gadgets.v1.Gadget"
CM_ITEM = "/api/v1/namespaces/{namespace}/configmaps/{name}"
KUBECTL_127_ACCEPT = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


def _crd(schema: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{GROUP}"},
        "spec": {"group": GROUP, "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget",
                           "listKind": "GadgetList"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": schema}}], **spec},
        # (published only once Established: controller/openapi/controller.go sync)
        "status": {"conditions": [{"type": "Established", "status": "True"}]},
    }


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size", "labels", "color"],
            "properties": {
                "size": {"x-kubernetes-int-or-string": True,
                         "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "replicas": {"type": "integer", "default": 1, "minimum": 0},
                "color": {"type": "string", "enum": ["red", "yes"]},
                "labels": {"type": "object", "nullable": True,
                           "properties": {"a": {"type": "string"}}},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                          "properties": {"b": {"type": "string"}}},
                "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                             "properties": {"spec": {"type": "object"}}},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                          "x-kubernetes-list-map-keys": ["port"],
                          "x-kubernetes-validations": [{"rule": "self.size() < 10"}],
                          "items": {"type": "object", "required": ["port"],
                                    "properties": {"port": {"type": "integer"}}}},
            },
        },
    },
}


@pytest.fixture(scope="module")
def registry() -> Registry:
    registry = Registry()
    registry.replace_custom(GROUP, "gadgets", [crd_resource_type(_crd(SCHEMA))])
    return registry


@pytest.fixture(scope="module")
def doc(registry: Registry) -> dict[str, Any]:
    return swagger_document(registry)


@pytest.fixture(scope="module")
def service(registry: Registry) -> OpenAPIV2Service:
    return OpenAPIV2Service(registry)


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
        return found.union(*(_refs(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node))
    return set()


# -- the document ---------------------------------------------------------------------------

def test_document_is_swagger_2_with_bearer_token_security(doc: dict[str, Any]) -> None:
    assert doc["swagger"] == "2.0"
    assert doc["info"] == {"title": "Kubernetes", "version": "1.32.0"}
    assert doc["security"] == [{"BearerToken": []}]
    assert doc["securityDefinitions"]["BearerToken"]["type"] == "apiKey"


def test_patch_operations_tell_kubectl_the_server_validates_fields(
        doc: dict[str, Any]) -> None:
    patch = doc["paths"][CM_ITEM]["patch"]
    assert patch["x-kubernetes-action"] == "patch"
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1",
                                                       "kind": "ConfigMap"}
    names = [p["name"] for p in patch["parameters"]]
    assert names == sorted(names) and {"body", "dryRun", "fieldValidation", "force"} <= set(names)
    query = next(p for p in patch["parameters"] if p["name"] == "fieldValidation")
    assert query == {"name": "fieldValidation", "in": "query", "type": "string",
                     "uniqueItems": True, "description": query["description"]}
    assert patch["consumes"] == ["application/json-patch+json", "application/merge-patch+json",
                                 "application/strategic-merge-patch+json",
                                 "application/apply-patch+yaml"]
    assert patch["produces"] == ["application/json", "application/yaml",
                                 "application/vnd.kubernetes.protobuf"]
    assert patch["responses"]["401"] == {"description": "Unauthorized"}
    item_params = doc["paths"][CM_ITEM]["parameters"]
    assert [p["name"] for p in item_params] == ["name", "namespace", "pretty"]
    assert item_params[0]["required"] is True and item_params[0]["in"] == "path"


def test_definitions_carry_what_strategic_merge_patch_reads(doc: dict[str, Any]) -> None:
    containers = doc["definitions"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["items"] == {"$ref": "#/definitions/io.k8s.api.core.v1.Container"}
    deployment = doc["definitions"]["io.k8s.api.apps.v1.Deployment"]
    assert deployment["type"] == "object"
    assert deployment["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}]
    assert "enum" not in deployment["properties"]["kind"]
    # Swagger 2.0 keeps a reference's sibling description, where v3 needs allOf
    assert deployment["properties"]["spec"] == {
        "$ref": "#/definitions/io.k8s.api.apps.v1.DeploymentSpec",
        "description": "Specification of the desired behavior of the Deployment."}


def test_int_or_string_and_quantity_are_strings(doc: dict[str, Any]) -> None:
    int_or_string = doc["definitions"]["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert int_or_string["type"] == "string" and int_or_string["format"] == "int-or-string"
    assert doc["definitions"]["io.k8s.apimachinery.pkg.api.resource.Quantity"]["type"] == \
        "string"


def test_every_reference_resolves_to_a_definition(doc: dict[str, Any]) -> None:
    refs = _refs(doc["paths"]) | _refs(doc["definitions"])
    assert all(r.startswith("#/definitions/") for r in refs)
    assert {r.removeprefix("#/definitions/") for r in refs} <= set(doc["definitions"])


def test_crd_schema_is_published_as_apiextensions_does_for_v2(doc: dict[str, Any]) -> None:
    gadget = doc["definitions"][GADGET]
    assert gadget["x-kubernetes-group-version-kind"] == [
        {"group": GROUP, "kind": "Gadget", "version": "v1"}]
    assert gadget["properties"]["metadata"]["$ref"].endswith("meta.v1.ObjectMeta")
    assert gadget["properties"]["apiVersion"]["type"] == "string"
    spec = gadget["properties"]["spec"]
    props = spec["properties"]
    assert props["size"] == {"x-kubernetes-int-or-string": True}  # anyOf dropped
    assert props["replicas"] == {"type": "integer", "minimum": 0}  # defaults pruned
    assert props["color"]["enum"] == ["red", "yes"]
    assert props["labels"] == {}  # nullable: untyped, no properties, out of required
    assert spec["required"] == ["size", "color"]
    assert props["extra"] == {"x-kubernetes-preserve-unknown-fields": True}
    template = props["template"]
    assert template["properties"]["metadata"]["$ref"].endswith("meta.v1.ObjectMeta")
    assert template["required"] == ["kind", "apiVersion"]
    assert props["ports"]["x-kubernetes-list-map-keys"] == ["port"]
    assert props["ports"]["x-kubernetes-validations"] == [{"rule": "self.size() < 10"}]
    listing = doc["definitions"]["com.example.gadgets.v1.GadgetList"]
    assert listing["properties"]["items"]["items"] == {"$ref": f"#/definitions/{GADGET}"}
    patch = doc["paths"][f"/apis/{GROUP}/v1/namespaces/{{namespace}}/gadgets/{{name}}"]["patch"]
    assert "application/strategic-merge-patch+json" not in patch["consumes"]
    assert f"/apis/{GROUP}/v1/namespaces/{{namespace}}/gadgets/{{name}}/status" in doc["paths"]


def test_crd_preserving_unknown_fields_at_its_root_is_a_bare_object() -> None:
    registry = Registry()
    crd = _crd({"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                "properties": {"spec": {"type": "object"}}})
    registry.replace_custom(GROUP, "gadgets", [crd_resource_type(crd)])
    assert swagger_document(registry)["definitions"][GADGET] == {
        "type": "object",
        "x-kubernetes-group-version-kind": [{"group": GROUP, "kind": "Gadget",
                                             "version": "v1"}]}


# -- serving --------------------------------------------------------------------------------

def test_protobuf_is_gnostics_reading_of_the_json(service: OpenAPIV2Service) -> None:
    message = gn.decode(gn.DOCUMENT, service.protobuf())
    parsed = orjson.loads(service.json())
    assert message["swagger"] == "2.0"
    assert [p["name"] for p in message["paths"]["path"]] == list(parsed["paths"])
    names = [d["name"] for d in message["definitions"]["additional_properties"]]
    assert names == list(parsed["definitions"])
    item = next(p["value"] for p in message["paths"]["path"] if p["name"] == CM_ITEM)
    extensions = {e["name"]: e["value"]["yaml"] for e in item["patch"]["vendor_extension"]}
    assert extensions["x-kubernetes-group-version-kind"] == \
        'group: ""\nkind: ConfigMap\nversion: v1\n'


def test_etag_is_the_sha512_of_the_json(service: OpenAPIV2Service) -> None:
    body = service.json()
    assert service.etag == '"' + hashlib.sha512(body).hexdigest().upper() + '"'
    assert service.json() is body  # cached while the registry is unchanged
    assert service.not_modified(service.etag, None)
    assert not service.not_modified('"other"', None)
    assert service.not_modified(None, service.last_modified)
    assert not service.not_modified(None, "Mon, 01 Jan 2001 00:00:00 GMT")


def test_document_is_rebuilt_when_the_registry_changes() -> None:
    registry = Registry()
    service = OpenAPIV2Service(registry)
    before, etag = service.json(), service.etag
    assert GADGET.encode() not in before
    registry.replace_custom(GROUP, "gadgets", [crd_resource_type(_crd(SCHEMA))])
    assert GADGET.encode() in service.json()
    assert service.etag != etag
    assert any(p["name"].startswith(f"/apis/{GROUP}/")
               for p in gn.decode(gn.DOCUMENT, service.protobuf())["paths"]["path"])


@pytest.mark.parametrize(("accept", "content_type"), [
    (KUBECTL_127_ACCEPT, PROTOBUF),
    ("application/com.github.proto-openapi.spec.v2.v1.0+protobuf", PROTOBUF),
    ("application/json", JSON),
    (None, JSON),
    ("*/*", JSON),
    ("application/*", JSON),
    ("application/json;q=0.5, application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
     PROTOBUF),
    ("text/html, */*;q=0.1", JSON),
    ("text/html", None),
    ("application/yaml", None),
])
def test_accept_negotiation_follows_kube_openapi(accept: str | None,
                                                 content_type: str | None) -> None:
    assert negotiate(accept) == content_type


def test_if_none_match_compares_like_net_http() -> None:
    assert etag_matches('"A", "B"', '"B"')
    assert etag_matches('W/"B"', '"B"')
    assert etag_matches("*", '"B"')
    assert not etag_matches(None, '"B"')
    assert not etag_matches('"C"', '"B"')


# -- over HTTP, with the route wired into the server ----------------------------------------

async def test_route_negotiates_and_answers_conditional_requests(api: API) -> None:
    url = api.cluster.url + "/openapi/v2?timeout=32s"
    async with api.session.get(url, ssl=api.ssl,
                               headers={"Accept": KUBECTL_127_ACCEPT}) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == PROTOBUF
        # gziphandler's Vary first (kube-openapi wraps the handler in GzipHandler)
        assert resp.headers.getall("Vary") == ["Accept-Encoding", "Accept"]
        etag = resp.headers["ETag"]
        message = gn.decode(gn.DOCUMENT, await resp.read())
        assert message["swagger"] == "2.0"
    async with api.session.get(url, ssl=api.ssl, headers={"Accept": "application/json"}) as resp:
        assert resp.status == 200 and resp.headers["Content-Type"] == JSON
        assert resp.headers["ETag"] == etag  # one ETag for both forms
        assert orjson.loads(await resp.read())["swagger"] == "2.0"
    async with api.session.get(url, ssl=api.ssl, headers={
            "Accept": KUBECTL_127_ACCEPT, "If-None-Match": etag}) as resp:
        assert resp.status == 304
    async with api.session.get(url, ssl=api.ssl, headers={"Accept": "text/html"}) as resp:
        assert resp.status == 406


async def _kubectl(binary: str, cluster: RunningCluster, workdir: Path, *args: str,
                   stdin: str | None = None) -> str:
    home = workdir / "home"
    home.mkdir(exist_ok=True)
    proc = await asyncio.create_subprocess_exec(
        binary, "--kubeconfig", str(cluster.kubeconfig), "--cache-dir",
        str(workdir / f"cache-{uuid.uuid4().hex[:8]}"), *args,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)})
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin else None), 60)
    assert proc.returncode == 0, f"kubectl {' '.join(args)}: {out.decode()}{err.decode()}"
    assert b"error calculating patch from openapi spec" not in err
    return out.decode()


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: "nginx:1.27"}
      - {name: sidecar, image: "busybox:1.36"}
"""


async def test_kubectl_1_27_applies_client_and_server_side(
        cluster: RunningCluster, api: API, tmp_path: Path) -> None:
    kubectl = kubectl_path("1.27")
    out = await _kubectl(kubectl, cluster, tmp_path, "apply", "-f", "-", stdin=DEPLOYMENT)
    assert "deployment.apps/web created" in out
    # the strategic merge patch kubectl computes drops the sidecar by its merge key
    changed = DEPLOYMENT.replace("nginx:1.27", "nginx:1.28").replace(
        '      - {name: sidecar, image: "busybox:1.36"}\n', "")
    out = await _kubectl(kubectl, cluster, tmp_path, "apply", "-f", "-", stdin=changed)
    assert "deployment.apps/web configured" in out
    _, deployment = await api.get("/apis/apps/v1/namespaces/default/deployments/web")
    assert [(c["name"], c["image"]) for c in deployment["spec"]["template"]["spec"][
        "containers"]] == [("web", "nginx:1.28")]
    out = await _kubectl(kubectl, cluster, tmp_path, "apply", "--server-side", "-f", "-",
                         stdin="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c1, "
                               "namespace: default}\ndata: {a: b}\n")
    assert "configmap/c1 serverside-applied" in out
    _, cm = await api.get("/api/v1/namespaces/default/configmaps/c1")
    assert cm["data"] == {"a": "b"}
