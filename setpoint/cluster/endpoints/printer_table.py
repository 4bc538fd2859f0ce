"""Which printer each built-in kind uses, with its column definitions (built on first use)."""

from __future__ import annotations

from typing import Any

from setpoint.cluster.endpoints.printers import (
    APPS,
    CORE,
    META,
    Column,
    Printer,
    age_column,
    apiservice_cells,
    config_map_cells,
    controller_revision_cells,
    created_at_cells,
    cron_job_cells,
    daemon_set_cells,
    deployment_cells,
    doc,
    endpoints_cells,
    event_cells,
    hpa_cells,
    ingress_cells,
    ingress_class_cells,
    job_cells,
    lease_cells,
    name_column,
    namespace_cells,
    network_policy_cells,
    node_cells,
    pdb_cells,
    pod_cells,
    priority_class_cells,
    pv_cells,
    pvc_cells,
    replica_set_cells,
    role_binding_cells,
    secret_cells,
    service_account_cells,
    service_cells,
    stateful_set_cells,
    storage_class_cells,
    webhooks_cells,
)
from setpoint.cluster.endpoints.printers import (
    CONTAINERS_COLUMN as _CONTAINERS,
)
from setpoint.cluster.endpoints.printers import (
    IMAGES_COLUMN as _IMAGES,
)

# -- the table ----------------------------------------------------------------------------

def _workload_columns(first: list[Column], selector_doc: str | None) -> list[Column]:
    cols = [name_column(), *first, age_column(), _CONTAINERS, _IMAGES]
    if selector_doc is not None:
        cols.append(Column("Selector", "string", selector_doc, 1))
    return cols


