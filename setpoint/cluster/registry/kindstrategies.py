"""The strategies of the built-in kinds whose rules differ from the generic ``Strategy``
(strategy.py), each as its pkg/registry/<group>/<kind>/strategy.go, and ``strategy_for``: the
strategy a built-in kind is served with."""

from __future__ import annotations

import datetime
import uuid
from types import ModuleType
from typing import TYPE_CHECKING

from setpoint.cluster.registry import conversion_autoscaling as hpa_conversion
from setpoint.cluster.registry import (
    defaults_workloads,
    node_disabled_fields,
    templategeneration,
    validation,
    volumeattributesclass,
    warnings_deprecated,
)
from setpoint.cluster.registry.kept_empty_slices import omit_kept_empty_slices, pod_spec_of
from setpoint.cluster.registry.pod_apparmor import apply_apparmor_version_skew
from setpoint.cluster.registry.pod_disabled_fields import (
    POD_TEMPLATE_PATHS,
    drop_disabled_pod_spec_fields,
    drop_disabled_pod_status_fields,
    drop_disabled_template_fields,
)
from setpoint.cluster.registry.strategy import Strategy
from setpoint.cluster.registry.validation_podstatus import prepare_pod_status_update
from setpoint.cluster.registry.warnings_nodelabels import NODE_LABEL_WARNINGS
from setpoint.cluster.registry.warnings_pods import pod_warnings_on_create
from setpoint.cluster.registry.warnings_services import service_warnings
from setpoint.cluster.registry.warnings_storage import (
    persistent_volume_claim_warnings,
    persistent_volume_warnings,
)
from setpoint.cluster.registry.warnings_workloads import (
    workload_warnings_on_create,
    workload_warnings_on_update,
)
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry.types import ResourceType


class NamespaceStrategy(Strategy):
    """Namespaces: spec.finalizers change only through ``/finalize``."""

    def canonicalize(self, rt: ResourceType, obj: Obj) -> None:
        """The kubernetes.io/metadata.name label is the name, set here because a generated
        name is not known yet when the request is defaulted (namespace/strategy.go
        Canonicalize); a dry run's answer has it too."""
        meta = obj["metadata"]
        labels = meta.get("labels")
        if not isinstance(labels, dict):
            labels = meta["labels"] = {}
        labels["kubernetes.io/metadata.name"] = meta.get("name", "")

    def prepare_for_update(self, rt: ResourceType, new: Obj, old: Obj) -> None:
        super().prepare_for_update(rt, new, old)
        old_finalizers = (old.get("spec") or {}).get("finalizers")
        spec = dict(new.get("spec") or {})
        if old_finalizers is None:
            spec.pop("finalizers", None)
        else:
            spec["finalizers"] = old_finalizers
        new["spec"] = spec


# The metadata metav1.ResetObjectMetaForStatus takes from the stored object.
_RESET_FOR_STATUS = ("deletionTimestamp", "generation", "selfLink", "labels", "annotations",
                     "finalizers", "ownerReferences")


