"""The cells of the built-in kinds' Tables, rule by rule, against kube-apiserver 1.32's
pkg/printers/internalversion/printers.go (the function named in each test), which the
apiserver runs with ``GenerateOptions{Wide: true}`` (pkg/printers/storage/storage.go), so
every column is in the answer and kubectl picks by priority."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from setpoint.cluster.endpoints.tables import to_table
from setpoint.cluster.registry import Registry
from setpoint.testing import present

CREATED = "2024-01-01T00:00:00Z"
NOW = datetime(2024, 1, 1, 0, 5, tzinfo=UTC)


def _table(group: str, version: str, resource: str, *objects: dict[str, Any],
           listed: bool = False) -> dict[str, Any]:
    rt = present(Registry().get(group, version, resource))
    full = [{**obj, "metadata": {"creationTimestamp": CREATED, **obj.get("metadata", {})}}
            for obj in objects]
    return to_table(rt, full, list_meta={"resourceVersion": "1"} if listed else None, now=NOW)


def _cells(group: str, version: str, resource: str, obj: dict[str, Any]) -> list[Any]:
    return list(_table(group, version, resource, obj)["rows"][0]["cells"])


def _columns(group: str, version: str, resource: str) -> list[tuple[str, str, int]]:
    table = _table(group, version, resource, {"metadata": {"name": "x"}})
    return [(c["name"], c["type"], c["priority"]) for c in table["columnDefinitions"]]


# -- pods (printPod) ----------------------------------------------------------------------

def test_pod_restarts_show_when_the_last_restart_was_only_for_restarts() -> None:
    """printPod: ``N (T ago)`` only when restarts != 0; a container that restarted 0 times
    but carries a lastState.terminated still prints ``0``."""
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]},
           "status": {"phase": "Running", "containerStatuses": [
               {"name": "a", "ready": True, "restartCount": 0, "state": {"running": {}},
                "lastState": {"terminated": {"exitCode": 1,
                                             "finishedAt": "2024-01-01T00:04:00Z"}}}]}}
    assert _cells("", "v1", "pods", pod)[1:4] == ["1/1", "Running", "0"]


def test_pod_scheduling_gated_reason() -> None:
    """printPod: a PodScheduled condition with reason SchedulingGated names the status."""
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]},
           "status": {"phase": "Pending", "conditions": [
               {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}}
    assert _cells("", "v1", "pods", pod)[2] == "SchedulingGated"


def test_pod_sidecar_finished_with_exit_zero_is_not_counted_ready() -> None:
    """printPod: an init container terminated with exit code 0 is skipped before the
    restartable-sidecar case, so it adds nothing to READY."""
    pod = {"metadata": {"name": "p"},
           "spec": {"initContainers": [{"name": "s", "restartPolicy": "Always"}],
                    "containers": [{"name": "a"}]},
           "status": {"phase": "Running", "initContainerStatuses": [
               {"name": "s", "started": True, "ready": True, "restartCount": 0,
                "state": {"terminated": {"exitCode": 0}}}],
               "containerStatuses": [{"name": "a", "ready": True, "restartCount": 0,
                                      "state": {"running": {}}}]}}
    assert _cells("", "v1", "pods", pod)[1] == "1/2"


def test_pod_init_status_and_terminating() -> None:
    """printPod: ``Init:i/n`` while an init container runs; ``Terminating`` once deleted
    and not in a terminal phase."""
    pod: dict[str, Any] = {"metadata": {"name": "p", "deletionTimestamp": "2024-01-01T00:04:00Z"},
           "spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "a"}]},
           "status": {"phase": "Pending", "initContainerStatuses": [
               {"name": "i", "ready": False, "restartCount": 0, "state": {"running": {}}}]}}
    assert _cells("", "v1", "pods", pod)[2] == "Terminating"
    del pod["metadata"]["deletionTimestamp"]
    assert _cells("", "v1", "pods", pod)[2] == "Init:0/1"


# -- workloads ----------------------------------------------------------------------------

def test_deployment_columns_and_empty_selector() -> None:
    """AddHandlers: Deployment's Up-to-date and Available are ``string`` columns;
    printDeployment prints the selector through LabelSelectorAsSelector, requirements
    sorted by key (an empty selector is "")."""
    assert _columns("apps", "v1", "deployments")[2:4] == [("Up-to-date", "string", 0),
                                                          ("Available", "string", 0)]
    dep: dict[str, Any] = {"metadata": {"name": "d"}, "spec": {"replicas": 1, "selector": {
        "matchLabels": {"z": "1"},
        "matchExpressions": [{"key": "a", "operator": "In", "values": ["y", "x"]}]}}}
    assert _cells("apps", "v1", "deployments", dep)[-1] == "a in (x,y),z=1"
    dep["spec"]["selector"] = {}
    assert _cells("apps", "v1", "deployments", dep)[-1] == ""


def test_job_status_precedence_and_completions_description() -> None:
    """printJob: Complete, then Failed, then Terminating, Suspended, FailureTarget, else
    Running; the first condition of a type decides. COMPLETIONS is described by
    JobStatus.succeeded."""
    job: dict[str, Any] = {"metadata": {"name": "j"}, "spec": {"completions": 1,
                                                               "parallelism": 1},
           "status": {"conditions": [
               {"type": "FailureTarget", "status": "True"},
               {"type": "Failed", "status": "True"}]}}
    assert _cells("batch", "v1", "jobs", job)[1:3] == ["Failed", "0/1"]
    job["status"]["conditions"] = [{"type": "SuccessCriteriaMet", "status": "True"}]
    assert _cells("batch", "v1", "jobs", job)[1] == "Running"
    described = _table("batch", "v1", "jobs", job)["columnDefinitions"][2]["description"]
    assert described.startswith("The number of pods which reached phase Succeeded")


def test_cronjob_suspend_is_printed_as_text() -> None:
    """printCronJob uses printBoolPtr: ``False``/``True`` (text), ``<unset>`` for nil."""
    cron = {"metadata": {"name": "c"}, "spec": {"schedule": "* * * * *", "suspend": False}}
    assert _cells("batch", "v1", "cronjobs", cron)[1:5] == ["* * * * *", "<none>", "False", 0]


def test_replication_controller_selector_is_a_label_map() -> None:
    """printReplicationController prints the map selector through labels.FormatLabels."""
    rc = {"metadata": {"name": "r"}, "spec": {"replicas": 2, "selector": {"b": "2", "a": "1"}}}
    assert _cells("", "v1", "replicationcontrollers", rc)[-1] == "a=1,b=2"


# -- services, endpoints, ingresses --------------------------------------------------------

@pytest.mark.parametrize(("spec", "status", "external"), [
    ({"type": "LoadBalancer"}, {}, "<pending>"),
    ({"type": "LoadBalancer", "externalIPs": ["9.9.9.9"]},
     {"loadBalancer": {"ingress": [{"ip": "5.5.5.5"}, {"hostname": "a.example"},
                                   {"ip": "1.1.1.1"}]}}, "1.1.1.1,5.5.5.5,a.example,9.9.9.9"),
    ({"type": "ExternalName", "externalName": "db.example"}, {}, "db.example"),
    ({"type": "NodePort", "externalIPs": ["2.2.2.2"]}, {}, "2.2.2.2"),
])
def test_service_external_ip(spec: dict[str, Any], status: dict[str, Any],
                             external: str) -> None:
    """getServiceExternalIP: load-balancer addresses as a sorted set, then the external
    IPs; ``<pending>`` without either; ExternalName's name as is."""
    svc = {"metadata": {"name": "s"}, "spec": {"clusterIPs": ["10.0.0.9"], **spec},
           "status": status}
    assert _cells("", "v1", "services", svc)[3] == external