def _build() -> dict[tuple[str, str], Printer]:
    ready = "Number of the pod with ready state"
    p: dict[tuple[str, str], Printer] = {}
    p[("", "Pod")] = Printer([
        name_column(),
        Column("Ready", "string", "The aggregate readiness state of this pod for accepting "
                                  "traffic."),
        Column("Status", "string", "The aggregate status of the containers in this pod."),
        Column("Restarts", "string", "The number of times the containers in this pod have "
                                     "been restarted and when the last container in this pod "
                                     "has restarted."),
        age_column(),
        Column("IP", "string", doc(CORE + "PodStatus", "podIP"), 1),
        Column("Node", "string", doc(CORE + "PodSpec", "nodeName"), 1),
        Column("Nominated Node", "string", doc(CORE + "PodStatus", "nominatedNodeName"), 1),
        Column("Readiness Gates", "string", doc(CORE + "PodSpec", "readinessGates"), 1),
    ], pod_cells)
    p[("apps", "Deployment")] = Printer(_workload_columns([
        Column("Ready", "string", ready),
        Column("Up-to-date", "integer", doc(APPS + "DeploymentStatus", "updatedReplicas")),
        Column("Available", "integer", doc(APPS + "DeploymentStatus", "availableReplicas")),
    ], doc(APPS + "DeploymentSpec", "selector")), deployment_cells)
    rs_cols = [Column("Desired", "integer", doc(APPS + "ReplicaSetSpec", "replicas")),
               Column("Current", "integer", doc(APPS + "ReplicaSetStatus", "replicas")),
               Column("Ready", "integer", doc(APPS + "ReplicaSetStatus", "readyReplicas"))]
    p[("apps", "ReplicaSet")] = Printer(
        _workload_columns(rs_cols, doc(APPS + "ReplicaSetSpec", "selector")), replica_set_cells)
    p[("", "ReplicationController")] = Printer(_workload_columns([
        Column("Desired", "integer", doc(CORE + "ReplicationControllerSpec", "replicas")),
        Column("Current", "integer", doc(CORE + "ReplicationControllerStatus", "replicas")),
        Column("Ready", "integer", doc(CORE + "ReplicationControllerStatus", "readyReplicas")),
    ], doc(CORE + "ReplicationControllerSpec", "selector")), replica_set_cells)
    p[("apps", "StatefulSet")] = Printer(
        _workload_columns([Column("Ready", "string", ready)], None), stateful_set_cells)
    ds = APPS + "DaemonSetStatus"
    p[("apps", "DaemonSet")] = Printer([
        name_column(),
        Column("Desired", "integer", doc(ds, "desiredNumberScheduled")),
        Column("Current", "integer", doc(ds, "currentNumberScheduled")),
        Column("Ready", "integer", doc(ds, "numberReady")),
        Column("Up-to-date", "integer", doc(ds, "updatedNumberScheduled")),
        Column("Available", "integer", doc(ds, "numberAvailable")),
        Column("Node Selector", "string", doc(CORE + "PodSpec", "nodeSelector")),
        age_column(), _CONTAINERS, _IMAGES,
        Column("Selector", "string", doc(APPS + "DaemonSetSpec", "selector"), 1),
    ], daemon_set_cells)
    batch = "io.k8s.api.batch.v1."
    p[("batch", "Job")] = Printer([
        name_column(),
        Column("Status", "string", "Status of the job."),
        Column("Completions", "string", "The completion status of the job."),
        Column("Duration", "string", "Time required to complete the job."),
        age_column(), _CONTAINERS, _IMAGES,
        Column("Selector", "string", doc(batch + "JobSpec", "selector"), 1),
    ], job_cells)
    p[("batch", "CronJob")] = Printer([
        name_column(),
        Column("Schedule", "string", doc(batch + "CronJobSpec", "schedule")),
        Column("Timezone", "string", doc(batch + "CronJobSpec", "timeZone")),
        Column("Suspend", "boolean", doc(batch + "CronJobSpec", "suspend")),
        Column("Active", "integer", doc(batch + "CronJobStatus", "active")),
        Column("Last Schedule", "string", doc(batch + "CronJobStatus", "lastScheduleTime")),
        age_column(), _CONTAINERS, _IMAGES,
        Column("Selector", "string", doc(batch + "JobSpec", "selector"), 1),
    ], cron_job_cells)
    svc = CORE + "ServiceSpec"
    p[("", "Service")] = Printer([
        name_column(), Column("Type", "string", doc(svc, "type")),
        Column("Cluster-IP", "string", doc(svc, "clusterIP")),
        Column("External-IP", "string", doc(svc, "externalIPs")),
        Column("Port(s)", "string", doc(svc, "ports")), age_column(),
        Column("Selector", "string", doc(svc, "selector"), 1),
    ], service_cells)
    p[("", "Namespace")] = Printer([name_column(), Column(
        "Status", "string", "The status of the namespace"), age_column()], namespace_cells)
    p[("", "ConfigMap")] = Printer([name_column(), Column(
        "Data", "string", doc(CORE + "ConfigMap", "data")), age_column()], config_map_cells)
    p[("", "Secret")] = Printer([
        name_column(), Column("Type", "string", doc(CORE + "Secret", "type")),
        Column("Data", "string", doc(CORE + "Secret", "data")), age_column()], secret_cells)
    p[("", "ServiceAccount")] = Printer([name_column(), Column(
        "Secrets", "string", doc(CORE + "ServiceAccount", "secrets")), age_column()],
        service_account_cells)
    p[("coordination.k8s.io", "Lease")] = Printer([name_column(), Column(
        "Holder", "string", doc("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity")),
        age_column()], lease_cells)
    p[("", "Endpoints")] = Printer([name_column(), Column(
        "Endpoints", "string", doc(CORE + "Endpoints", "subsets")), age_column()], endpoints_cells)
    info, node_status = CORE + "NodeSystemInfo", CORE + "NodeStatus"
    p[("", "Node")] = Printer([
        name_column(), Column("Status", "string", "The status of the node"),
        Column("Roles", "string", "The roles of the node"), age_column(),
        Column("Version", "string", doc(info, "kubeletVersion")),
        Column("Internal-IP", "string", doc(node_status, "addresses"), 1),
        Column("External-IP", "string", doc(node_status, "addresses"), 1),
        Column("OS-Image", "string", doc(info, "osImage"), 1),
        Column("Kernel-Version", "string", doc(info, "kernelVersion"), 1),
        Column("Container-Runtime", "string", doc(info, "containerRuntimeVersion"), 1),
    ], node_cells)
    ev = CORE + "Event"
    p[("", "Event")] = Printer([
        Column("Last Seen", "string", doc(ev, "lastTimestamp")),
        Column("Type", "string", doc(ev, "type")),
        Column("Reason", "string", doc(ev, "reason")),
        Column("Object", "string", doc(ev, "involvedObject")),
        Column("Subobject", "string", doc(CORE + "ObjectReference", "fieldPath"), 1),
        Column("Source", "string", doc(ev, "source"), 1),
        Column("Message", "string", doc(ev, "message")),
        Column("First Seen", "string", doc(ev, "firstTimestamp"), 1),
        Column("Count", "string", doc(ev, "count"), 1),
        Column("Name", "string", doc(META + "ObjectMeta", "name"), 1, "name"),
    ], event_cells)
    pvc_spec, pvc_status = CORE + "PersistentVolumeClaimSpec", CORE + "PersistentVolumeClaimStatus"
    p[("", "PersistentVolumeClaim")] = Printer([
        name_column(), Column("Status", "string", doc(pvc_status, "phase")),
        Column("Volume", "string", doc(pvc_spec, "volumeName")),
        Column("Capacity", "string", doc(pvc_status, "capacity")),
        Column("Access Modes", "string", doc(pvc_status, "accessModes")),
        Column("StorageClass", "string", "StorageClass of the pvc"),
        Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
        age_column(), Column("VolumeMode", "string", doc(pvc_spec, "volumeMode"), 1),
    ], pvc_cells)
    pv_spec = CORE + "PersistentVolumeSpec"
    p[("", "PersistentVolume")] = Printer([
        name_column(), Column("Capacity", "string", doc(pv_spec, "capacity")),
        Column("Access Modes", "string", doc(pv_spec, "accessModes")),
        Column("Reclaim Policy", "string", doc(pv_spec, "persistentVolumeReclaimPolicy")),
        Column("Status", "string", doc(CORE + "PersistentVolumeStatus", "phase")),
        Column("Claim", "string", doc(pv_spec, "claimRef")),
        Column("StorageClass", "string", "StorageClass of the pv"),
        Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
        Column("Reason", "string", doc(CORE + "PersistentVolumeStatus", "reason")),
        age_column(), Column("VolumeMode", "string", doc(pv_spec, "volumeMode"), 1),
    ], pv_cells)
    p[("networking.k8s.io", "Ingress")] = Printer([
        name_column(),
        Column("Class", "string", "The name of the IngressClass resource that should be used "
                                  "for additional configuration"),
        Column("Hosts", "string", "Hosts that incoming requests are matched against before "
                                  "the ingress rule"),
        Column("Address", "string", "Address is a list containing ingress points for the "
                                    "load-balancer"),
        Column("Ports", "string", "Ports of TLS configurations that open"), age_column(),
    ], ingress_cells)
    p[("networking.k8s.io", "NetworkPolicy")] = Printer([
        name_column(), Column("Pod-Selector", "string", doc(
            "io.k8s.api.networking.v1.NetworkPolicySpec", "podSelector")), age_column()],
        network_policy_cells)
    p[("networking.k8s.io", "IngressClass")] = Printer([
        name_column(), Column("Controller", "string", "Controller that is responsible for "
                                                      "handling this class"),
        Column("Parameters", "string", "A reference to a resource with additional parameters"),
        age_column()], ingress_class_cells)
    rbac = "rbac.authorization.k8s.io"
    created = [name_column(), Column("Created At", "date", doc(META + "ObjectMeta",
                                                               "creationTimestamp"))]
    p[(rbac, "Role")] = p[(rbac, "ClusterRole")] = Printer(created, created_at_cells)
    binding = [name_column(), Column("Role", "string", doc(
        "io.k8s.api.rbac.v1.RoleBinding", "roleRef")), age_column(),
        Column("Users", "string", "Users in the roleBinding", 1),
        Column("Groups", "string", "Groups in the roleBinding", 1),
        Column("ServiceAccounts", "string", "ServiceAccounts in the roleBinding", 1)]
    bindings = Printer(binding, role_binding_cells)
    p[(rbac, "RoleBinding")] = p[(rbac, "ClusterRoleBinding")] = bindings
    sc = "io.k8s.api.storage.v1.StorageClass"
    p[("storage.k8s.io", "StorageClass")] = Printer([
        name_column(), Column("Provisioner", "string", doc(sc, "provisioner")),
        Column("ReclaimPolicy", "string", doc(sc, "reclaimPolicy")),
        Column("VolumeBindingMode", "string", doc(sc, "volumeBindingMode")),
        Column("AllowVolumeExpansion", "string", doc(sc, "allowVolumeExpansion")),
        age_column()], storage_class_cells)
    p[("policy", "PodDisruptionBudget")] = Printer([
        name_column(),
        Column("Min Available", "string", "The minimum number of pods that must be available."),
        Column("Max Unavailable", "string", "The maximum number of pods that may be "
                                            "unavailable."),
        Column("Allowed Disruptions", "integer", "Calculated number of pods that may be "
                                                 "disrupted at this time."),
        age_column()], pdb_cells)
    pc = "io.k8s.api.scheduling.v1.PriorityClass"
    p[("scheduling.k8s.io", "PriorityClass")] = Printer([
        name_column(), Column("Value", "integer", doc(pc, "value")),
        Column("Global-Default", "boolean", doc(pc, "globalDefault")), age_column(),
        Column("PreemptionPolicy", "string", doc(pc, "preemptionPolicy"))], priority_class_cells)
    p[("apps", "ControllerRevision")] = Printer([
        name_column(), Column("Controller", "string", "Controller of the object"),
        Column("Revision", "string", doc(APPS + "ControllerRevision", "revision")),
        age_column()], controller_revision_cells)
    hooks = [name_column(), Column("Webhooks", "integer", "Webhooks indicates the number of "
                                                          "webhooks registered in this "
                                                          "configuration"), age_column()]
    adm = "admissionregistration.k8s.io"
    p[(adm, "ValidatingWebhookConfiguration")] = Printer(hooks, webhooks_cells)
    p[(adm, "MutatingWebhookConfiguration")] = Printer(hooks, webhooks_cells)
    hpa = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec"
    p[("autoscaling", "HorizontalPodAutoscaler")] = Printer([
        name_column(), Column("Reference", "string", doc(hpa, "scaleTargetRef")),
        Column("Targets", "string", doc(hpa, "metrics")),
        Column("MinPods", "string", doc(hpa, "minReplicas")),
        Column("MaxPods", "string", doc(hpa, "maxReplicas")),
        Column("Replicas", "string", doc(
            "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus", "currentReplicas")),
        age_column()], hpa_cells)
    p[("apiregistration.k8s.io", "APIService")] = Printer([
        name_column(),
        Column("Service", "string", "The reference to the service that hosts this API "
                                    "endpoint."),
        Column("Available", "string", "Whether this service is available."),
        age_column()], apiservice_cells)
    return p


class _Printers(dict[tuple[str, str], Printer]):
    """The printer table, built on first use (descriptions need the definitions loaded)."""

    _built = False

    def _ensure(self) -> None:
        if not self._built:
            self.update(_build())
            self._built = True

    def get(self, key: tuple[str, str], default: Any = None) -> Any:
        self._ensure()
        return super().get(key, default)

    def __getitem__(self, key: tuple[str, str]) -> Printer:
        self._ensure()
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self._ensure()
        return super().__contains__(key)


PRINTERS = _Printers()
