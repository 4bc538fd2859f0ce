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
  Job, ``field label %q not supported for batchv1.Job``; pkg/apis/events/v1/conversion.go
  (regarding.* and reportingController renamed to core's names) and certificates/v1/
  conversion.go (CertificateSigningRequest) word theirs as core does; apps/v1 registers none.
- the selected values: pkg/registry/core/pod/strategy.go ToSelectableFields, pkg/registry/
  core/service/strategy.go, core/event/strategy.go, core/replicationcontroller and batch/job
  strategy.go (counts by strconv.Itoa); a field the object's set lacks reads as ""
  (fields.Set).
"""

from __future__ import annotations

from typing import Any

import pytest
import pytest_asyncio

from tests.cluster.conftest import API
from tests.cluster.fidelity.conftest import Kubectl, item_names, names_selected
from tests.cluster.fidelity.writes import failure

pytestmark = pytest.mark.asyncio(loop_scope="module")

NS = "/api/v1/namespaces/default"


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
    assert await names_selected(
        module_api, roles, "metadata.namespace%3D%2Cmetadata.name%3Dfield-selected") == (
        200, ["field-selected"])


@pytest.mark.parametrize("path", ["/api/v1/nodes", "/api/v1/namespaces"])
async def test_nodes_and_namespaces_refuse_a_namespace(module_api: API, path: str) -> None:
    """Rule: the Node and Namespace conversions list metadata.name, not metadata.namespace."""
    assert await module_api.get(f"{path}?fieldSelector=metadata.namespace%3Dx") == (
        400, failure(400, "BadRequest", "field label not supported: metadata.namespace"))


async def test_pod_fields_podips_and_the_old_spec_host(module_api: API,
                                                      objects: None) -> None:
    """Rule: spec.host is spec.nodeName for old clients; status.podIPs is accepted and, being
    in no pod's selectable fields, reads as ""."""
    assert await names_selected(module_api, f"{NS}/pods", "spec.host%3Dnode-a") == (200, ["on-a"])
    status, out = await module_api.get(f"{NS}/pods?fieldSelector=status.podIPs%3D10.0.0.1")
    assert (status, out["items"]) == (200, [])
    assert await names_selected(module_api, f"{NS}/pods", "status.podIPs%3D") == (
        200, ["on-a", "on-b"])


async def test_services_are_selected_by_type_and_cluster_ip(module_api: API,
                                                             objects: None) -> None:
    """Rule: the Service conversion and strategy's selectable fields add spec.type and
    spec.clusterIP."""
    assert await names_selected(module_api, f"{NS}/services", "spec.type%3DNodePort") == (
        200, ["node-port"])
    assert await names_selected(module_api, f"{NS}/services", "spec.clusterIP%3DNone") == (
        200, ["headless"])


async def test_jobs_word_their_refusal_their_own_way(module_api: API) -> None:
    """Rule: batch/v1's Job conversion quotes the label and names the kind."""
    path = "/apis/batch/v1/namespaces/default/jobs?fieldSelector=status.succeeded%3D1"
    assert await module_api.get(path) == (400, failure(
        400, "BadRequest", 'field label "status.succeeded" not supported for batchv1.Job'))


@pytest.mark.parametrize("watch", ["", "&watch=true"])
async def test_kinds_whose_strategies_select_more_have_the_default_conversion(
        module_api: API, watch: str) -> None:
    """Rule: apps/v1 registers no field label conversion (pkg/apis/apps/v1/register.go,
    conversion.go: conversion functions only; kubernetes issue #135136 shows the refusal for
    ``status.replicas`` on 1.31-1.34), so ReplicaSet's selectable ``status.replicas``
    (pkg/registry/apps/replicaset/strategy.go) is never reached; nor is a PersistentVolume's
    or claim's (pkg/apis/core/v1/conversion.go registers neither)."""
    apps = "/apis/apps/v1/namespaces/default"
    for path, label in ((f"{apps}/replicasets", "status.replicas"),
                        (f"{apps}/statefulsets", "status.replicas"),
                        ("/api/v1/persistentvolumes", "status.phase"),
                        (f"{NS}/persistentvolumeclaims", "status.phase")):
        assert await module_api.get(f"{path}?fieldSelector={label}%3Dx{watch}") == (
            400, failure(400, "BadRequest", f'"{label}" is not a known field selector: only '
                                            '"metadata.name", "metadata.namespace"')), path


async def test_an_unset_count_selects_as_zero(module_api: API) -> None:
    """Rule: pkg/registry/core/replicationcontroller/strategy.go ControllerToSelectableFields
    and pkg/registry/batch/job/strategy.go JobToSelectableFields write the count with
    ``strconv.Itoa``: a controller or job with no status yet has "0"."""
    def template(restart_policy: str) -> dict[str, Any]:
        return {"metadata": {"labels": {"app": "counted"}},
                "spec": {"restartPolicy": restart_policy,
                         "containers": [{"name": "c", "image": "busybox"}]}}

    status, out = await module_api.post(f"{NS}/replicationcontrollers", {
        "metadata": {"name": "counted"},
        "spec": {"replicas": 0, "selector": {"app": "counted"},
                 "template": template("Always")}})
    assert status == 201, out
    status, out = await module_api.post("/apis/batch/v1/namespaces/default/jobs", {
        "metadata": {"name": "counted"}, "spec": {"template": template("Never")}})
    assert status == 201, out
    assert await names_selected(module_api, f"{NS}/replicationcontrollers",
                                "status.replicas%3D0") == (200, ["counted"])
    assert await names_selected(module_api, "/apis/batch/v1/namespaces/default/jobs",
                                "status.successful%3D0") == (200, ["counted"])
    assert await module_api.get(
        f"{NS}/replicationcontrollers?fieldSelector=status.readyReplicas%3D0") == (
        400, failure(400, "BadRequest", "field label not supported: status.readyReplicas"))


EVENTS_V1 = "/apis/events.k8s.io/v1/namespaces/default/events"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def events(module_api: API) -> None:
    for name, extra in (
            ("from-kubelet", {"source": {"component": "kubelet"},
                              "reportingComponent": "kubelet"}),
            ("from-controller", {"reportingComponent": "ctl", "reportingInstance": "ctl-0",
                                 "action": "Sync",
                                 "eventTime": "2024-01-01T00:00:00.000000Z"})):
        status, out = await module_api.post(f"{NS}/events", {
            "metadata": {"name": name}, "reason": "Tested", "type": "Normal",
            "involvedObject": {"kind": "Pod", "name": name, "namespace": "default"},
            **extra})
        assert status == 201, out


async def test_core_events_source_falls_back_to_the_reporting_controller(
        module_api: API, events: None) -> None:
    """Rule: pkg/registry/core/event/strategy.go ToSelectableFields: ``source`` is
    source.component, or the reporting controller when that is empty; ``reportingComponent``
    is the reporting controller (pkg/apis/core/v1/conversion.go
    AddFieldLabelConversionsForEvent accepts both)."""
    for selector, names in (("source%3Dctl", ["from-controller"]),
                            ("source%3Dkubelet", ["from-kubelet"]),
                            ("reportingComponent%3Dctl", ["from-controller"]),
                            ("involvedObject.name%3Dfrom-kubelet", ["from-kubelet"])):
        assert await names_selected(module_api, f"{NS}/events", selector) == (200, names), selector


@pytest.mark.parametrize("watch", ["", "&watch=true"])
async def test_events_k8s_io_selects_by_its_own_names(module_api: API, events: None,
                                                      watch: str) -> None:
    """Rule: pkg/apis/events/v1/conversion.go AddFieldLabelConversionsForEvent maps
    regarding.* to involvedObject.* and reportingController to reportingComponent (then
    matched on core's ToSelectableFields); core's own names are refused."""
    if not watch:
        for selector, names in (("regarding.name%3Dfrom-kubelet", ["from-kubelet"]),
                                ("regarding.kind%3DPod", ["from-controller", "from-kubelet"]),
                                ("reportingController%3Dctl", ["from-controller"]),
                                ("source%3Dctl", ["from-controller"]),
                                ("reason%3DTested%2Ctype%3DNormal",
                                 ["from-controller", "from-kubelet"])):
            assert await names_selected(module_api, EVENTS_V1, selector) == (200, names), selector
    for label in ("involvedObject.name", "reportingComponent", "note"):
        assert await module_api.get(f"{EVENTS_V1}?fieldSelector={label}%3Dx{watch}") == (
            400, failure(400, "BadRequest", f"field label not supported: {label}"))


async def test_certificate_signing_requests_take_a_name_and_a_signer(module_api: API) -> None:
    """Rule: pkg/apis/certificates/v1/conversion.go: metadata.name and spec.signerName."""
    path = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
    status, out = await module_api.get(f"{path}?fieldSelector=spec.signerName%3Dx")
    assert (status, out["items"]) == (200, [])
    assert await module_api.get(f"{path}?fieldSelector=metadata.namespace%3Dx") == (
        400, failure(400, "BadRequest", "field label not supported: metadata.namespace"))


async def test_pod_fields_read_as_the_pod_strategy_writes_them(module_api: API) -> None:
    """Rule: pkg/registry/core/pod/strategy.go ToSelectableFields: spec.hostNetwork as
    strconv.FormatBool (false when unset), status.podIP the first of the pod's IPs (the
    second selects nothing), and every label the Pod conversion lists is accepted."""
    status, out = await module_api.post(f"{NS}/serviceaccounts", {"metadata": {"name": "sa"}})
    assert status == 201, out
    status, out = await module_api.post(f"{NS}/pods", {
        "metadata": {"name": "on-host"},
        "spec": {"hostNetwork": True, "restartPolicy": "Never", "serviceAccountName": "sa",
                 "containers": [{"name": "c", "image": "busybox"}]}})
    assert status == 201, out
    try:
        await _select_on_host(module_api, out)
    finally:  # the module's other tests select among the pods of their own fixture
        status, out = await module_api.delete(f"{NS}/pods/on-host?gracePeriodSeconds=0")
        assert status == 200, out


async def _select_on_host(module_api: API, out: dict[str, Any]) -> None:
    out["status"] = {"phase": "Running", "nominatedNodeName": "node-n",
                     "podIPs": [{"ip": "10.0.0.7"}, {"ip": "fd00::7"}]}
    status, out = await module_api.put(f"{NS}/pods/on-host/status", out)
    assert status == 200, out
    for selector, selected in (("spec.hostNetwork%3Dtrue", True),
                               ("spec.hostNetwork%3Dfalse", False),
                               ("spec.restartPolicy%3DNever", True),
                               ("spec.schedulerName%3Ddefault-scheduler", True),
                               ("spec.serviceAccountName%3Dsa", True),
                               ("status.phase%3DRunning", True),
                               ("status.podIP%3D10.0.0.7", True),
                               ("status.podIP%3Dfd00%3A%3A7", False),
                               ("status.podIPs%3D10.0.0.7", False),
                               ("status.nominatedNodeName%3Dnode-n", True),
                               ("spec.nodeName%3D", True)):
        status, out = await module_api.get(f"{NS}/pods?fieldSelector={selector}")
        assert (status, "on-host" in item_names(out)) == (200, selected), selector


async def test_nodes_namespaces_and_secrets_by_their_fields(module_api: API) -> None:
    """Rule: pkg/registry/core/node/strategy.go NodeToSelectableFields (spec.unschedulable
    as fmt.Sprint of a bool, false when unset), namespace/strategy.go (status.phase, Active
    once created), secret/strategy.go (type, Opaque by default)."""
    for name, spec in (("cordoned", {"unschedulable": True}), ("open", {})):
        status, out = await module_api.post("/api/v1/nodes", {"metadata": {"name": name},
                                                               "spec": spec})
        assert status == 201, out
    for value, names in (("true", ["cordoned"]), ("false", ["open"])):
        assert await names_selected(module_api, "/api/v1/nodes",
                                    f"spec.unschedulable%3D{value}") == (200, names)
    assert await names_selected(module_api, "/api/v1/namespaces",
                                "status.phase%3DActive%2Cmetadata.name%3Ddefault") == (
        200, ["default"])
    for name, kind in (("plain", None), ("custom", "example.com/custom")):
        status, out = await module_api.post(f"{NS}/secrets", {
            "metadata": {"name": name}, **({"type": kind} if kind else {})})
        assert status == 201, out
    for selector, names in (("type%3DOpaque", ["plain"]),
                            ("type%3Dexample.com%2Fcustom", ["custom"])):
        status, out = await module_api.get(f"{NS}/secrets?fieldSelector={selector}")
        assert (status, [n for n in item_names(out) if n in ("plain", "custom")]) == (
            200, names), selector
    assert await module_api.get(f"{NS}/secrets?fieldSelector=data%3Dx") == (
        400, failure(400, "BadRequest", "field label not supported: data"))


async def test_kubectl_get_with_a_field_selector(objects: None,
                                                 module_kubectl: Kubectl) -> None:
    """Rule: kubectl sends --field-selector as fieldSelector; its resource builder
    (k8s.io/cli-runtime pkg/resource/selector.go) rewords a BadRequest as "Unable to find
    %q that match label selector %q, field selector %q: %v" (kubernetes issue #135136 shows
    this very answer for replicasets)."""
    assert await module_kubectl("get", "pods", "--field-selector", "spec.nodeName=node-a",
                                "-o", "name") == (0, "pod/on-a\n", "")
    code, _, err = await module_kubectl("get", "rs", "--field-selector", "status.replicas=0")
    assert (code, err) == (1, 'Error from server (BadRequest): Unable to find "apps/v1, '
                              'Resource=replicasets" that match label selector "", field '
                              'selector "status.replicas=0": "status.replicas" is not a '
                              'known field selector: only "metadata.name", '
                              '"metadata.namespace"\n')


async def test_a_page_of_one_nodes_pods_from_the_cache_ends_with_that_nodes_pods(
        module_api: API, objects: None) -> None:
    """Rule: the watch cache indexes pods by spec.nodeName; a LIST from it whose field
    selector pins a node reads that node's pods only, so a full page carries a continue token
    only while another pod of that node follows. etcd (Exact) reads the whole range: any pod
    after the page's last gives a token.
    Source: k8s.io/kubernetes pkg/registry/core/pod/strategy.go (MatchPod IndexFields,
    Indexers), k8s.io/apiserver v0.32.0 pkg/storage/selection_predicate.go (MatcherIndex),
    pkg/storage/cacher/watch_cache.go (WaitUntilFreshAndList: ByIndex), cacher.go (GetList:
    hasMoreListItems), etcd3/store.go (GetList)."""
    path = f"{NS}/pods?fieldSelector=spec.nodeName%3Dnode-a&limit=1"
    status, page = await module_api.get(path)
    assert (status, item_names(page), page["metadata"].get("continue")) == (
        200, ["on-a"], None), page
    rv = page["metadata"]["resourceVersion"]
    status, page = await module_api.get(f"{path}&resourceVersion={rv}"
                                        "&resourceVersionMatch=Exact")
    assert (status, item_names(page), bool(page["metadata"].get("continue"))) == (
        200, ["on-a"], True), page
