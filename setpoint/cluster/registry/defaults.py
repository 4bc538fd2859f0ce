"""Built-in defaults that clients rely on (the apiserver's ``SetDefaults_*`` functions).

Kubernetes applies these when it decodes a request body into its Go types. Go also writes
struct fields that have no ``omitempty`` even when they are empty, so a created Deployment
shows ``template.metadata.creationTimestamp: null`` and every container ``resources: {}``;
the server keeps plain dicts, so those empty fields are defaulted here too, to answer with
the same bytes. ``reset_status_on_create`` holds the strategies' create-time rules
(``PrepareForCreate``): the status a new object starts with (Namespace phase, Service
loadBalancer, claim phases...) and the Namespace finalizer; it runs after the creating
manager's fields are recorded, so none of it shows in managedFields.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import TYPE_CHECKING

from setpoint.cluster.registry import gomembers
from setpoint.cluster.registry.conversion_autoscaling import (
    default_horizontal_pod_autoscaler_v2,
)
from setpoint.cluster.registry.defaults_admissionpolicies import (
    default_validating_admission_policy,
    default_validating_admission_policy_binding,
)
from setpoint.cluster.registry.defaults_flowcontrol import (
    default_flow_schema,
    default_priority_level_configuration,
)
from setpoint.cluster.registry.defaults_storage import (
    default_csi_driver,
    default_pv,
    default_pvc,
    default_storage_class,
)
from setpoint.cluster.registry.defaults_workloads import (
    default_cron_job,
    default_daemon_set,
    default_deployment,
    default_job,
    default_replica_set,
    default_stateful_set,
)
from setpoint.cluster.registry.gozero import default_unset as _set
from setpoint.cluster.registry.gozero import struct_field as _dict
from setpoint.cluster.registry.podspec_defaults import (
    canonical_resource_list,
    default_pod,
    default_pod_template,
    pod_qos_class,
)
from setpoint.machinery.errors import bad_request
from setpoint.machinery.metatime import meta_time
from setpoint.machinery.objects import Obj
from setpoint.machinery.quantity import QuantityError

if TYPE_CHECKING:
    from setpoint.cluster.registry.types import ResourceType

Defaulter = Callable[[Obj], None]


def _spec(obj: Obj) -> Obj:
    return _dict(obj, "spec")


# -- core/v1 -------------------------------------------------------------------------------

def _pod(obj: Obj) -> None:
    default_pod(obj)
    if isinstance(obj.get("status"), dict):
        convert_pod_ips(obj["status"])
    # PodCondition's times are value fields: Go writes them even when unset (as null)
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict):
            condition.setdefault("lastProbeTime", None)
            condition.setdefault("lastTransitionTime", None)


def convert_pod_ips(status: Obj) -> None:
    """The v1 ↔ internal conversion of ``status.podIP``/``podIPs``
    (pkg/apis/core/v1/conversion.go, Convert_v1_PodStatus_To_core_PodStatus and back):
    ``podIP`` is authoritative, replacing ``podIPs`` when it differs from their first, and
    is written back as ``podIPs[0]``."""
    pod_ip = status.get("podIP") or ""
    ips = status.get("podIPs") or []
    first = ips[0].get("ip") if ips and isinstance(ips[0], dict) else None
    if pod_ip and first != pod_ip:
        status["podIPs"] = [{"ip": pod_ip}]
    elif not pod_ip and first:
        status["podIP"] = first


def _pod_template(obj: Obj) -> None:
    default_pod_template(_dict(obj, "template"))


def _replication_controller(obj: Obj) -> None:
    spec = _spec(obj)
    template = spec.get("template")
    labels = ((template or {}).get("metadata") or {}).get("labels")
    if labels is not None:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        meta = _dict(obj, "metadata")
        if not meta.get("labels"):
            meta["labels"] = dict(labels)
    _set(spec, "replicas", 1)
    if isinstance(template, dict):
        default_pod_template(template)


def _service(obj: Obj) -> None:
    spec = _spec(obj)
    _set(spec, "sessionAffinity", "None")
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        client_ip = _dict(_dict(spec, "sessionAffinityConfig"), "clientIP")
        _set(client_ip, "timeoutSeconds", 10800)
    _set(spec, "type", "ClusterIP")
    for port in spec.get("ports") or []:
        _set(port, "protocol", "TCP")
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
    kind = spec["type"]
    externally = kind in ("LoadBalancer", "NodePort") or (
        kind == "ClusterIP" and bool(spec.get("externalIPs")))
    if externally:
        _set(spec, "externalTrafficPolicy", "Cluster")
    if kind in ("NodePort", "LoadBalancer", "ClusterIP"):
        _set(spec, "internalTrafficPolicy", "Cluster")
    if kind == "LoadBalancer":
        _set(spec, "allocateLoadBalancerNodePorts", True)
    # LoadBalancerIPMode (on by default since 1.30): an ingress IP without a mode is a VIP
    status = obj.get("status")
    for ingress in ((status.get("loadBalancer") or {}).get("ingress") or []
                    if isinstance(status, dict) else []):
        if isinstance(ingress, dict) and ingress.get("ip") and ingress.get("ipMode") is None:
            ingress["ipMode"] = "VIP"
    # IP families are the REST allocator's (admission/services.py), set after the field
    # manager has tracked the write, as pkg/registry/core/service/storage does


def _secret(obj: Obj) -> None:
    _set(obj, "type", "Opaque")
    # v1 stringData is write-only: it is merged into data (winning over it) on decode.
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = _dict(obj, "data")
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()


def _namespace(obj: Obj) -> None:
    meta = _dict(obj, "metadata")
    if meta.get("name"):
        labels = meta.get("labels")
        if not isinstance(labels, dict):
            labels = meta["labels"] = {}
        labels["kubernetes.io/metadata.name"] = meta["name"]


def _endpoints(obj: Obj) -> None:
    for subset in obj.get("subsets") or []:
        for port in subset.get("ports") or []:
            _set(port, "protocol", "TCP")


_NODE_INFO_FIELDS = ("machineID", "systemUUID", "bootID", "kernelVersion", "osImage",
                     "containerRuntimeVersion", "kubeletVersion", "kubeProxyVersion",
                     "operatingSystem", "architecture")


def _node(obj: Obj) -> None:
    spec = _spec(obj)  # a Go struct: written as {} even when empty
    # v1 <-> internal (pkg/apis/core/v1/conversion.go, Convert_v1_NodeSpec_To_core_NodeSpec
    # and back): podCIDR is authoritative over podCIDRs, and is written back as their first
    pod_cidr, cidrs = spec.get("podCIDR") or "", spec.get("podCIDRs") or []
    if pod_cidr and (not cidrs or cidrs[0] != pod_cidr):
        spec["podCIDRs"] = [pod_cidr]
    elif not pod_cidr and cidrs and isinstance(cidrs[0], str) and cidrs[0]:
        spec["podCIDR"] = cidrs[0]
    status = _dict(obj, "status")
    for key in ("capacity", "allocatable"):
        if isinstance(status.get(key), dict):
            status[key] = canonical_resource_list(status[key])
    if status.get("allocatable") is None and status.get("capacity") is not None:
        status["allocatable"] = dict(status["capacity"])
    _set(_dict(_dict(status, "daemonEndpoints"), "kubeletEndpoint"), "Port", 0)
    info = _dict(status, "nodeInfo")
    for key in _NODE_INFO_FIELDS:
        info.setdefault(key, "")


def _limit_range(obj: Obj) -> None:
    for item in _spec(obj).get("limits") or []:
        for key in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
            if isinstance(item.get(key), dict):
                item[key] = canonical_resource_list(item[key])
        if item.get("type") != "Container":
            continue
        default = _dict(item, "default")
        request = _dict(item, "defaultRequest")
        for key, value in (item.get("max") or {}).items():
            default.setdefault(key, value)
        for key, value in default.items():
            request.setdefault(key, value)
        for key, value in (item.get("min") or {}).items():
            request.setdefault(key, value)


def _resource_quota(obj: Obj) -> None:
    spec = _spec(obj)
    if isinstance(spec.get("hard"), dict):
        spec["hard"] = canonical_resource_list(spec["hard"])


def _core_event(obj: Obj) -> None:
    # Struct and non-omitempty fields of core/v1 Event, always written by Go.
    _dict(obj, "involvedObject")
    _dict(obj, "source")
    for key in ("firstTimestamp", "lastTimestamp", "eventTime"):
        obj.setdefault(key, None)
    obj.setdefault("reportingComponent", "")
    obj.setdefault("reportingInstance", "")


def _events_v1_event(obj: Obj) -> None:
    obj.setdefault("eventTime", None)
    _dict(obj, "regarding")
    _dict(obj, "deprecatedSource")
    obj.setdefault("deprecatedFirstTimestamp", None)
    obj.setdefault("deprecatedLastTimestamp", None)


# -- other groups --------------------------------------------------------------------------

def _network_policy(obj: Obj) -> None:
    spec = _spec(obj)
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or []:
            for port in rule.get("ports") or []:
                _set(port, "protocol", "TCP")
    if not spec.get("policyTypes"):
        types = ["Ingress"]
        if spec.get("egress"):
            types.append("Egress")
        spec["policyTypes"] = types


def _ingress_class(obj: Obj) -> None:
    # networking/v1 SetDefaults_IngressClass
    params = _spec(obj).get("parameters")
    if isinstance(params, dict):
        _set(params, "scope", "Cluster")


def _endpoint_slice(obj: Obj) -> None:
    # (an EndpointSlice without ``endpoints`` and ``ports``, the controller's placeholder of
    # a Service with no ready pods, reads them as null: gomembers' rule for stored objects)
    for port in obj.get("ports") or []:
        if port.get("name") is None:
            port["name"] = ""
        _set(port, "protocol", "TCP")


def _rbac_binding(obj: Obj) -> None:
    _set(_dict(obj, "roleRef"), "apiGroup", "rbac.authorization.k8s.io")
    # rbac/v1 SetDefaults_Subject; a ServiceAccount's group stays "", which
    # ``apiGroup,omitempty`` leaves out of the object kube-apiserver stores and serves
    for subject in obj.get("subjects") or []:
        if not subject.get("apiGroup"):
            kind = subject.get("kind")
            if kind == "ServiceAccount":
                subject.pop("apiGroup", None)
            elif kind in ("User", "Group"):
                subject["apiGroup"] = "rbac.authorization.k8s.io"


def _webhook_common(hook: Obj) -> None:
    _set(hook, "failurePolicy", "Fail")
    _set(hook, "matchPolicy", "Equivalent")
    if hook.get("namespaceSelector") is None:
        hook["namespaceSelector"] = {}
    if hook.get("objectSelector") is None:
        hook["objectSelector"] = {}
    _set(hook, "timeoutSeconds", 10)
    for rule in hook.get("rules") or []:
        _set(rule, "scope", "*")
    service = (hook.get("clientConfig") or {}).get("service")
    if isinstance(service, dict):
        _set(service, "port", 443)


def _validating_webhooks(obj: Obj) -> None:
    for hook in obj.get("webhooks") or []:
        _webhook_common(hook)


def _mutating_webhooks(obj: Obj) -> None:
    for hook in obj.get("webhooks") or []:
        _webhook_common(hook)
        _set(hook, "reinvocationPolicy", "Never")


def _crd(obj: Obj) -> None:
    spec = _spec(obj)
    names = _dict(spec, "names")
    if not names.get("singular") and names.get("kind"):
        names["singular"] = str(names["kind"]).lower()
    if not names.get("listKind") and names.get("kind"):
        names["listKind"] = f"{names['kind']}List"
    conversion = spec.get("conversion")
    if conversion is None:
        spec["conversion"] = {"strategy": "None"}
    elif conversion.get("strategy") == "Webhook":
        service = ((conversion.get("webhook") or {}).get("clientConfig") or {}).get("service")
        if isinstance(service, dict):
            _set(service, "port", 443)
    status = _dict(obj, "status")
    if not status.get("storedVersions"):
        for version in spec.get("versions") or []:
            if version.get("storage"):
                status["storedVersions"] = [version.get("name")]
                break


def _priority_class(obj: Obj) -> None:
    _set(obj, "preemptionPolicy", "PreemptLowerPriority")


def _hpa_v1(obj: Obj) -> None:
    _set(_spec(obj), "minReplicas", 1)


def _lease(obj: Obj) -> None:
    # LeaseSpec is a value field: Go always writes it, if only as {}
    if not isinstance(obj.get("spec"), dict):
        obj["spec"] = {}


def _apiservice(obj: Obj) -> None:
    """kube-aggregator's ``SetDefaults_ServiceReference``: a Service's port is 443."""
    service = _spec(obj).get("service")
    if isinstance(service, dict):
        _set(service, "port", 443)


DEFAULTERS: dict[tuple[str, str], Defaulter] = {
    ("apiregistration.k8s.io", "APIService"): _apiservice,
    ("coordination.k8s.io", "Lease"): _lease,
    ("", "Pod"): _pod,
    ("", "PodTemplate"): _pod_template,
    ("", "ReplicationController"): _replication_controller,
    ("", "Service"): _service,
    ("", "Secret"): _secret,
    ("", "Namespace"): _namespace,
    ("", "PersistentVolumeClaim"): default_pvc,
    ("", "PersistentVolume"): default_pv,
    ("", "Endpoints"): _endpoints,
    ("", "Node"): _node,
    ("", "LimitRange"): _limit_range,
    ("", "ResourceQuota"): _resource_quota,
    ("", "Event"): _core_event,
    ("events.k8s.io", "Event"): _events_v1_event,
    ("apps", "Deployment"): default_deployment,
    ("apps", "ReplicaSet"): default_replica_set,
    ("apps", "DaemonSet"): default_daemon_set,
    ("apps", "StatefulSet"): default_stateful_set,
    ("batch", "Job"): default_job,
    ("batch", "CronJob"): default_cron_job,
    ("networking.k8s.io", "NetworkPolicy"): _network_policy,
    ("networking.k8s.io", "IngressClass"): _ingress_class,
    ("discovery.k8s.io", "EndpointSlice"): _endpoint_slice,
    ("rbac.authorization.k8s.io", "RoleBinding"): _rbac_binding,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): _rbac_binding,
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): _validating_webhooks,
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): _mutating_webhooks,
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"):
        default_validating_admission_policy,
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"):
        default_validating_admission_policy_binding,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _crd,
    ("storage.k8s.io", "StorageClass"): default_storage_class,
    ("storage.k8s.io", "CSIDriver"): default_csi_driver,
    ("scheduling.k8s.io", "PriorityClass"): _priority_class,
    ("autoscaling", "HorizontalPodAutoscaler"): default_horizontal_pod_autoscaler_v2,
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): default_flow_schema,
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"):
        default_priority_level_configuration,
}


def apply_defaults(rt: ResourceType, obj: Obj) -> None:
    """Fill in what the apiserver defaults for this built-in kind (in place).

    A resource quantity that does not parse is the decoder's 400 in Kubernetes, raised
    here with the decoder's wording."""
    fn = DEFAULTERS.get((rt.group, rt.kind))
    if (rt.group, rt.kind, rt.version) == ("autoscaling", "HorizontalPodAutoscaler", "v1"):
        # pkg/apis/autoscaling/v1/defaults.go defaults minReplicas only (the v2 metrics and
        # behavior defaults belong to v2 objects; v1 has no such fields)
        fn = _hpa_v1
    if fn is not None:
        try:
            fn(obj)
        except QuantityError as err:
            raise bad_request(f'{rt.kind} in version "{rt.version}" cannot be handled as a '
                              f"{rt.kind}: {err}") from None
    # the members decoding into the Go struct gives (the defaulters, which treat an absent
    # member as Go's zero, wrote theirs first, in the struct's order), and for a kind that is
    # stored (not a review, whose answer is built by its handler) the null of an absent
    # slice or map; an empty one stays empty through admission (mutating webhooks are sent
    # it so) and reads back null only once stored (genericstore's as_stored)
    gomembers.fill_kind(rt.group, rt.version, rt.kind, obj, decoded="get" in rt.verbs)