class PodStrategy(Strategy):
    """Pods: the fields of gates off in 1.32 are dropped unless already in use; a status
    write keeps the QoS class fixed at creation when it leaves it out; an
    ``/ephemeralcontainers`` write changes only ``spec.ephemeralContainers``."""

    def prepare_for_create(self, rt: ResourceType, obj: Obj,
                           warnings: list[str] | None = None) -> None:
        super().prepare_for_create(rt, obj, warnings)
        drop_disabled_pod_spec_fields(obj.get("spec"), None)
        skew_warnings = apply_apparmor_version_skew(obj)
        if warnings is not None:
            warnings.extend(skew_warnings)

    def prepare_for_update(self, rt: ResourceType, new: Obj, old: Obj) -> None:
        super().prepare_for_update(rt, new, old)
        drop_disabled_pod_spec_fields(new.get("spec"), old.get("spec"))

    def canonicalize(self, rt: ResourceType, obj: Obj) -> None:
        omit_kept_empty_slices(obj.get("spec"))

    def warnings_on_create(self, rt: ResourceType, obj: Obj) -> list[str]:
        return pod_warnings_on_create(obj)

    # (WarningsOnUpdate: none; pkg/registry/core/pod/strategy.go skips them on a path that
    # controllers write often)

    def prepare_for_ephemeral_containers_update(self, rt: ResourceType, new: Obj,
                                                old: Obj) -> Obj:
        """podEphemeralContainersStrategy.PrepareForUpdate (dropNonEphemeralContainerUpdates,
        pkg/registry/core/pod/strategy.go): the stored spec with the new ephemeral
        containers, the stored status, the metadata ResetObjectMetaForStatus keeps; the
        rest of the new metadata (managed fields, resourceVersion) stays."""
        out = {k: v for k, v in new.items() if k not in ("spec", "status")}
        spec = dict(old.get("spec") or {})
        spec.pop("ephemeralContainers", None)
        ephemeral = (new.get("spec") or {}).get("ephemeralContainers")
        if ephemeral is not None:
            spec["ephemeralContainers"] = ephemeral
        out["spec"] = spec
        if "status" in old:
            out["status"] = old["status"]
        meta = dict(new.get("metadata") or {})
        for key in _RESET_FOR_STATUS:
            if key in old["metadata"]:
                meta[key] = old["metadata"][key]
            else:
                meta.pop(key, None)
        out["metadata"] = meta
        return out

    def prepare_for_resize_update(self, rt: ResourceType, new: Obj, old: Obj) -> Obj:
        """podResizeStrategy.PrepareForUpdate (pkg/registry/core/pod/strategy.go): the
        stored pod with the new containers' resources and resize policies
        (dropNonResizeUpdates), ``status.resize: Proposed`` when resources changed
        (MarkPodProposedForResize); the metadata as a status write keeps it."""
        # (imported here: the pod resize rules load the containers' validation, which the
        # server's start does not need; issue 12)
        from setpoint.cluster.registry import podresize

        out = podresize.drop_non_resize_updates(new, old)
        meta = dict(new.get("metadata") or {})
        for key in _RESET_FOR_STATUS:
            if key in old["metadata"]:
                meta[key] = old["metadata"][key]
            else:
                meta.pop(key, None)
        out["metadata"] = meta
        podresize.mark_pod_proposed_for_resize(old, out)
        return out

    def prepare_for_status_update(self, rt: ResourceType, new: Obj, old: Obj) -> Obj:
        out = super().prepare_for_status_update(rt, new, old)
        prepare_pod_status_update(out, old)
        drop_disabled_pod_status_fields(out.get("status"))
        return out


class WorkloadStrategy(Strategy):
    """Kinds holding a pod template (Deployment, Job, PodTemplate, ...): they warn about it
    (``warnings_workloads``), and the template loses the fields of gates off in 1.32 as a
    pod does, unless the old template used them."""

    def prepare_for_create(self, rt: ResourceType, obj: Obj,
                           warnings: list[str] | None = None) -> None:
        super().prepare_for_create(rt, obj, warnings)
        drop_disabled_template_fields(rt.group, rt.kind, obj, None)

    def prepare_for_update(self, rt: ResourceType, new: Obj, old: Obj) -> None:
        super().prepare_for_update(rt, new, old)
        drop_disabled_template_fields(rt.group, rt.kind, new, old)

    def canonicalize(self, rt: ResourceType, obj: Obj) -> None:
        omit_kept_empty_slices(pod_spec_of(rt.group, rt.kind, obj))

    def warnings_on_create(self, rt: ResourceType, obj: Obj) -> list[str]:
        return workload_warnings_on_create(rt.group, rt.kind, obj)

    def warnings_on_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[str]:
        return workload_warnings_on_update(rt.group, rt.kind, new, old)


class JobStrategy(WorkloadStrategy):
    """Jobs: the labels the strategy's generateSelector gives the template become the
    Job's own (when it has none) once the stored Job is decoded with SetDefaults_Job."""

    def decoded_from_storage(self, rt: ResourceType, obj: Obj) -> None:
        defaults_workloads.job_labels_from_template(obj)


class DaemonSetStrategy(WorkloadStrategy):
    """A workload whose template generation rides in an annotation (``templategeneration``)."""

    def prepare_for_create(self, rt: ResourceType, obj: Obj,
                           warnings: list[str] | None = None) -> None:
        super().prepare_for_create(rt, obj, warnings)
        templategeneration.prepare_for_create(obj)

    def prepare_for_update(self, rt: ResourceType, new: Obj, old: Obj) -> None:
        super().prepare_for_update(rt, new, old)
        templategeneration.prepare_for_update(new, old)


