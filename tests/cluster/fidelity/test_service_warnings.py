"""The warnings a valid Service draws (kube-apiserver 1.32 pkg/api/service/warnings.go
``GetWarningsForService``, the Service strategy's WarningsOnCreate/WarningsOnUpdate), seen
over real HTTP and by real kubectl 1.32. One server for the module; each test its own
namespace."""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.conftest import API
from tests.conftest import kubectl_path

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def namespace(api: API) -> str:
    name = f"svcwarn-{uuid.uuid4().hex[:8]}"
    status, body = await api.post("/api/v1/namespaces", {"metadata": {"name": name}})
    assert status == 201, body
    return name


async def write(api: API, method: str, path: str, body: Any,
                content_type: str = "application/json") -> tuple[int, Any, list[str]]:
    async with api.session.request(method, f"{api.cluster.url}{path}", json=body, ssl=api.ssl,
                                   headers={"Content-Type": content_type}) as resp:
        return resp.status, await resp.json(), resp.headers.getall("Warning", [])


def texts(headers: list[str]) -> list[str]:
    """The text of each ``299 - "..."`` Warning header."""
    return [h.split(" ", 2)[2][1:-1].replace('\\"', '"') for h in headers]


@pytest.fixture
def kubectl(module_api: API, tmp_path: Path) -> Any:
    """Real kubectl with a kubeconfig this test wrote (0600) and a fresh cache."""
    config = tmp_path / "kubeconfig"
    config.write_bytes(Path(module_api.cluster.kubeconfig).read_bytes())
    config.chmod(0o600)
    base = [kubectl_path(), "--kubeconfig", str(config),
            "--cache-dir", str(tmp_path / f"cache-{uuid.uuid4().hex[:8]}")]

    async def run(*args: str, stdin: str | None = None) -> tuple[int | None, str, str]:
        proc = await asyncio.create_subprocess_exec(
            *base, *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)})
        out, err = await asyncio.wait_for(
            proc.communicate(stdin.encode() if stdin is not None else None), 60)
        return proc.returncode, out.decode(), err.decode()

    return run


async def test_service_writes_draw_the_type_and_headless_warnings(module_api: API) -> None:
    ns = await namespace(module_api)
    path = f"/api/v1/namespaces/{ns}/services"
    status, body, warnings = await write(module_api, "POST", path, {
        "metadata": {"name": "cip"},
        "spec": {"externalName": "db.example.com", "ports": [{"port": 80}]}})
    assert status == 201, body
    assert texts(warnings) == ['spec.externalName is ignored when spec.type is not "ExternalName"']
    status, body, warnings = await write(module_api, "POST", path, {
        "metadata": {"name": "en"},
        "spec": {"type": "ExternalName", "externalName": "db.example.com",
                 "externalIPs": ["192.0.2.1"]}})
    assert status == 201, body
    assert texts(warnings) == ['spec.externalIPs is ignored when spec.type is "ExternalName"']
    status, body, warnings = await write(module_api, "POST", path, {
        "metadata": {"name": "lb", "annotations": {
            "service.kubernetes.io/topology-aware-hints": "auto"}},
        "spec": {"type": "LoadBalancer", "ports": [{"port": 80}],
                 "loadBalancerSourceRanges": ["2001:DB8::/32"]}})
    assert status == 201, body
    assert texts(warnings) == [
        "annotation service.kubernetes.io/topology-aware-hints is deprecated, please use "
        "service.kubernetes.io/topology-mode instead",
        'spec.loadBalancerSourceRanges[0]: IPv6 prefix "2001:DB8::/32" is not in RFC 5952 '
        'canonical format ("2001:db8::/32"), which may cause controller apply-loops']
    # an update draws them too (WarningsOnUpdate); a status write does not
    status, body, warnings = await write(
        module_api, "PATCH", f"{path}/cip", {"metadata": {"labels": {"a": "b"}}},
        "application/merge-patch+json")
    assert status == 200, body
    assert texts(warnings) == ['spec.externalName is ignored when spec.type is not "ExternalName"']
    status, body, warnings = await write(
        module_api, "PATCH", f"{path}/cip/status", {"status": {}},
        "application/merge-patch+json")
    assert status == 200, body
    assert warnings == []
    # an ordinary Service draws none
    status, body, warnings = await write(module_api, "POST", path, {
        "metadata": {"name": "plain"}, "spec": {"ports": [{"port": 80}]}})
    assert status == 201, body
    assert warnings == []


async def test_kubectl_apply_of_a_headless_service_with_affinity_warns(
        module_api: API, kubectl: Any) -> None:
    ns = await namespace(module_api)
    code, out, err = await kubectl("apply", "-n", ns, "-f", "-", stdin="""
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  sessionAffinity: ClientIP
  selector: {app: db}
  ports: [{port: 5432}]
""")
    assert code == 0, err
    assert out == "service/db created\n"
    assert err == "Warning: spec.SessionAffinity is ignored for headless services\n"


async def test_a_cluster_ip_with_leading_zeros_is_accepted_with_a_warning(
        module_api: API) -> None:
    """Rule: ``spec.clusterIP: "10.96.0.010"`` is valid in 1.32 (validation.IsValidIP parses
    with netutils.ParseIPSloppy, which reads 010 as decimal 10), stored as written, warned
    about, and holds the address it names: a second Service asking for 10.96.0.10 finds it
    allocated.
    Source: k8s.io/apimachinery pkg/util/validation/validation.go IsValidIP;
    pkg/apis/core/validation/validation.go ValidateServiceClusterIPsRelatedFields;
    pkg/api/service/warnings.go getWarningsForIP (netip.ParseAddr's error);
    pkg/registry/core/service/storage/alloc.go allocIPs (ParseIPSloppy, then Allocate)."""
    ns = await namespace(module_api)
    services = f"/api/v1/namespaces/{ns}/services"
    status, body, warnings = await write(module_api, "POST", services, {
        "metadata": {"name": "zeros"},
        "spec": {"clusterIP": "10.96.0.010", "ports": [{"port": 80}]}})
    assert status == 201, body
    assert (body["spec"]["clusterIP"], body["spec"]["clusterIPs"]) == (
        "10.96.0.010", ["10.96.0.010"])
    assert texts(warnings) == [
        "spec.clusterIPs[0]: IP address was accepted, but will be invalid in a future "
        'Kubernetes release: ParseAddr("10.96.0.010"): IPv4 field has octet with leading zero']
    status, body, _ = await write(module_api, "POST", services, {
        "metadata": {"name": "same-address"},
        "spec": {"clusterIP": "10.96.0.10", "ports": [{"port": 80}]}})
    assert status == 422, body
    assert body["details"]["causes"][0]["field"] == "spec.clusterIPs"
    assert "provided IP is already allocated" in body["message"], body
