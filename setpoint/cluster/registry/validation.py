"""Validation of objects beyond the schema (the apiserver's ``ValidateX`` functions).

Causes come out in Kubernetes' order and wording, duplicates included: on an update the
generic REST layer validates metadata once itself (``validateCommonFields``) and the kind's
``ValidateXUpdate`` validates it again, so a bad label on an update is reported more than
once in ``details.causes`` exactly as the real apiserver does (its summary message drops the
repeats). Every kind, built-in or custom, gets ObjectMeta validation with its own name rule.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from importlib import import_module
from typing import TYPE_CHECKING, Any

from setpoint.cluster.registry import kept_empty_slices
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry.types import ResourceType

Validator = Callable[[Obj], list[Cause]]
UpdateValidator = Callable[[Obj, Obj], list[Cause]]

MAX_SECRET_SIZE = 1024 * 1024
IMMUTABLE_WHEN_SET = "field is immutable when `immutable` is set"
_STANDARD_FINALIZERS = {"kubernetes", "orphan", "foregroundDeletion"}

# The name rule of each built-in kind that is not a DNS subdomain.
NAME_RULES: dict[tuple[str, str], names.NameValidator] = {
    ("", "Namespace"): names.name_is_dns_label,
    ("", "Service"): names.name_is_dns1035_label,
    # apps validation.go ValidateStatefulSetName: its pods' hostnames carry the name
    ("apps", "StatefulSet"): names.name_is_dns_label,
    ("rbac.authorization.k8s.io", "Role"): names.validate_path_segment_name,
    ("rbac.authorization.k8s.io", "ClusterRole"): names.validate_path_segment_name,
    ("rbac.authorization.k8s.io", "RoleBinding"): names.validate_path_segment_name,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): names.validate_path_segment_name,
    ("apiregistration.k8s.io", "APIService"): names.validate_path_segment_name,
    # certificates validation.go ValidateCertificateRequestName: any name at all
    ("certificates.k8s.io", "CertificateSigningRequest"): lambda name, prefix: [],
}

# Groups whose kinds validate metadata with apimachinery's ValidateObjectMeta, not core's (no
# rule for finalizers without a domain): CRDs and webhook configurations.
_GENERIC_META_GROUPS = {"apiextensions.k8s.io", "admissionregistration.k8s.io"}

# Kinds whose strategy does not validate metadata at all (only the generic layer does).
_NO_META_VALIDATION = {("", "Event")}


def _meta(rt: ResourceType, obj: Obj) -> list[Cause]:
    """``ValidateObjectMeta`` with the kind's name rule; built-in kinds also require
    finalizers without a domain to be one of Kubernetes' own."""
    meta = obj.get("metadata") or {}
    rule = NAME_RULES.get((rt.group, rt.kind), names.name_is_dns_subdomain)
    causes = names.validate_object_meta(meta, rt.namespaced, rule)
    if not rt.is_custom and rt.group not in _GENERIC_META_GROUPS:
        causes.extend(_kube_finalizers(meta))
    return causes


def _kube_finalizers(meta: Any) -> list[Cause]:
    """core validation's ValidateObjectMeta and ValidateObjectMetaUpdate: a finalizer without
    a domain must be one of Kubernetes' own, each at fldPath.Child("finalizers").Index(i)."""
    finalizers = meta.get("finalizers") if isinstance(meta, dict) else None
    return [fe.invalid(f"metadata.finalizers[{i}]", finalizer,
                       "name is neither a standard finalizer name nor is it fully qualified")
            for i, finalizer in enumerate(finalizers or [])
            if "/" not in str(finalizer) and finalizer not in _STANDARD_FINALIZERS]


def _common(rt: ResourceType, obj: Obj) -> list[Cause]:
    """What the generic REST layer checks for every kind (``ValidateObjectMetaAccessor``
    with path-segment names)."""
    return names.validate_object_meta(obj.get("metadata"), rt.namespaced,
                                      names.validate_path_segment_name)


# -- core/v1 -------------------------------------------------------------------------------

def _decoded_len(value: Any) -> int:
    if not isinstance(value, str):
        return 0
    try:
        return len(base64.b64decode(value, validate=True))
    except (binascii.Error, ValueError):
        return len(value)