class ServiceStrategy(Strategy):
    """Services: an update to a type other than LoadBalancer clears the load balancer status
    (pkg/registry/core/service/strategy.go dropTypeDependentFields; the allocation-related
    part of it is the allocator's, setpoint/cluster/admission/services.py); a valid write
    draws pkg/api/service/warnings.go's warnings."""

    def prepare_for_update(self, rt: ResourceType, new: Obj, old: Obj) -> None:
        super().prepare_for_update(rt, new, old)
        if (new.get("spec") or {}).get("type") != "LoadBalancer":
            status = new.get("status")
            new["status"] = {**(status if isinstance(status, dict) else {}), "loadBalancer": {}}

    def warnings_on_create(self, rt: ResourceType, obj: Obj) -> list[str]:
        return service_warnings(obj)

    def warnings_on_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[str]:
        return service_warnings(new)


class NodeStrategy(Strategy):
    """Nodes drop the fields of removed or disabled features unless already in use
    (``node_disabled_fields``)."""

    def prepare_for_create(self, rt: ResourceType, obj: Obj,
                           warnings: list[str] | None = None) -> None:
        super().prepare_for_create(rt, obj, warnings)
        node_disabled_fields.drop_disabled_fields(obj, None)

    def prepare_for_update(self, rt: ResourceType, new: Obj, old: Obj) -> None:
        super().prepare_for_update(rt, new, old)
        node_disabled_fields.drop_disabled_fields(new, old)

    def prepare_for_status_update(self, rt: ResourceType, new: Obj, old: Obj) -> Obj:
        out = super().prepare_for_status_update(rt, new, old)
        node_disabled_fields.drop_disabled_status_fields(out, old)
        return out

    def warnings_on_create(self, rt: ResourceType, obj: Obj) -> list[str]:
        return warnings_deprecated.node_warnings(obj)

    def warnings_on_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[str]:
        return warnings_deprecated.node_warnings(new)


class IngressStrategy(Strategy):
    """Ingresses warn about the deprecated class annotation when created with it alone."""

    def warnings_on_create(self, rt: ResourceType, obj: Obj) -> list[str]:
        return warnings_deprecated.ingress_warnings_on_create(obj)


class ServiceAccountStrategy(Strategy):
    """ServiceAccounts warn when a write newly sets enforce-mountable-secrets."""

    def warnings_on_create(self, rt: ResourceType, obj: Obj) -> list[str]:
        return warnings_deprecated.service_account_warnings(obj, None)

    def warnings_on_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[str]:
        return warnings_deprecated.service_account_warnings(new, old)


class NodeLabelSelectorsStrategy(Strategy):
    """StorageClasses, CSIStorageCapacities and RuntimeClasses warn about deprecated node
    labels in their selectors, on create and on update."""

    def warnings_on_create(self, rt: ResourceType, obj: Obj) -> list[str]:
        return NODE_LABEL_WARNINGS[(rt.group, rt.kind)](obj)

    def warnings_on_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[str]:
        return NODE_LABEL_WARNINGS[(rt.group, rt.kind)](new)


class SecretStrategy(Strategy):
    """Secrets of type kubernetes.io/tls warn when their key pair does not load (the check
    and cryptography loaded on the first Secret write, not at the server's start)."""

    def warnings_on_create(self, rt: ResourceType, obj: Obj) -> list[str]:
        from setpoint.cluster.registry.warnings_secrets import tls_secret_warnings

        return tls_secret_warnings(obj)

    def warnings_on_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[str]:
        from setpoint.cluster.registry.warnings_secrets import tls_secret_warnings

        return tls_secret_warnings(new)


class _VolumeAttributesClassGated(Strategy):
    """Volumes and claims drop ``spec.volumeAttributesClassName`` (VolumeAttributesClass is
    beta and off in 1.32) unless the stored object has it."""

    def prepare_for_create(self, rt: ResourceType, obj: Obj,
                           warnings: list[str] | None = None) -> None:
        super().prepare_for_create(rt, obj, warnings)
        volumeattributesclass.drop_disabled_spec(obj, None)

    def prepare_for_update(self, rt: ResourceType, new: Obj, old: Obj) -> None:
        super().prepare_for_update(rt, new, old)
        volumeattributesclass.drop_disabled_spec(new, old)


