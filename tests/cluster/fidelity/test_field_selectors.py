"""Which fields a LIST or WATCH may select by: each kind's field label conversion, as
kube-apiserver 1.32 runs it before reading (k8s.io/apiserver pkg/endpoints/handlers/get.go
ListResource: ``opts.FieldSelector.Transform(... scope.Convertor.ConvertFieldLabel ...)``,
its error a 400 BadRequest with the conversion's words).

- k8s.io/apimachinery pkg/runtime/scheme.go ConvertFieldLabel: a kind without a registered
  conversion has pkg/runtime/conversion.go DefaultMetaV1FieldSelectorConversion, which takes
  metadata.name and metadata.namespace for any kind, cluster-scoped ones included (a
  namespace then selects nothing), and words its refusal ``%q is not a known field selector:
  only %q, %q``.
- kubernetes pkg/apis/core/v1/conversion.go: Pod (also ``status.podIPs``, accepted though no
  object carries it, and ``spec.host``, renamed ``spec.nodeName``), Node and Namespace
  (no metadata.namespace), Service (``spec.clusterIP``, ``spec.type``), Secret, Event,
  ReplicationController: "field label not supported: %s"; pkg/apis/batch/v1/conversion.go:
  Job, ``field label %q not supported for batchv1.Job``.
- the selected values: pkg/registry/core/pod/strategy.go ToSelectableFields, pkg/registry/
  core/service/strategy.go; a field the object's set lacks reads as "" (fields.Set).
"""

from __future__ import annotations

from typing import Any

import pytest
import pytest_asyncio

from tests.cluster.conftest import API
from tests.cluster.fidelity.writes import failure

pytestmark = pytest.mark.asyncio(loop_scope="module")

NS = "/api/v1/namespaces/default"


def _names(out: dict[str, Any]) -> list[str]:
    return sorted(item["metadata"]["name"] for item in out["items"])


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def objects(module_api: API) -> None:
    for name, node in (("on-a", "node-a"), ("on-b", "node-b")):
        status, out = await module_api.post(f"{NS}/pods", {
            "metadata": {"name": name},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}})
        assert status == 201, out
    for name, spec in (("headless", {"clusterIP": "None", "ports": [{"port": 80}]}),
                       ("node-port", {"type": "NodePort", "ports": [{"port": 80}]})):
        status, out = await module_api.post(f"{NS}/services", {"metadata": {"name": name},
                                                               "spec": spec})
        assert status == 201, out
    status, out = await module_api.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", {
        "metadata": {"name": "field-selected"}, "rules": []})
    assert status == 201, out


@pytest.mark.parametrize("watch", ["", "&watch=true"])
async def test_a_kind_without_a_conversion_takes_metadata_only(module_api: API,
                                                               watch: str) -> None:
    """Rule: DefaultMetaV1FieldSelectorConversion's refusal, on a LIST as on a WATCH."""
    assert await module_api.get(f"{NS}/configmaps?fieldSelector=data.a%3Db{watch}") == (
        400, failure(400, "BadRequest", '"data.a" is not a known field selector: only '
                                        '"metadata.name", "metadata.namespace"'))


async def test_a_cluster_scoped_kind_without_a_conversion_takes_a_namespace(
        module_api: API, objects: None) -> None:
    """Rule: the default conversion accepts metadata.namespace for a cluster-scoped kind; its
    objects have none, so only the empty namespace selects them."""
    roles = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
    status, out = await module_api.get(f"{roles}?fieldSelector=metadata.namespace%3Ddefault")
    assert (status, out["items"]) == (200, [])
    status, out = await module_api.get(
        f"{roles}?fieldSelector=metadata.namespace%3D%2Cmetadata.name%3Dfield-selected")
    assert (status, _names(out)) == (200, ["field-selected"])


@pytest.mark.parametrize("path", ["/api/v1/nodes", "/api/v1/namespaces"])
async def test_nodes_and_namespaces_refuse_a_namespace(module_api: API, path: str) -> None:
    """Rule: the Node and Namespace conversions list metadata.name, not metadata.namespace."""
    assert await module_api.get(f"{path}?fieldSelector=metadata.namespace%3Dx") == (
        400, failure(400, "BadRequest", "field label not supported: metadata.namespace"))


async def test_pod_fields_podips_and_the_old_spec_host(module_api: API,
                                                      objects: None) -> None:
    """Rule: spec.host is spec.nodeName for old clients; status.podIPs is accepted and, being
    in no pod's selectable fields, reads as ""."""
    status, out = await module_api.get(f"{NS}/pods?fieldSelector=spec.host%3Dnode-a")
    assert (status, _names(out)) == (200, ["on-a"])
    status, out = await module_api.get(f"{NS}/pods?fieldSelector=status.podIPs%3D10.0.0.1")
    assert (status, out["items"]) == (200, [])
    status, out = await module_api.get(f"{NS}/pods?fieldSelector=status.podIPs%3D")
    assert (status, _names(out)) == (200, ["on-a", "on-b"])


async def test_services_are_selected_by_type_and_cluster_ip(module_api: API,
                                                             objects: None) -> None:
    """Rule: the Service conversion and strategy's selectable fields add spec.type and
    spec.clusterIP."""
    status, out = await module_api.get(f"{NS}/services?fieldSelector=spec.type%3DNodePort")
    assert (status, _names(out)) == (200, ["node-port"])
    status, out = await module_api.get(f"{NS}/services?fieldSelector=spec.clusterIP%3DNone")
    assert (status, _names(out)) == (200, ["headless"])


async def test_jobs_word_their_refusal_their_own_way(module_api: API) -> None:
    """Rule: batch/v1's Job conversion quotes the label and names the kind."""
    path = "/apis/batch/v1/namespaces/default/jobs?fieldSelector=status.succeeded%3D1"
    assert await module_api.get(path) == (400, failure(
        400, "BadRequest", 'field label "status.succeeded" not supported for batchv1.Job'))