# -- create-time status (the strategies' PrepareForCreate) ---------------------------------

def _pod_status(obj: Obj) -> Obj:
    status: Obj = {"phase": "Pending"}
    if (obj.get("spec") or {}).get("schedulingGates"):
        status["conditions"] = [{
            "type": "PodScheduled", "status": "False", "lastProbeTime": None,
            "lastTransitionTime": meta_time(), "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates"}]
    status["qosClass"] = pod_qos_class(obj.get("spec") or {})
    return status


def _crd_status(obj: Obj) -> Obj:
    stored = [v.get("name") for v in (obj.get("spec") or {}).get("versions") or []
              if v.get("storage")][:1]
    return {"conditions": None, "acceptedNames": {"plural": "", "kind": ""},
            "storedVersions": stored}


# The status each kind starts with; Go writes its non-omitempty counters even when zero.
_STATUS_ON_CREATE: dict[tuple[str, str], Callable[[Obj], Obj]] = {
    ("apps", "Deployment"): lambda o: {},
    ("apps", "ReplicaSet"): lambda o: {"replicas": 0},
    ("apps", "StatefulSet"): lambda o: {"replicas": 0, "availableReplicas": 0},
    ("apps", "DaemonSet"): lambda o: {"currentNumberScheduled": 0, "numberMisscheduled": 0,
                                      "desiredNumberScheduled": 0, "numberReady": 0},
    ("batch", "Job"): lambda o: {},
    ("batch", "CronJob"): lambda o: {},
    ("policy", "PodDisruptionBudget"): lambda o: {"disruptionsAllowed": 0, "currentHealthy": 0,
                                                  "desiredHealthy": 0, "expectedPods": 0},
    ("", "ReplicationController"): lambda o: {"replicas": 0},
    ("", "Service"): lambda o: {"loadBalancer": {}},
    ("networking.k8s.io", "Ingress"): lambda o: {"loadBalancer": {}},
    # storage/volumeattachment/strategy.go: a zero VolumeAttachmentStatus
    ("storage.k8s.io", "VolumeAttachment"): lambda o: {"attached": False},
    # certificates strategy.go PrepareForCreate: an empty status (conditions: [], omitted)
    ("certificates.k8s.io", "CertificateSigningRequest"): lambda o: {},
    ("", "Namespace"): lambda o: {"phase": "Active"},
    ("", "Pod"): _pod_status,
    ("", "PersistentVolumeClaim"): lambda o: {"phase": "Pending"},
    ("", "PersistentVolume"): lambda o: {"phase": "Pending",
                                         "lastPhaseTransitionTime": meta_time()},
    ("autoscaling", "HorizontalPodAutoscaler"): lambda o: {"desiredReplicas": 0},
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _crd_status,
    # strategies that only reset it (``Status = ...Status{}``; gomembers fills its members)
    ("", "ResourceQuota"): lambda o: {},
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): lambda o: {},
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"): lambda o: {},
    ("apiregistration.k8s.io", "APIService"): lambda o: {},
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): lambda o: {},
}

# Kinds whose strategy replaces status on create (kept for callers that ask).
STATUS_RESET_ON_CREATE: set[tuple[str, str]] = set(_STATUS_ON_CREATE)


def reset_status_on_create(rt: ResourceType, obj: Obj) -> None:
    """Apply the create-time rules of the kind's strategy: a fresh status, and for
    Namespaces the ``kubernetes`` finalizer."""
    if rt.is_custom:
        if rt.has_status:
            obj.pop("status", None)
        return
    key = (rt.group, rt.kind)
    fn = _STATUS_ON_CREATE.get(key)
    if fn is not None:
        obj["status"] = fn(obj)
        # encoded from the reset Go struct: with the members it cannot be without
        gomembers.fill_member(rt.group, rt.version, rt.kind, obj, "status")
    if key == ("", "Namespace"):
        spec = _spec(obj)
        finalizers = list(spec.get("finalizers") or [])
        if "kubernetes" not in finalizers:
            finalizers.append("kubernetes")
        spec["finalizers"] = finalizers