class PersistentVolumeStrategy(_VolumeAttributesClassGated):
    """PersistentVolumes warn about deprecated annotations, policies, labels and plugins; a
    ``/status`` write that moves the phase stamps ``lastPhaseTransitionTime`` unless it
    set a new one itself, and one that keeps the phase keeps the stored time unless it set
    one (pkg/registry/core/persistentvolume/strategy.go persistentvolumeStatusStrategy
    PrepareForUpdate; PersistentVolumeLastPhaseTransitionTime is GA and locked on in 1.32)."""

    def prepare_for_status_update(self, rt: ResourceType, new: Obj, old: Obj) -> Obj:
        out = super().prepare_for_status_update(rt, new, old)
        status = out.get("status")
        if not isinstance(status, dict):
            status = out["status"] = {}
        old_status = old.get("status") or {}
        old_time = old_status.get("lastPhaseTransitionTime")
        new_time = status.get("lastPhaseTransitionTime")
        if status.get("phase") == old_status.get("phase"):
            if new_time is None and old_time is not None:
                status["lastPhaseTransitionTime"] = old_time
        elif new_time is None or new_time == old_time:
            status["lastPhaseTransitionTime"] = _now()
        return out

    def warnings_on_create(self, rt: ResourceType, obj: Obj) -> list[str]:
        return persistent_volume_warnings(obj)

    def warnings_on_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[str]:
        return persistent_volume_warnings(new)


class PersistentVolumeClaimStrategy(_VolumeAttributesClassGated):
    """PersistentVolumeClaims warn about the beta storage class annotation and fractional
    byte quantities; the VolumeAttributesClass fields (gate off in 1.32) are dropped from
    spec and status writes unless the stored claim has them."""

    def prepare_for_status_update(self, rt: ResourceType, new: Obj, old: Obj) -> Obj:
        out = super().prepare_for_status_update(rt, new, old)
        volumeattributesclass.drop_disabled_claim_status(out, old)
        return out

    def warnings_on_create(self, rt: ResourceType, obj: Obj) -> list[str]:
        return persistent_volume_claim_warnings(obj)

    def warnings_on_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[str]:
        return persistent_volume_claim_warnings(new)


class LeaseStrategy(Strategy):
    """Leases drop ``spec.strategy`` and ``spec.preferredHolder``: CoordinatedLeaderElection
    is alpha (off) in 1.32; an update keeps them only where the stored lease has them
    (pkg/registry/coordination/lease/strategy.go)."""

    _GATED = ("strategy", "preferredHolder")

    def prepare_for_create(self, rt: ResourceType, obj: Obj,
                           warnings: list[str] | None = None) -> None:
        super().prepare_for_create(rt, obj, warnings)
        spec = obj.get("spec")
        if isinstance(spec, dict):
            for key in self._GATED:
                spec.pop(key, None)

    def prepare_for_update(self, rt: ResourceType, new: Obj, old: Obj) -> None:
        super().prepare_for_update(rt, new, old)
        spec, old_spec = new.get("spec"), old.get("spec") or {}
        if isinstance(spec, dict):
            for key in self._GATED:
                if old_spec.get(key) is None:
                    spec.pop(key, None)


class LimitRangeStrategy(Strategy):
    """A LimitRange sent with neither name nor generateName is named with a new UUID
    (pkg/registry/core/limitrange/strategy.go PrepareForCreate), before validation."""

    def prepare_for_create(self, rt: ResourceType, obj: Obj,
                           warnings: list[str] | None = None) -> None:
        super().prepare_for_create(rt, obj, warnings)
        if not obj["metadata"].get("name"):
            obj["metadata"]["name"] = str(uuid.uuid4())


# Kinds whose rules differ from the generic ones.
STRATEGIES: dict[tuple[str, str], type[Strategy]] = {
    ("", "Namespace"): NamespaceStrategy,
    ("", "Pod"): PodStrategy,
    ("", "Node"): NodeStrategy,
    ("", "Service"): ServiceStrategy,
    ("", "LimitRange"): LimitRangeStrategy,
    ("", "ServiceAccount"): ServiceAccountStrategy,
    ("", "Secret"): SecretStrategy,
    ("networking.k8s.io", "Ingress"): IngressStrategy,
    **dict.fromkeys(NODE_LABEL_WARNINGS, NodeLabelSelectorsStrategy),
    ("", "PersistentVolume"): PersistentVolumeStrategy,
    ("", "PersistentVolumeClaim"): PersistentVolumeClaimStrategy,
    **dict.fromkeys(POD_TEMPLATE_PATHS, WorkloadStrategy),
    ("apps", "DaemonSet"): DaemonSetStrategy,
    ("batch", "Job"): JobStrategy,
    ("coordination.k8s.io", "Lease"): LeaseStrategy,
}