def test_service_node_ports() -> None:
    """makePortString: ``port:nodePort/protocol``."""
    svc = {"metadata": {"name": "s"}, "spec": {"type": "NodePort", "clusterIP": "10.0.0.9",
                                               "ports": [{"port": 80, "protocol": "TCP"},
                                                         {"port": 443, "nodePort": 30001,
                                                          "protocol": "TCP"}]}}
    assert _cells("", "v1", "services", svc)[2:5] == ["10.0.0.9", "<none>",
                                                      "80/TCP,443:30001/TCP"]


def test_endpoints_more_and_ipv6() -> None:
    """formatEndpoints: net.JoinHostPort brackets IPv6; three shown, then ``+ N more...``;
    subsets without addresses print "" (``<none>`` is for no subsets)."""
    ep = {"metadata": {"name": "e"}, "subsets": [
        {"addresses": [{"ip": "fd00::1"}, {"ip": "10.0.0.1"}],
         "ports": [{"port": 80}, {"port": 81}]}]}
    assert _cells("", "v1", "endpoints", ep)[1] == (
        "[fd00::1]:80,10.0.0.1:80,[fd00::1]:81 + 1 more...")
    assert _cells("", "v1", "endpoints", {"metadata": {"name": "e"}, "subsets": [
        {"notReadyAddresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]})[1] == ""


def test_ingress_hosts_address_and_class_parameters() -> None:
    """formatHosts: three hosts, then ``+ N more...`` counted over all rules;
    ingressLoadBalancerStatusStringer sorts; printIngressClass: Kind[.apiGroup]/name."""
    ing = {"metadata": {"name": "i"}, "spec": {"rules": [{"host": f"h{i}.example"}
                                                         for i in range(5)]},
           "status": {"loadBalancer": {"ingress": [{"ip": "5.5.5.5"}, {"ip": "1.1.1.1"}]}}}
    assert _cells("networking.k8s.io", "v1", "ingresses", ing)[2:4] == [
        "h0.example,h1.example,h2.example + 2 more...", "1.1.1.1,5.5.5.5"]
    cls = {"metadata": {"name": "c"}, "spec": {"controller": "x/y", "parameters": {
        "kind": "Params", "name": "p"}}}
    assert _cells("networking.k8s.io", "v1", "ingressclasses", cls)[2] == "Params/p"


# -- nodes and events ---------------------------------------------------------------------

def test_node_roles_are_a_sorted_set() -> None:
    """findNodeRoles: node-role.kubernetes.io/<role> and kubernetes.io/role, sorted, each
    once; printNode: ``Ready,SchedulingDisabled``."""
    node = {"metadata": {"name": "n", "labels": {
        "node-role.kubernetes.io/worker": "", "kubernetes.io/role": "infra",
        "node-role.kubernetes.io/infra": ""}},
        "spec": {"unschedulable": True},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert _cells("", "v1", "nodes", node)[1:3] == ["Ready,SchedulingDisabled", "infra,worker"]


def test_event_without_name_and_with_reporting_source() -> None:
    """printEvent: OBJECT is the lower-cased kind alone without a name; SOURCE falls back
    to reportingController, reportingInstance (formatEventSource); a series' count."""
    event = {"metadata": {"name": "e"}, "involvedObject": {"kind": "Node"},
             "reportingComponent": "kubelet", "reportingInstance": "n1",
             "eventTime": "2024-01-01T00:03:00.000000Z", "type": "Normal", "reason": "R",
             "message": " hi ", "series": {"count": 4,
                                           "lastObservedTime": "2024-01-01T00:04:00.000000Z"}}
    assert _cells("", "v1", "events", event) == ["60s", "Normal", "R", "node", "", "kubelet, n1",
                                                 "hi", "2m", 4, "e"]


def test_events_k8s_io_events_use_the_event_printer() -> None:
    """events.k8s.io Events are stored and printed as core Events (printEvent)."""
    event = {"metadata": {"name": "e"}, "regarding": {"kind": "Pod", "name": "p"},
             "reportingController": "c", "eventTime": "2024-01-01T00:03:00.000000Z",
             "type": "Warning", "reason": "R", "note": "n", "action": "A"}
    table = _table("events.k8s.io", "v1", "events", event)
    assert [c["name"] for c in table["columnDefinitions"]][:4] == [
        "Last Seen", "Type", "Reason", "Object"]
    assert table["rows"][0]["cells"][:7] == ["2m", "Warning", "R", "pod/p", "", "c", "n"]


# -- storage ------------------------------------------------------------------------------

def test_pvc_unbound_and_volume_attributes_class() -> None:
    """printPersistentVolumeClaim: capacity and access modes only with a volume;
    VolumeAttributesClass ``<unset>`` from the spec; the beta class annotation first."""
    pvc = {"metadata": {"name": "c", "annotations": {
        "volume.beta.kubernetes.io/storage-class": "old"}},
        "spec": {"storageClassName": "new", "volumeMode": "Filesystem"},
        "status": {"phase": "Pending", "capacity": {"storage": "1Gi"},
                   "accessModes": ["ReadWriteOnce"]}}
    assert _cells("", "v1", "persistentvolumeclaims", pvc)[1:7] == [
        "Pending", "", "", "", "old", "<unset>"]


def test_pv_access_modes_order() -> None:
    """GetAccessModesAsString: RWO, ROX, RWX, RWOP in that order, each once."""
    pv = {"metadata": {"name": "v"}, "spec": {
        "capacity": {"storage": "1Gi"}, "persistentVolumeReclaimPolicy": "Retain",
        "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteMany"]},
        "status": {"phase": "Available"}}
    assert _cells("", "v1", "persistentvolumes", pv)[1:8] == [
        "1Gi", "RWO,RWX", "Retain", "Available", "", "", "<unset>"]


def test_storage_class_beta_default_annotation() -> None:
    """printStorageClass: storageutil.IsDefaultAnnotation also reads the beta key."""
    sc = {"metadata": {"name": "s", "annotations": {
        "storageclass.beta.kubernetes.io/is-default-class": "true"}}, "provisioner": "p"}
    assert _cells("storage.k8s.io", "v1", "storageclasses", sc)[0] == "s (default)"


# -- autoscaling, rbac --------------------------------------------------------------------

@pytest.mark.parametrize(("version", "obj", "targets"), [
    ("v2", {"metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 80}}}]}, "cpu: <unknown>/80%"),
    ("v1", {"targetCPUUtilizationPercentage": 50}, "cpu: <unknown>/50%"),
    ("v2", {"metrics": [{"type": "Pods", "pods": {"metric": {"name": "q"}, "target": {
        "type": "AverageValue", "averageValue": "1k"}}}] * 3}, "<unknown>/1k, <unknown>/1k "
                                                               "+ 1 more..."),
    ("v2", {}, "<none>"),
])
def test_hpa_targets(version: str, obj: dict[str, Any], targets: str) -> None:
    """formatHPAMetrics: ``name: current/target``; two shown then ``+ N more...``;
    ``<none>`` without metrics; MINPODS text, MAXPODS a number."""
    hpa = {"metadata": {"name": "h"}, "spec": {
        "scaleTargetRef": {"kind": "Deployment", "name": "d"}, "minReplicas": 1,
        "maxReplicas": 5, **obj}}
    assert _cells("autoscaling", version, "horizontalpodautoscalers", hpa)[1:6] == [
        "Deployment/d", targets, "1", 5, 0]


def test_cluster_role_binding_column_descriptions() -> None:
    """AddHandlers: ClusterRoleBindings' wide columns are described per clusterRoleBinding."""
    table = _table("rbac.authorization.k8s.io", "v1", "clusterrolebindings",
                   {"metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "r"}})
    assert table["columnDefinitions"][3]["description"] == "Users in the clusterRoleBinding"


# -- kinds that had only the default Name / Created At ------------------------------------

@pytest.mark.parametrize(("group", "resource", "obj", "cells"), [
    ("discovery.k8s.io", "endpointslices",
     {"addressType": "IPv4", "ports": [{"port": 80}, {"name": "x"}, {}, {"port": 1}],
      "endpoints": [{"addresses": ["10.0.0.1"]}]},
     ["x", "IPv4", "80,x,* + 1 more...", "10.0.0.1", "5m"]),
    ("", "resourcequotas", {"status": {"hard": {"pods": "10", "limits.cpu": "2"},
                                       "used": {"pods": "1"}}},
     ["x", "pods: 1/10", "limits.cpu: 0/2", "5m"]),
    ("", "podtemplates", {"template": {"metadata": {"labels": {"a": "b"}}, "spec": {
        "containers": [{"name": "c", "image": "i"}]}}}, ["x", "c", "i", "a=b"]),
    ("certificates.k8s.io", "certificatesigningrequests",
     {"spec": {"signerName": "s", "username": "u", "expirationSeconds": 3600},
      "status": {"conditions": [{"type": "Approved", "status": "True"}]}},
     ["x", "5m", "s", "u", "60m", "Approved"]),
    ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations",
     {"spec": {"type": "Exempt"}}, ["x", "Exempt", "<none>", "<none>", "<none>", "<none>", "5m"]),
    ("storage.k8s.io", "csidrivers", {"spec": {}},
     ["x", True, False, False, "<unset>", False, "<none>", "5m"]),
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings",
     {"spec": {"policyName": "p", "paramRef": {"name": "q"}}}, ["x", "p", "*/q", "5m"]),
])
def test_more_builtin_printers(group: str, resource: str, obj: dict[str, Any],
                               cells: list[Any]) -> None:
    """printEndpointSlice, printResourceQuota, printPodTemplate,
    printCertificateSigningRequest, printPriorityLevelConfiguration, printCSIDriver,
    printValidatingAdmissionPolicyBinding."""
    version = "v1"
    assert _cells(group, version, resource, {"metadata": {"name": "x"}, **obj}) == cells


def test_flow_schema_list_is_sorted_by_precedence() -> None:
    """printFlowSchemaList sorts by FlowSchemaSequence: matchingPrecedence, then name."""
    def schema(name: str, precedence: int) -> dict[str, Any]:
        return {"metadata": {"name": name}, "spec": {
            "matchingPrecedence": precedence, "priorityLevelConfiguration": {"name": "pl"}}}
    table = _table("flowcontrol.apiserver.k8s.io", "v1", "flowschemas",
                   schema("b", 500), schema("a", 1000), schema("c", 500), listed=True)
    assert [r["cells"][0] for r in table["rows"]] == ["b", "c", "a"]
    assert table["rows"][0]["cells"][1:6] == ["pl", 500, "<none>", "5m", "?"]


@pytest.mark.parametrize(("group", "version", "resource", "column", "start"), [
    ("apps", "v1", "deployments", "Selector",
     "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be "
     "the ones affected by this deployment."),
    ("apps", "v1", "replicasets", "Ready", "The number of ready replicas for this replica set."),
    ("networking.k8s.io", "v1", "networkpolicies", "Pod-Selector",
     "Selects the pods to which this NetworkPolicy object applies."),
    ("certificates.k8s.io", "v1", "certificatesigningrequests", "Requestor",
     "Base64-encoded PKCS#10 CSR data"),
])
def test_descriptions_from_older_api_versions(group: str, version: str, resource: str,
                                              column: str, start: str) -> None:
    """AddHandlers describes some columns with the SwaggerDoc of older versions
    (extensionsv1beta1.DeploymentSpec, extensionsv1beta1.ReplicaSetStatus,
    extensionsv1beta1.NetworkPolicySpec, certificatesv1beta1.CertificateSigningRequestSpec):
    k8s.io/api v0.32 types_swagger_doc_generated.go."""
    table = _table(group, version, resource, {"metadata": {"name": "x"}})
    described = {c["name"]: c["description"] for c in table["columnDefinitions"]}
    assert described[column] == start or (
        described[column].startswith(start) and "It must match" not in described[column])
