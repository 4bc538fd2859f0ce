"""Which printer each built-in kind uses, with its column definitions (built on first use)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from setpoint.cluster.endpoints import printers_cluster as pc
from setpoint.cluster.endpoints.printers import (
    APPS,
    CONTAINERS_COLUMN,
    CORE,
    IMAGES_COLUMN,
    META,
    Column,
    Printer,
    age_column,
    cron_job_cells,
    daemon_set_cells,
    deployment_cells,
    doc,
    job_cells,
    name_column,
    pod_cells,
    replica_set_cells,
    replication_controller_cells,
    stateful_set_cells,
)

_CONTAINERS, _IMAGES = CONTAINERS_COLUMN, IMAGES_COLUMN

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
        Column("Up-to-date", "string", doc(APPS + "DeploymentStatus", "updatedReplicas")),
        Column("Available", "string", doc(APPS + "DeploymentStatus", "availableReplicas")),
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
    ], doc(CORE + "ReplicationControllerSpec", "selector")), replication_controller_cells)
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
        Column("Completions", "string", doc(batch + "JobStatus", "succeeded")),
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
    ], pc.service_cells)
    p[("", "Namespace")] = Printer([name_column(), Column(
        "Status", "string", "The status of the namespace"), age_column()], pc.namespace_cells)
    p[("", "ConfigMap")] = Printer([name_column(), Column(
        "Data", "string", doc(CORE + "ConfigMap", "data")), age_column()], pc.config_map_cells)
    p[("", "Secret")] = Printer([
        name_column(), Column("Type", "string", doc(CORE + "Secret", "type")),
        Column("Data", "string", doc(CORE + "Secret", "data")), age_column()], pc.secret_cells)
    p[("", "ServiceAccount")] = Printer([name_column(), Column(
        "Secrets", "string", doc(CORE + "ServiceAccount", "secrets")), age_column()],
        pc.service_account_cells)
    p[("coordination.k8s.io", "Lease")] = Printer([name_column(), Column(
        "Holder", "string", doc("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity")),
        age_column()], pc.lease_cells)
    p[("", "Endpoints")] = Printer([name_column(), Column(
        "Endpoints", "string", doc(CORE + "Endpoints", "subsets")), age_column()],
        pc.endpoints_cells)
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
    ], pc.node_cells)
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
    ], pc.event_cells)
    pvc_spec, pvc_status = CORE + "PersistentVolumeClaimSpec", CORE + "PersistentVolumeClaimStatus"
    p[("", "PersistentVolumeClaim")] = Printer([
        name_column(), Column("Status", "string", doc(pvc_status, "phase")),
        Column("Volume", "string", doc(pvc_spec, "volumeName")),
        Column("Capacity", "string", doc(pvc_status, "capacity")),
        Column("Access Modes", "string", doc(pvc_status, "accessModes")),
        Column("StorageClass", "string", "StorageClass of the pvc"),
        Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
        age_column(), Column("VolumeMode", "string", doc(pvc_spec, "volumeMode"), 1),
    ], pc.pvc_cells)
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
    ], pc.pv_cells)
    p[("networking.k8s.io", "Ingress")] = Printer([
        name_column(),
        Column("Class", "string", "The name of the IngressClass resource that should be used "
                                  "for additional configuration"),
        Column("Hosts", "string", "Hosts that incoming requests are matched against before "
                                  "the ingress rule"),
        Column("Address", "string", "Address is a list containing ingress points for the "
                                    "load-balancer"),
        Column("Ports", "string", "Ports of TLS configurations that open"), age_column(),
    ], pc.ingress_cells)
    p[("networking.k8s.io", "NetworkPolicy")] = Printer([
        name_column(), Column("Pod-Selector", "string", doc(
            "io.k8s.api.networking.v1.NetworkPolicySpec", "podSelector")), age_column()],
        pc.network_policy_cells)
    p[("networking.k8s.io", "IngressClass")] = Printer([
        name_column(), Column("Controller", "string", "Controller that is responsible for "
                                                      "handling this class"),
        Column("Parameters", "string", "A reference to a resource with additional parameters"),
        age_column()], pc.ingress_class_cells)
    rbac = "rbac.authorization.k8s.io"
    created = [name_column(), Column("Created At", "date", doc(META + "ObjectMeta",
                                                               "creationTimestamp"))]
    p[(rbac, "Role")] = p[(rbac, "ClusterRole")] = Printer(created, pc.created_at_cells)
    for kind, noun in (("RoleBinding", "roleBinding"),
                       ("ClusterRoleBinding", "clusterRoleBinding")):
        p[(rbac, kind)] = Printer([
            name_column(), Column("Role", "string", doc(
                f"io.k8s.api.rbac.v1.{kind}", "roleRef")), age_column(),
            Column("Users", "string", f"Users in the {noun}", 1),
            Column("Groups", "string", f"Groups in the {noun}", 1),
            Column("ServiceAccounts", "string", f"ServiceAccounts in the {noun}", 1)],
            pc.role_binding_cells)
    sc = "io.k8s.api.storage.v1.StorageClass"
    p[("storage.k8s.io", "StorageClass")] = Printer([
        name_column(), Column("Provisioner", "string", doc(sc, "provisioner")),
        Column("ReclaimPolicy", "string", doc(sc, "reclaimPolicy")),
        Column("VolumeBindingMode", "string", doc(sc, "volumeBindingMode")),
        Column("AllowVolumeExpansion", "string", doc(sc, "allowVolumeExpansion")),
        age_column()], pc.storage_class_cells)
    p[("policy", "PodDisruptionBudget")] = Printer([
        name_column(),
        Column("Min Available", "string", "The minimum number of pods that must be available."),
        Column("Max Unavailable", "string", "The maximum number of pods that may be "
                                            "unavailable."),
        Column("Allowed Disruptions", "integer", "Calculated number of pods that may be "
                                                 "disrupted at this time."),
        age_column()], pc.pdb_cells)
    prio = "io.k8s.api.scheduling.v1.PriorityClass"
    p[("scheduling.k8s.io", "PriorityClass")] = Printer([
        name_column(), Column("Value", "integer", doc(prio, "value")),
        Column("Global-Default", "boolean", doc(prio, "globalDefault")), age_column(),
        Column("PreemptionPolicy", "string", doc(prio, "preemptionPolicy"))],
        pc.priority_class_cells)
    p[("apps", "ControllerRevision")] = Printer([
        name_column(), Column("Controller", "string", "Controller of the object"),
        Column("Revision", "string", doc(APPS + "ControllerRevision", "revision")),
        age_column()], pc.controller_revision_cells)
    hooks = [name_column(), Column("Webhooks", "integer", "Webhooks indicates the number of "
                                                          "webhooks registered in this "
                                                          "configuration"), age_column()]
    adm = "admissionregistration.k8s.io"
    p[(adm, "ValidatingWebhookConfiguration")] = Printer(hooks, pc.webhooks_cells)
    p[(adm, "MutatingWebhookConfiguration")] = Printer(hooks, pc.webhooks_cells)
    hpa = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec"
    p[("autoscaling", "HorizontalPodAutoscaler")] = Printer([
        name_column(), Column("Reference", "string", doc(hpa, "scaleTargetRef")),
        Column("Targets", "string", doc(hpa, "metrics")),
        Column("MinPods", "string", doc(hpa, "minReplicas")),
        Column("MaxPods", "string", doc(hpa, "maxReplicas")),
        Column("Replicas", "string", doc(
            "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus", "currentReplicas")),
        age_column()], pc.hpa_cells)
    p[("apiregistration.k8s.io", "APIService")] = Printer([
        name_column(),
        Column("Service", "string", "The reference to the service that hosts this API "
                                    "endpoint."),
        Column("Available", "string", "Whether this service is available."),
        age_column()], pc.apiservice_cells)
    p[("events.k8s.io", "Event")] = Printer(p[("", "Event")].columns, pc.events_v1_cells)
    _add_more(p)
    for (key, column), text in _OLDER_DOCS.items():
        printer = p[key]
        p[key] = replace(printer, columns=[replace(c, description=text) if c.name == column
                                           else c for c in printer.columns])
    return p


# Descriptions printers.go takes from the SwaggerDoc of older API versions
# (extensions/v1beta1, autoscaling/v2beta1, rbac/v1beta1, certificates/v1beta1,
# apps/v1beta1), which the served versions' OpenAPI no longer carries: k8s.io/api v0.32
# types_swagger_doc_generated.go.
_OLDER_DOCS: dict[tuple[tuple[str, str], str], str] = {
    (('apps', 'ReplicaSet'), 'Ready'): (
        'The number of ready replicas for this replica set.'),
    (('apps', 'ReplicaSet'), 'Selector'): (
        'Selector is a label query over pods that should match the replica count. If '
        'the selector is empty, it is defaulted to the labels present on the pod '
        'template. Label keys and values that must match in order to be controlled by '
        'this replica set. More info: '
        'https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label'
        '-selectors'),
    (('apps', 'DaemonSet'), 'Ready'): (
        'The number of nodes that should be running the daemon pod and have one or '
        'more of the daemon pod running and ready.'),
    (('apps', 'DaemonSet'), 'Selector'): (
        'A label query over pods that are managed by the daemon set. Must match in '
        'order to be controlled. If empty, defaulted to labels on Pod template. More '
        'info: '
        'https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label'
        '-selectors'),
    (('apps', 'Deployment'), 'Selector'): (
        'Label selector for pods. Existing ReplicaSets whose pods are selected by this '
        'will be the ones affected by this deployment.'),
    (('autoscaling', 'HorizontalPodAutoscaler'), 'Targets'): (
        'metrics contains the specifications for which to use to calculate the desired '
        'replica count (the maximum replica count across all metrics will be used).  '
        'The desired replica count is calculated multiplying the ratio between the '
        'target value and the current value by the current number of pods.  Ergo, '
        'metrics used must decrease as the pod count is increased, and vice-versa.  '
        'See the individual metric source types for more information about how each '
        'type of metric must respond.'),
    (('networking.k8s.io', 'NetworkPolicy'), 'Pod-Selector'): (
        'Selects the pods to which this NetworkPolicy object applies.  The array of '
        'ingress rules is applied to any pods selected by this field. Multiple network '
        'policies can select the same set of pods.  In this case, the ingress rules '
        'for each are combined additively. This field is NOT optional and follows '
        'standard label selector semantics. An empty podSelector matches all pods in '
        'this namespace.'),
    (('rbac.authorization.k8s.io', 'RoleBinding'), 'Role'): (
        'RoleRef can reference a Role in the current namespace or a ClusterRole in the '
        'global namespace. If the RoleRef cannot be resolved, the Authorizer must '
        'return an error.'),
    (('rbac.authorization.k8s.io', 'ClusterRoleBinding'), 'Role'): (
        'RoleRef can only reference a ClusterRole in the global namespace. If the '
        'RoleRef cannot be resolved, the Authorizer must return an error.'),
    (('certificates.k8s.io', 'CertificateSigningRequest'), 'SignerName'): (
        'Requested signer for the request. It is a qualified name in the form: '
        "`scope-hostname.io/name`. If empty, it will be defaulted:\n 1. If it's a "
        'kubelet client certificate, it is assigned\n    '
        '"kubernetes.io/kube-apiserver-client-kubelet".\n 2. If it\'s a kubelet serving '
        'certificate, it is assigned\n    "kubernetes.io/kubelet-serving".\n 3. '
        'Otherwise, it is assigned "kubernetes.io/legacy-unknown".\nDistribution of '
        'trust for signers happens out of band. You can select on this field using '
        '`spec.signerName`.'),
    (('certificates.k8s.io', 'CertificateSigningRequest'), 'Requestor'): (
        'Base64-encoded PKCS#10 CSR data'),
    (('certificates.k8s.io', 'CertificateSigningRequest'), 'Condition'): (
        'Conditions applied to the request, such as approval or denial.'),
    (('apps', 'ControllerRevision'), 'Revision'): (
        'revision indicates the revision of the state represented by Data.'),
}


def _add_more(p: dict[tuple[str, str], Printer]) -> None:
    """The printers of the kinds fewer clients list (same source, further down AddHandlers)."""
    created = doc(META + "ObjectMeta", "creationTimestamp")
    slice_ = "io.k8s.api.discovery.v1.EndpointSlice"
    p[("discovery.k8s.io", "EndpointSlice")] = Printer([
        name_column(), Column("AddressType", "string", doc(slice_, "addressType")),
        Column("Ports", "string", doc(slice_, "ports")),
        Column("Endpoints", "string", doc(slice_, "endpoints")), age_column()],
        pc.endpoint_slice_cells)
    p[("", "PodTemplate")] = Printer([
        name_column(), Column("Containers", "string", CONTAINERS_COLUMN.description),
        Column("Images", "string", IMAGES_COLUMN.description),
        Column("Pod Labels", "string", "The labels for the pod template.")],
        pc.pod_template_cells)
    p[("", "ComponentStatus")] = Printer([
        name_column(), Column("Status", "string", "Status of the component conditions"),
        Column("Message", "string", "Message of the component conditions"),
        Column("Error", "string", "Error of the component conditions")],
        pc.component_status_cells)
    p[("", "ResourceQuota")] = Printer([
        name_column(),
        Column("Request", "string", "Request represents a minimum amount of cpu/memory that "
                                    "a container may consume."),
        Column("Limit", "string", "Limits control the maximum amount of cpu/memory that a "
                                  "container may use independent of contention on the node."),
        age_column()], pc.resource_quota_cells)
    csr = "io.k8s.api.certificates.v1.CertificateSigningRequest"
    p[("certificates.k8s.io", "CertificateSigningRequest")] = Printer([
        name_column(), Column("Age", "string", created),
        Column("SignerName", "string", doc(csr + "Spec", "signerName")),
        Column("Requestor", "string", doc(csr + "Spec", "request")),
        Column("RequestedDuration", "string", doc(csr + "Spec", "expirationSeconds")),
        Column("Condition", "string", doc(csr + "Status", "conditions"))], pc.csr_cells)
    fc = "io.k8s.api.flowcontrol.v1."
    p[("flowcontrol.apiserver.k8s.io", "FlowSchema")] = Printer([
        name_column(), Column("PriorityLevel", "string", doc(
            fc + "PriorityLevelConfigurationReference", "name")),
        Column("MatchingPrecedence", "string", doc(fc + "FlowSchemaSpec",
                                                   "matchingPrecedence")),
        Column("DistinguisherMethod", "string", doc(fc + "FlowSchemaSpec",
                                                    "distinguisherMethod")),
        age_column(), Column("MissingPL", "string", "references a broken or non-existent "
                                                    "PriorityLevelConfiguration")],
        pc.flow_schema_cells, order=pc.flow_schema_order)
    queuing = fc + "QueuingConfiguration"
    p[("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration")] = Printer([
        name_column(), Column("Type", "string", doc(fc + "PriorityLevelConfigurationSpec",
                                                    "type")),
        Column("NominalConcurrencyShares", "string", doc(
            fc + "LimitedPriorityLevelConfiguration", "nominalConcurrencyShares")),
        Column("Queues", "string", doc(queuing, "queues")),
        Column("HandSize", "string", doc(queuing, "handSize")),
        Column("QueueLengthLimit", "string", doc(queuing, "queueLengthLimit")),
        age_column()], pc.priority_level_cells)
    # printers.go takes RuntimeClass's HANDLER description from ObjectMeta, which has none
    p[("node.k8s.io", "RuntimeClass")] = Printer([
        name_column(), Column("Handler", "string", ""), age_column()], pc.runtime_class_cells)
    storage = "io.k8s.api.storage.v1."
    p[("storage.k8s.io", "CSINode")] = Printer([
        name_column(), Column("Drivers", "integer", "Drivers indicates the number of CSI "
                                                    "drivers registered on the node"),
        age_column()], pc.csi_node_cells)
    driver = storage + "CSIDriverSpec"
    p[("storage.k8s.io", "CSIDriver")] = Printer([
        name_column(), Column("AttachRequired", "boolean", doc(driver, "attachRequired")),
        Column("PodInfoOnMount", "boolean", doc(driver, "podInfoOnMount")),
        Column("StorageCapacity", "boolean", doc(driver, "storageCapacity")),
        Column("TokenRequests", "string", doc(driver, "tokenRequests")),
        Column("RequiresRepublish", "boolean", doc(driver, "requiresRepublish")),
        Column("Modes", "string", doc(driver, "volumeLifecycleModes")), age_column()],
        pc.csi_driver_cells)
    capacity = storage + "CSIStorageCapacity"
    p[("storage.k8s.io", "CSIStorageCapacity")] = Printer([
        name_column(), Column("StorageClassName", "string", doc(capacity, "storageClassName")),
        Column("Capacity", "string", doc(capacity, "capacity"))], pc.csi_storage_capacity_cells)
    p[("storage.k8s.io", "VolumeAttachment")] = Printer([
        name_column(),
        Column("Attacher", "string", doc(storage + "VolumeAttachmentSpec", "attacher"),
               format="name"),
        Column("PV", "string", doc(storage + "VolumeAttachmentSource", "persistentVolumeName")),
        Column("Node", "string", doc(storage + "VolumeAttachmentSpec", "nodeName")),
        Column("Attached", "boolean", doc(storage + "VolumeAttachmentStatus", "attached")),
        age_column()], pc.volume_attachment_cells)
    adm = "admissionregistration.k8s.io"
    p[(adm, "ValidatingAdmissionPolicy")] = Printer([
        name_column(),
        Column("Validations", "integer", "Validations indicates the number of validation "
                                         "rules defined in this configuration"),
        Column("ParamKind", "string", "ParamKind specifies the kind of resources used to "
                                      "parameterize this policy"), age_column()],
        pc.admission_policy_cells)
    p[(adm, "ValidatingAdmissionPolicyBinding")] = Printer([
        name_column(),
        Column("PolicyName", "string", "PolicyName indicates the policy definition which the "
                                       "policy binding binded to"),
        Column("ParamRef", "string", "ParamRef indicates the param resource which sets the "
                                     "configration param"), age_column()],
        pc.admission_policy_binding_cells)


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