class HorizontalPodAutoscalerStrategy(Strategy):
    """pkg/registry/autoscaling/horizontalpodautoscaler/strategy.go works on the internal
    object: an update keeps the old status, a status update the old spec. At autoscaling/v1
    part of each rides in round-trip annotations (conversion_autoscaling): they go with it,
    whatever the request carried."""

    def prepare_for_update(self, rt: ResourceType, new: Obj, old: Obj) -> None:
        super().prepare_for_update(rt, new, old)
        if rt.version == "v1":
            _keep_annotations(new, old, hpa_conversion.STATUS_ANNOTATIONS)

    def prepare_for_status_update(self, rt: ResourceType, new: Obj, old: Obj) -> Obj:
        out = super().prepare_for_status_update(rt, new, old)
        if rt.version == "v1":
            _keep_annotations(out, old, hpa_conversion.SPEC_ANNOTATIONS)
        return out

    # Go validates the internal object: a v1 one with the metrics and behavior of its
    # round-trip annotations (and the cpu target after them)
    def validate(self, rt: ResourceType, obj: Obj) -> list[Cause]:
        return super().validate(rt, _internal(rt, obj))

    def validate_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[Cause]:
        return super().validate_update(rt, _internal(rt, new), _internal(rt, old))


def _internal(rt: ResourceType, obj: Obj) -> Obj:
    """A v1 HorizontalPodAutoscaler that carries v2 spec fields in annotations, as the
    internal object (others as they are: their v1 validation reports the cpu target at
    its internal path already)."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if rt.version != "v1" or not any(k in annotations
                                     for k in hpa_conversion.SPEC_ANNOTATIONS):
        return obj
    return hpa_conversion.hpa_v1_to_internal(obj)


def _keep_annotations(new: Obj, old: Obj, keys: tuple[str, ...]) -> None:
    """``new`` with ``old``'s values (or absence) of the annotations ``keys``."""
    old_annotations = (old.get("metadata") or {}).get("annotations") or {}
    meta = dict(new.get("metadata") or {})
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in keys}
    annotations.update({k: old_annotations[k] for k in keys if k in old_annotations})
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    new["metadata"] = meta


STRATEGIES[("autoscaling", "HorizontalPodAutoscaler")] = HorizontalPodAutoscalerStrategy


class CertificateSigningRequestStrategy(Strategy):
    """pkg/registry/certificates/certificates/strategy.go: an update through the main
    resource keeps spec and status; a ``/status`` write keeps the stored approval conditions
    and timestamps new ones. (The create's requester is admission/csrrequestor.py's, its
    empty status the defaults' ``reset_status_on_create``.)"""

    def prepare_for_update(self, rt: ResourceType, new: Obj, old: Obj) -> None:
        super().prepare_for_update(rt, new, old)
        _certificates().prepare_for_update(new, old)

    def prepare_for_status_update(self, rt: ResourceType, new: Obj, old: Obj) -> Obj:
        out = super().prepare_for_status_update(rt, new, old)
        _certificates().prepare_for_status_update(out, old, _now())
        return out

    def validate_status_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[Cause]:
        return validation.validate_update_with(rt, new, old,
                                               _certificates().validate_status_update)

    def validate_approval_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[Cause]:
        return validation.validate_update_with(rt, new, old,
                                               _certificates().validate_approval_update)


def _certificates() -> ModuleType:
    """The CSR rules, loaded (with cryptography's x509) on the first CSR write."""
    from setpoint.cluster.registry import validation_certificates

    return validation_certificates


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


STRATEGIES[("certificates.k8s.io", "CertificateSigningRequest")] = (
    CertificateSigningRequestStrategy)


def strategy_for(group: str, kind: str) -> Strategy:
    """The rules of a built-in kind."""
    return STRATEGIES.get((group, kind), Strategy)()