def _config_map(obj: Obj) -> list[Cause]:
    causes: list[Cause] = []
    data = obj.get("data") or {}
    binary = obj.get("binaryData") or {}
    total = 0
    for key, value in data.items():
        errs = names.is_config_map_key(key)
        if errs:  # (no generator per valid key)
            causes.extend(fe.invalid(f"data[{key}]", key, m) for m in errs)
        if key in binary:
            causes.append(fe.invalid(f"data[{key}]", key,
                                     "duplicate of key present in binaryData"))
        total += len(str(value).encode())
    for key, value in binary.items():
        causes.extend(fe.invalid(f"binaryData[{key}]", key, m)
                      for m in names.is_config_map_key(key))
        total += _decoded_len(value)
    if total > MAX_SECRET_SIZE:
        causes.append(fe.too_long("[]", MAX_SECRET_SIZE))
    return causes


def _immutable_data(new: Obj, old: Obj, keys: tuple[str, ...]) -> list[Cause]:
    if not old.get("immutable"):
        return []
    causes = []
    if not new.get("immutable"):
        causes.append(fe.forbidden("immutable", IMMUTABLE_WHEN_SET))
    for key in keys:
        if (new.get(key) or None) != (old.get(key) or None):
            causes.append(fe.forbidden(key, IMMUTABLE_WHEN_SET))
    return causes


def _config_map_update(new: Obj, old: Obj) -> list[Cause]:
    return _immutable_data(new, old, ("data", "binaryData"))


def go_json_error(raw: bytes) -> str | None:
    """Why Go's ``json.Unmarshal`` into a ``map[string]interface{}`` rejects ``raw``,
    in Go's words (the common cases), or None when it is accepted."""
    text = raw.decode("utf-8", errors="replace")
    stripped = text.strip(" \t\r\n")
    if not stripped:
        return "unexpected end of JSON input"
    for literal in ("null", "true", "false"):
        if stripped[0] == literal[0]:
            for i, ch in enumerate(stripped[1:len(literal)], start=1):
                if ch != literal[i]:
                    return (f"invalid character '{ch}' in literal {literal} "
                            f"(expecting '{literal[i]}')")
            if len(stripped) < len(literal):
                return "unexpected end of JSON input"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        if err.pos >= len(text):
            return "unexpected end of JSON input"
        ch = text[err.pos]
        if err.msg.startswith("Extra data"):
            return f"invalid character '{ch}' after top-level value"
        if err.msg.startswith("Expecting property name"):
            return f"invalid character '{ch}' looking for beginning of object key string"
        if err.msg.startswith("Expecting ':'"):
            return f"invalid character '{ch}' after object key"
        if err.msg.startswith("Expecting ',' delimiter"):
            after = "object key:value pair" if "{" in text[:err.pos] else "array element"
            return f"invalid character '{ch}' after {after}"
        return f"invalid character '{ch}' looking for beginning of value"
    if value is None or isinstance(value, dict):
        return None
    kind = {bool: "bool", str: "string", list: "array"}.get(type(value), "number")
    return f"json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"


def _secret(obj: Obj) -> list[Cause]:
    causes: list[Cause] = []
    data = obj.get("data") or {}
    total = 0
    for key, value in data.items():
        causes.extend(fe.invalid(f"data[{key}]", key, m) for m in names.is_config_map_key(key))
        total += _decoded_len(value)
    if total > MAX_SECRET_SIZE:
        causes.append(fe.too_long("data", MAX_SECRET_SIZE))
    kind = obj.get("type") or ""
    if kind == "kubernetes.io/service-account-token":
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if not annotations.get("kubernetes.io/service-account.name"):
            causes.append(fe.required(
                "metadata.annotations[kubernetes.io/service-account.name]"))
    elif kind in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson"):
        key = ".dockercfg" if kind == "kubernetes.io/dockercfg" else ".dockerconfigjson"
        if key not in data:
            causes.append(fe.required(f"data[{key}]"))
        else:
            try:
                raw = base64.b64decode(data[key] or "")
            except (binascii.Error, ValueError):
                raw = b""
            err = go_json_error(raw)
            if err:
                causes.append(fe.invalid(f"data[{key}]", "<secret contents redacted>", err))
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            causes.append(fe.required("data[username]"))
            causes.append(fe.required("data[password]"))
    elif kind == "kubernetes.io/ssh-auth":
        if not data.get("ssh-privatekey"):
            causes.append(fe.required("data[ssh-privatekey]"))
    elif kind == "kubernetes.io/tls":
        for key in ("tls.crt", "tls.key"):
            if key not in data:
                causes.append(fe.required(f"data[{key}]"))
    return causes


def _secret_update(new: Obj, old: Obj) -> list[Cause]:
    causes = []
    if (new.get("type") or "") != (old.get("type") or ""):
        causes.append(fe.invalid("type", new.get("type") or "", "field is immutable"))
    return causes + _immutable_data(new, old, ("data",))


def _namespace(obj: Obj) -> list[Cause]:
    causes: list[Cause] = []
    for finalizer in (obj.get("spec") or {}).get("finalizers") or []:
        # (ValidateNamespace names the list for each one, without its index)
        causes.extend(_finalizer_name("spec.finalizers", finalizer))
    return causes


def _finalizer_name(path: str, finalizer: str) -> list[Cause]:
    """core validation's validateFinalizerName: a qualified name, and one of Kubernetes'
    own when it has no domain."""
    causes = [fe.invalid(path, finalizer, m) for m in names.is_qualified_name(finalizer)]
    if "/" not in finalizer and finalizer not in _STANDARD_FINALIZERS:
        causes.append(fe.invalid(
            path, finalizer, "name is neither a standard finalizer name nor is it fully qualified"))
    return causes


def _lease(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:
        causes.append(fe.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if isinstance(transitions, int) and transitions < 0:
        causes.append(fe.invalid("spec.leaseTransitions", transitions,
                                 "must be greater than or equal to 0"))
    if spec.get("preferredHolder") and not spec.get("strategy"):
        causes.append(fe.forbidden("spec.preferredHolder",
                                   "may only be specified if `strategy` is defined"))
    return causes


# -- tables and entry points ---------------------------------------------------------------

class _Rule:
    """A validator of ``setpoint.cluster.registry.<module>``, imported on its first call:
    the server serves before it has loaded any kind's rules, and loads a kind's (and their
    libraries: cryptography's x509 for CSRs, the schema checker for webhooks) on its first
    write (issue 12: most of the server's start was importing them)."""

    __slots__ = ("_fn", "_module", "_name")

    def __init__(self, module: str, name: str) -> None:
        self._module = f"setpoint.cluster.registry.{module}"
        self._name = name
        self._fn: Callable[..., list[Cause]] | None = None

    def __call__(self, *args: Any) -> list[Cause]:
        fn = self._fn
        if fn is None:
            fn = self._fn = getattr(import_module(self._module), self._name)
        return fn(*args)


_POD_TEMPLATE = _Rule("validation_pods", "validate_pod_template")
_SELECTOR_UPDATE = _Rule("validation_workloads", "validate_selector_update")
_STATEFUL_SET_UPDATE = _Rule("validation_workloads", "validate_stateful_set_update")
_TEMPLATE_GENERATION_UPDATE = _Rule("templategeneration", "validate_update")
_EVENT = _Rule("validation_events", "validate_event")
_EVENT_UPDATE = _Rule("validation_events", "validate_event_update")
_CSI_NODE_UPDATE = _Rule("validation_storage", "validate_csi_node_update")
_STATIC_POD_REFUSED = _Rule("validation_ephemeral", "static_pod_refused")
_EPHEMERAL_CONTAINERS_UPDATE = _Rule("validation_ephemeral",
                                     "validate_ephemeral_containers_update")
_POD_RESIZE = _Rule("podresize", "validate_pod_resize")
_STATUS = _Rule("validation_status", "validate_status")
_STATUS_UPDATE = _Rule("validation_status", "validate_status_update")



VALIDATORS: dict[tuple[str, str], Validator] = {
    ("", "ConfigMap"): _config_map,
    ("", "Secret"): _secret,
    ("", "Namespace"): _namespace,
    ("", "Service"): _Rule("validation_services", "validate_service"),
    ("", "Pod"): _Rule("validation_pods", "validate_pod"),
    ("", "PersistentVolumeClaim"): _Rule("validation_claims", "validate_claim"),
    ("", "PersistentVolume"): _Rule("validation_persistentvolumes", "validate_persistent_volume"),
    ("", "ResourceQuota"): _Rule("validation_resourcequota", "validate_resource_quota"),
    ("", "LimitRange"): _Rule("validation_limitrange", "validate_limit_range"),
    ("", "Endpoints"): _Rule("validation_endpoints", "validate_endpoints"),
    ("", "ReplicationController"):
        _Rule("validation_replicationcontrollers", "validate_replication_controller"),
    ("", "Node"): _Rule("validation_nodes", "validate_node"),
    ("", "PodTemplate"): lambda o: _POD_TEMPLATE(o.get("template"), "template"),
    ("coordination.k8s.io", "Lease"): _lease,
    ("apps", "Deployment"): _Rule("validation_workloads", "validate_deployment"),
    ("apps", "ReplicaSet"): _Rule("validation_workloads", "validate_replica_set"),
    ("apps", "StatefulSet"): _Rule("validation_workloads", "validate_stateful_set"),
    ("apps", "DaemonSet"): _Rule("validation_workloads", "validate_daemon_set"),
    ("batch", "Job"): _Rule("validation_jobs", "validate_job"),
    ("autoscaling", "HorizontalPodAutoscaler"):
        _Rule("validation_autoscaling", "validate_horizontal_pod_autoscaler"),
    ("apps", "ControllerRevision"): _Rule("validation_workloads", "validate_controller_revision"),
    ("policy", "PodDisruptionBudget"):
        _Rule("validation_disruption", "validate_pod_disruption_budget"),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"):
        _Rule("validation_admission", "validate_mutating_configuration"),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"):
        _Rule("validation_admission", "validate_validating_configuration"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"):
        _Rule("validation_policies", "validate_validating_admission_policy"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"):
        _Rule("validation_policies", "validate_validating_admission_policy_binding"),
    ("storage.k8s.io", "CSINode"): _Rule("validation_storage", "validate_csi_node"),
    ("storage.k8s.io", "StorageClass"): _Rule("validation_storage", "validate_storage_class"),
    ("storage.k8s.io", "VolumeAttachment"):
        _Rule("validation_storage", "validate_volume_attachment"),
    ("storage.k8s.io", "CSIDriver"): _Rule("validation_storage", "validate_csi_driver"),
    ("storage.k8s.io", "CSIStorageCapacity"):
        _Rule("validation_storage", "validate_csi_storage_capacity"),
    ("node.k8s.io", "RuntimeClass"): _Rule("validation_runtimeclasses", "validate_runtime_class"),
    ("discovery.k8s.io", "EndpointSlice"): _Rule("validation_discovery", "validate_endpoint_slice"),
    ("networking.k8s.io", "NetworkPolicy"):
        _Rule("validation_networking", "validate_network_policy"),
    ("networking.k8s.io", "Ingress"): _Rule("validation_networking", "validate_ingress"),
    ("networking.k8s.io", "IngressClass"): _Rule("validation_networking", "validate_ingress_class"),
    ("certificates.k8s.io", "CertificateSigningRequest"):
        _Rule("validation_certificates", "validate_certificate_signing_request"),
    ("apiregistration.k8s.io", "APIService"): _Rule("validation_apiservice", "validate_apiservice"),
    ("rbac.authorization.k8s.io", "Role"): _Rule("validation_rbac", "validate_role"),
    ("rbac.authorization.k8s.io", "ClusterRole"): _Rule("validation_rbac", "validate_cluster_role"),
    ("rbac.authorization.k8s.io", "RoleBinding"): _Rule("validation_rbac", "validate_role_binding"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"):
        _Rule("validation_rbac", "validate_cluster_role_binding"),
    ("scheduling.k8s.io", "PriorityClass"):
        _Rule("validation_priorityclasses", "validate_priority_class"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"):
        _Rule("validation_flowcontrol", "validate_flow_schema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"):
        _Rule("validation_flowcontrol", "validate_priority_level_configuration"),
}

UPDATE_VALIDATORS: dict[tuple[str, str], UpdateValidator] = {
    ("", "ConfigMap"): _config_map_update,
    ("", "Secret"): _secret_update,
    ("", "Service"): _Rule("validation_services", "validate_service_update"),
    ("", "Pod"): _Rule("validation_pods", "validate_pod_update"),
    ("", "PersistentVolumeClaim"): _Rule("validation_claims", "validate_claim_update"),
    ("", "PersistentVolume"):
        _Rule("validation_persistentvolumes", "validate_persistent_volume_update"),
    ("", "ResourceQuota"): _Rule("validation_resourcequota", "validate_resource_quota_update"),
    ("", "Node"): _Rule("validation_nodes", "validate_node_update"),
    ("apps", "Deployment"): _Rule("validation_workloads", "validate_selector_update"),
    ("apps", "ReplicaSet"): _Rule("validation_workloads", "validate_selector_update"),
    ("apps", "DaemonSet"): lambda n, o: (_SELECTOR_UPDATE(n, o)
                                         + _TEMPLATE_GENERATION_UPDATE(n, o)),
    ("apps", "StatefulSet"): lambda n, o: (_SELECTOR_UPDATE(n, o)
                                           + _STATEFUL_SET_UPDATE(n, o)),
    ("batch", "Job"): _Rule("validation_jobs", "validate_job_update"),
    ("apps", "ControllerRevision"):
        _Rule("validation_workloads", "validate_controller_revision_update"),
    ("batch", "CronJob"): _Rule("validation_jobs", "validate_cron_job_update"),
    ("autoscaling", "HorizontalPodAutoscaler"):
        _Rule("validation_autoscaling", "validate_horizontal_pod_autoscaler_update"),
    ("rbac.authorization.k8s.io", "RoleBinding"):
        _Rule("validation_rbac", "validate_binding_update"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"):
        _Rule("validation_rbac", "validate_binding_update"),
    ("scheduling.k8s.io", "PriorityClass"):
        _Rule("validation_priorityclasses", "validate_priority_class_update"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"):
        _Rule("validation_policies", "validate_validating_admission_policy_update"),
    ("storage.k8s.io", "StorageClass"):
        _Rule("validation_storage", "validate_storage_class_update"),
    ("storage.k8s.io", "VolumeAttachment"):
        _Rule("validation_storage", "validate_volume_attachment_update"),
    ("storage.k8s.io", "CSIDriver"): _Rule("validation_storage", "validate_csi_driver_update"),
    ("storage.k8s.io", "CSIStorageCapacity"):
        _Rule("validation_storage", "validate_csi_storage_capacity_update"),
    ("node.k8s.io", "RuntimeClass"):
        _Rule("validation_runtimeclasses", "validate_runtime_class_update"),
    ("discovery.k8s.io", "EndpointSlice"):
        _Rule("validation_discovery", "validate_endpoint_slice_update"),
    ("networking.k8s.io", "NetworkPolicy"):
        _Rule("validation_networking", "validate_network_policy_update"),
    ("networking.k8s.io", "Ingress"): _Rule("validation_networking", "validate_ingress_update"),
    ("networking.k8s.io", "IngressClass"):
        _Rule("validation_networking", "validate_ingress_class_update"),
    ("certificates.k8s.io", "CertificateSigningRequest"):
        _Rule("validation_certificates", "validate_certificate_signing_request_update"),
}

# Kinds whose update validator above validates the new object whole, with rules that
# depend on the old one (the Job's prefixed labels, the CronJob's TZ schedule, the
# EndpointSlice's deprecated IP address type, what a stored Ingress or NetworkPolicy
# already had wrong): an update does not run their create validation again.
WHOLE_UPDATE_VALIDATORS = {("batch", "Job"), ("batch", "CronJob"),
                           ("discovery.k8s.io", "EndpointSlice"),
                           ("networking.k8s.io", "Ingress"),
                           ("networking.k8s.io", "NetworkPolicy"),
                           ("certificates.k8s.io", "CertificateSigningRequest"),
                           ("storage.k8s.io", "VolumeAttachment"),
                           ("autoscaling", "HorizontalPodAutoscaler"),
                           ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
                           ("storage.k8s.io", "CSIDriver"),
                           ("storage.k8s.io", "CSIStorageCapacity"),
                           ("node.k8s.io", "RuntimeClass")}

# Kinds whose ValidateXUpdate validates the new object before its update rules: the Pod's
# (pkg/apis/core/validation/validation.go ValidatePodUpdate calls validatePodMetadataAndSpec
# before the rules on containers, activeDeadlineSeconds, tolerations and the spec), so its
# causes come first.
NEW_OBJECT_FIRST = {("", "Pod")}

# What a kind's ValidateXCreate adds to its validation of a new object only.
CREATE_ONLY_VALIDATORS: dict[tuple[str, str], Validator] = {
    ("", "Pod"): _Rule("validation_pods", "validate_pod_create"),
    ("batch", "CronJob"): _Rule("validation_jobs", "validate_cron_job_create"),
}


def _kind_create(rt: ResourceType, obj: Obj) -> list[Cause]:
    key = (rt.group, rt.kind)
    if rt.kind == "Event" and rt.group in ("", "events.k8s.io"):
        return _EVENT(rt, obj)
    causes = [] if key in _NO_META_VALIDATION else _meta(rt, obj)
    if not rt.is_custom:
        fn = VALIDATORS.get(key)
        if fn is not None:
            causes.extend(fn(obj))
    return causes


def validate(rt: ResourceType, obj: Obj) -> list[Cause]:
    """The causes a create of ``obj`` is rejected for (empty when valid): the kind's own
    validation, then, only if that passed, the generic metadata check every kind gets.

    Like the Job strategy's ``Validate``, this generates a Job's selector and template
    labels from its uid first (unless ``manualSelector``)."""
    if not rt.is_custom and (rt.group, rt.kind) == ("batch", "Job"):
        from setpoint.cluster.registry.validation_jobs import generate_job_selector
        generate_job_selector(obj)
    causes = _kind_create(rt, obj)
    create_only = None if rt.is_custom else CREATE_ONLY_VALIDATORS.get((rt.group, rt.kind))
    if create_only is not None:
        causes.extend(create_only(obj))
    if causes:
        return causes
    if _meta_validated_by_kind(rt):
        # _meta passed the same ValidateObjectMeta with the kind's name rule: of the generic
        # layer's check, only its name rule (path segments) can still find something
        return names.validate_object_meta_name(obj.get("metadata") or {},
                                               names.validate_path_segment_name)
    return _common(rt, obj)


def _meta_validated_by_kind(rt: ResourceType) -> bool:
    """Whether ``_kind_create`` ran ``_meta`` on the object."""
    return not (rt.kind == "Event" and rt.group in ("", "events.k8s.io")) and (
        (rt.group, rt.kind) not in _NO_META_VALIDATION)


def validate_update(rt: ResourceType, new: Obj, old: Obj) -> list[Cause]:
    """The causes an update from ``old`` to ``new`` is rejected for: the generic metadata
    checks, then the kind's ``ValidateXUpdate`` (metadata update rules, immutable fields,
    and the full validation of the new object)."""
    new_meta, old_meta = new.get("metadata"), old.get("metadata")
    # (the generic layer's check and the kind's own give the same causes: made once)
    meta_causes = names.validate_object_meta_update(new_meta, old_meta)
    causes = _common(rt, new) + meta_causes
    if rt.kind == "Event" and rt.group in ("", "events.k8s.io"):
        return causes + _EVENT_UPDATE(rt, new, old)
    if (rt.group, rt.kind) == ("storage.k8s.io", "CSINode"):
        # the strategy's ValidateCSINode, then ValidateCSINodeUpdate, which validates the
        # node again and leaves metadata updates to the generic layer
        return (causes + _kind_create(rt, new) + _meta(rt, new)
                + _CSI_NODE_UPDATE(new, old))
    causes.extend(meta_causes)
    if not rt.is_custom and rt.group not in _GENERIC_META_GROUPS:
        causes.extend(_kube_finalizers(new_meta))
    fn = None if rt.is_custom else UPDATE_VALIDATORS.get((rt.group, rt.kind))
    own: list[Cause] = []
    if not rt.is_custom:
        if (rt.group, rt.kind) in WHOLE_UPDATE_VALIDATORS:
            own = _meta(rt, new)
        else:
            own = _kind_create(rt, new)
    if (rt.group, rt.kind) in NEW_OBJECT_FIRST:
        causes.extend(own)
        own = []
    if fn is not None:
        # (the update rules compare as Semantic.DeepEqual does: an empty list the decoding
        # kept equals an absent one)
        causes.extend(fn(kept_empty_slices.semantic(rt.group, rt.kind, new), old))
    causes.extend(own)
    if not rt.is_custom:
        causes.extend(_STATUS(rt.group, rt.kind, new))
    return causes


def validate_update_with(rt: ResourceType, new: Obj, old: Obj,
                         fn: UpdateValidator) -> list[Cause]:
    """An update through a subresource whose strategy validates with ``fn`` (the new object
    whole, rules against the old one) after the generic metadata checks."""
    new_meta, old_meta = new.get("metadata"), old.get("metadata")
    meta_causes = names.validate_object_meta_update(new_meta, old_meta)
    causes = _common(rt, new) + meta_causes + meta_causes + _kube_finalizers(new_meta)
    return causes + fn(new, old) + _meta(rt, new)


def validate_namespace_finalize_update(rt: ResourceType, new: Obj, old: Obj) -> list[Cause]:
    """A ``namespaces/finalize`` write: the generic layer's metadata checks, then
    ``ValidateNamespaceFinalizeUpdate`` (the metadata update, then each of spec.finalizers at
    its index, where ``ValidateNamespace`` names the list)."""
    new_meta, old_meta = new.get("metadata"), old.get("metadata")
    meta_causes = names.validate_object_meta_update(new_meta, old_meta)
    causes = _common(rt, new) + meta_causes + meta_causes + _kube_finalizers(new_meta)
    for i, finalizer in enumerate((new.get("spec") or {}).get("finalizers") or []):
        causes.extend(_finalizer_name(f"spec.finalizers[{i}]", finalizer))
    return causes


def validate_ephemeral_containers_update(rt: ResourceType, new: Obj, old: Obj) -> list[Cause]:
    """A ``pods/ephemeralcontainers`` write: the generic layer's metadata checks, then
    ``ValidatePodEphemeralContainersUpdate`` (the metadata update, the new pod validated
    whole, the ephemeral containers kept) — never ``ValidatePodUpdate``, whose rule that
    the spec may not change would refuse every new ephemeral container."""
    new_meta, old_meta = new.get("metadata"), old.get("metadata")
    meta_causes = names.validate_object_meta_update(new_meta, old_meta)
    causes = _common(rt, new) + meta_causes
    static = _STATIC_POD_REFUSED(old)
    if static:
        return causes + static
    causes.extend(meta_causes)
    causes.extend(_kind_create(rt, new))
    return causes + _EPHEMERAL_CONTAINERS_UPDATE(new, old)


def validate_resize_update(rt: ResourceType, new: Obj, old: Obj) -> list[Cause]:
    """A ``pods/resize`` write: the generic layer's metadata checks, then
    ``ValidatePodResize`` (the metadata update, the new pod validated whole, then the
    resize rules, of which a static or windows pod gets only its refusal)."""
    new_meta, old_meta = new.get("metadata"), old.get("metadata")
    meta_causes = names.validate_object_meta_update(new_meta, old_meta)
    causes = _common(rt, new) + meta_causes
    own = _POD_RESIZE(new, old)
    if own and own[0].field == "":
        return causes + own
    causes.extend(meta_causes)
    causes.extend(_kind_create(rt, new))
    return causes + own


def validate_status_subresource_update(rt: ResourceType, new: Obj, old: Obj) -> list[Cause]:
    """The causes a ``/status`` write of a built-in kind is rejected for. A kind whose
    status strategy has its own ``ValidateUpdate`` (pods: ``ValidatePodStatusUpdate``,
    nodes: ``ValidateNodeUpdate``, ...) gets the generic layer's metadata checks, the
    strategy's ``ValidateObjectMetaUpdate`` and its status rules — never the kind's
    whole validation, whose spec rules a status write cannot touch; the other kinds get
    their update validation."""
    from setpoint.cluster.registry.validation_status import has_status_update_validation
    if not has_status_update_validation(rt.group, rt.kind):
        return validate_update(rt, new, old)
    new_meta, old_meta = new.get("metadata"), old.get("metadata")
    meta_causes = names.validate_object_meta_update(new_meta, old_meta)
    causes = _common(rt, new) + meta_causes + meta_causes
    return causes + _STATUS_UPDATE(rt.group, rt.kind, new, old)
