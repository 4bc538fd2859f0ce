"""Per-kind rules of the generic REST storage: generation, status, defaults, validation.

``Strategy`` is the generic behaviour; the per-kind tables it consults (defaulters,
validators, field selector attributes) live in their own modules so that each concern reads
in one place, as the Kubernetes registry's strategies do.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from setpoint.cluster.registry import conversion_autoscaling as hpa_conversion
from setpoint.cluster.registry import (
    defaults,
    defaults_workloads,
    fieldlabels,
    node_disabled_fields,
    podresize,
    templategeneration,
    validation,
    volumeattributesclass,
)
from setpoint.cluster.registry import validation_certificates as certificates
from setpoint.cluster.registry.gomembers import go_zeros
from setpoint.cluster.registry.kept_empty_slices import omit_kept_empty_slices, pod_spec_of
from setpoint.cluster.registry.pod_apparmor import apply_apparmor_version_skew
from setpoint.cluster.registry.pod_disabled_fields import (
    POD_TEMPLATE_PATHS,
    drop_disabled_pod_spec_fields,
    drop_disabled_template_fields,
)
from setpoint.cluster.registry.validation_discovery import drop_topology_on_v1
from setpoint.cluster.registry.validation_podstatus import prepare_pod_status_update
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
from setpoint.machinery.equality import semantic_equal, unstructured_equal
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj
from setpoint.machinery.schema import Schema, definitions

if TYPE_CHECKING:
    from setpoint.cluster.registry.types import ResourceType

# Kinds whose metadata.generation the server maintains, and the top-level fields whose change
# increments it (None: every field but metadata and status). (Not HorizontalPodAutoscaler:
# pkg/registry/autoscaling/horizontalpodautoscaler/strategy.go only resets its status.)
GENERATION_FIELDS: dict[tuple[str, str], tuple[str, ...] | None] = {
    ("apps", "Deployment"): ("spec",),
    ("apps", "ReplicaSet"): ("spec",),
    ("apps", "StatefulSet"): ("spec",),
    ("apps", "DaemonSet"): ("spec",),
    ("batch", "Job"): ("spec",),
    ("batch", "CronJob"): ("spec",),
    ("policy", "PodDisruptionBudget"): ("spec",),
    ("networking.k8s.io", "Ingress"): ("spec",),
    ("networking.k8s.io", "NetworkPolicy"): ("spec",),
    ("networking.k8s.io", "IngressClass"): ("spec",),
    # pkg/registry/flowcontrol/{flowschema,prioritylevelconfiguration}/strategy.go
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): ("spec",),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"): ("spec",),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): ("spec",),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): ("webhooks",),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): ("webhooks",),
    # pkg/registry/admissionregistration/validatingadmissionpolicy{,binding}/strategy.go
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): ("spec",),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): ("spec",),
    ("", "ReplicationController"): ("spec",),
    ("", "PodTemplate"): ("template",),
    # pkg/registry/discovery/endpointslice/strategy.go: any change but metadata
    ("discovery.k8s.io", "EndpointSlice"): None,
    # pkg/registry/storage/csidriver/strategy.go: PrepareForUpdate moves it on any spec change
    ("storage.k8s.io", "CSIDriver"): ("spec",),
}

# Tracked kinds whose PrepareForCreate does not set generation 1: a new object keeps what the
# client sent (mostly none, Go's 0, omitted), and its first spec change makes it 1
# (pkg/registry/storage/csidriver/strategy.go; strategy_test.go TestCSIDriverPrepareForUpdate).
GENERATION_NOT_SET_ON_CREATE = {("storage.k8s.io", "CSIDriver")}

# Kinds whose PrepareForCreate sets generation 1 that no update moves (rest.BeforeUpdate keeps
# the stored one): pkg/registry/scheduling/priorityclass/strategy.go.
GENERATION_ONE_ON_CREATE = {("scheduling.k8s.io", "PriorityClass")}

# Metadata a built-in kind's status strategy takes from the stored object (its spec always).
STATUS_RESETS_METADATA: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps", "Deployment"): ("labels",),
    ("", "Pod"): ("deletionTimestamp", "ownerReferences"),
}

# labels and annotations: a map[string]string
_STRINGS = Schema({"type": "object", "additionalProperties": {"type": "string"}})

# Kinds whose generation also moves when annotations change (apps/v1 Deployment does).
GENERATION_ON_ANNOTATIONS = {("apps", "Deployment")}
# ... or when labels change (pkg/registry/discovery/endpointslice/strategy.go)
GENERATION_ON_LABELS = {("discovery.k8s.io", "EndpointSlice")}


# Built-in kinds whose strategy's AllowCreateOnUpdate is true: a PUT of a missing object
# creates it (each kind's pkg/registry/<group>/<kind>/strategy.go).
CREATE_ON_UPDATE = {
    ("", "Endpoints"), ("", "Event"), ("events.k8s.io", "Event"), ("", "Service"),
    ("", "LimitRange"), ("apps", "ControllerRevision"), ("coordination.k8s.io", "Lease"),
    ("node.k8s.io", "RuntimeClass"),
    ("rbac.authorization.k8s.io", "Role"), ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "RoleBinding"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
}

# Built-in kinds whose strategy's AllowUnconditionalUpdate is false: an update (or a patch
# whose result) without a resourceVersion is refused; custom resources are all so.
CONDITIONAL_UPDATE_ONLY = {
    ("coordination.k8s.io", "Lease"), ("node.k8s.io", "RuntimeClass"),
    ("policy", "PodDisruptionBudget"),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("apiregistration.k8s.io", "APIService"),
}


class Strategy:
    """Generic create/update rules; correct for custom resources and most built-in kinds."""

    def allows_create_on_update(self, rt: ResourceType) -> bool:
        return not rt.is_custom and (rt.group, rt.kind) in CREATE_ON_UPDATE

    def allows_unconditional_update(self, rt: ResourceType) -> bool:
        return not rt.is_custom and (rt.group, rt.kind) not in CONDITIONAL_UPDATE_ONLY

    def tracks_generation(self, rt: ResourceType) -> bool:
        return rt.is_custom or (rt.group, rt.kind) in GENERATION_FIELDS

    def spec_changed(self, rt: ResourceType, new: Obj, old: Obj) -> bool:
        fields = None if rt.is_custom else GENERATION_FIELDS.get((rt.group, rt.kind))
        if fields is None:
            skip = {"metadata", "status", "apiVersion", "kind"} if rt.has_status else {
                "metadata", "apiVersion", "kind"}
            keys = (set(new) | set(old)) - skip
        else:
            keys = set(fields)
        # apiequality.Semantic.DeepEqual (machinery.equality): a custom resource's
        # unstructured content (apiextensions-apiserver pkg/registry/customresource/
        # strategy.go PrepareForUpdate, on everything but metadata), a built-in kind's typed
        # fields, where a nil and an empty slice or map are equal
        if rt.is_custom:
            return any(not unstructured_equal(new.get(k), old.get(k)) for k in keys)
        schema = rt.schema or definitions().for_kind(rt.group, rt.version, rt.kind)
        properties = schema.properties if schema is not None else {}
        definition = definitions().name_for_kind(rt.group, rt.version, rt.kind)
        top = go_zeros(definition) if definition is not None else {}
        for k in keys:
            x, y = new.get(k), old.get(k)
            if k in top:  # a kind's own non-pointer builtin member (EndpointSlice addressType)
                x, y = top[k] if x is None else x, top[k] if y is None else y
            if not semantic_equal(x, y, properties.get(k), go_zeros):
                return True
        meta_keys = ("annotations",) if (rt.group, rt.kind) in GENERATION_ON_ANNOTATIONS else (
            "labels",) if (rt.group, rt.kind) in GENERATION_ON_LABELS else ()
        return any(not semantic_equal(new["metadata"].get(k), old["metadata"].get(k), _STRINGS)
                   for k in meta_keys)

    # -- create ------------------------------------------------------------------------
    def prepare_for_create(self, rt: ResourceType, obj: Obj,
                           warnings: list[str] | None = None) -> None:
        key = (rt.group, rt.kind)
        if rt.is_custom or (key in GENERATION_FIELDS and key not in GENERATION_NOT_SET_ON_CREATE
                            ) or key in GENERATION_ONE_ON_CREATE:
            obj["metadata"]["generation"] = 1
        if (rt.group, rt.kind) == ("discovery.k8s.io", "EndpointSlice"):
            drop_topology_on_v1(obj, None)
        # other kinds' PrepareForCreate leaves a generation the client sent: rest.BeforeCreate
        # and the create handler's WipeObjectMetaSystemFields do not touch it
        defaults.reset_status_on_create(rt, obj)

    def validate_approval_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[Cause]:
        """Only CertificateSigningRequests serve ``/approval``."""
        raise NotImplementedError(f"{rt.resource} have no approval")

    # -- update ------------------------------------------------------------------------
    def prepare_for_update(self, rt: ResourceType, new: Obj, old: Obj) -> None:
        """An update through the main resource: status is kept if it has its own endpoint."""
        if rt.has_status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        meta = new["metadata"]
        if self.tracks_generation(rt):
            unset = 0 if (rt.group, rt.kind) in GENERATION_NOT_SET_ON_CREATE else 1
            gen = old["metadata"].get("generation", unset)
            gen = gen + 1 if self.spec_changed(rt, new, old) else gen
            if gen:
                meta["generation"] = gen
            else:  # Go's 0, omitted
                meta.pop("generation", None)
        elif "generation" in old["metadata"]:
            # rest.BeforeUpdate: "Ensure requests cannot update generation"
            meta["generation"] = old["metadata"]["generation"]
        else:
            meta.pop("generation", None)
        if (rt.group, rt.kind) == ("discovery.k8s.io", "EndpointSlice"):
            drop_topology_on_v1(new, old)

    def prepare_for_status_update(self, rt: ResourceType, new: Obj, old: Obj) -> Obj:
        """An update through ``/status``. A custom resource keeps everything but its status
        (apiextensions' status strategy); a built-in kind keeps the new object except its
        spec and the metadata its status strategy resets (``STATUS_RESETS_METADATA``)."""
        if rt.is_custom:
            out = {k: v for k, v in old.items() if k != "status"}
            if "status" in new:
                out["status"] = new["status"]
            meta = dict(old["metadata"])
            if "resourceVersion" in (new.get("metadata") or {}):
                meta["resourceVersion"] = new["metadata"]["resourceVersion"]
            out["metadata"] = meta
            return out
        out = {k: v for k, v in new.items() if k != "spec"}
        if "spec" in old:
            out["spec"] = old["spec"]
        meta = dict(new.get("metadata") or {})
        old_meta = old["metadata"]
        for key in STATUS_RESETS_METADATA.get((rt.group, rt.kind), ()):
            if key in old_meta:
                meta[key] = old_meta[key]
            else:
                meta.pop(key, None)
        out["metadata"] = meta
        return out

    # -- defaults and validation --------------------------------------------------------
    def default(self, rt: ResourceType, obj: Obj) -> None:
        defaults.apply_defaults(rt, obj)

    def validate(self, rt: ResourceType, obj: Obj) -> list[Cause]:
        return validation.validate(rt, obj)

    def validate_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[Cause]:
        return validation.validate_update(rt, new, old)

    def validate_status_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[Cause]:
        """A built-in kind's ``/status`` write (its status strategy's ``ValidateUpdate``)."""
        return validation.validate_status_subresource_update(rt, new, old)

    def prepare_for_ephemeral_containers_update(self, rt: ResourceType, new: Obj,
                                                old: Obj) -> Obj:
        """Only pods serve ``/ephemeralcontainers``: ``PodStrategy``'s."""
        raise NotImplementedError(f"{rt.resource} have no ephemeral containers")

    def validate_ephemeral_containers_update(self, rt: ResourceType, new: Obj,
                                             old: Obj) -> list[Cause]:
        return validation.validate_ephemeral_containers_update(rt, new, old)

    def prepare_for_resize_update(self, rt: ResourceType, new: Obj, old: Obj) -> Obj:
        """Only pods serve ``/resize``: ``PodStrategy``'s."""
        raise NotImplementedError(f"{rt.resource} cannot be resized")

    def validate_resize_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[Cause]:
        return validation.validate_resize_update(rt, new, old)

    def canonicalize(self, rt: ResourceType, obj: Obj) -> None:
        """``Canonicalize``: after validation, before storage (rest.BeforeCreate and
        BeforeUpdate); nothing for most kinds."""

    def decoded_from_storage(self, rt: ResourceType, obj: Obj) -> None:
        """What decoding the stored object adds: kube-apiserver's storage codec defaults
        every object it decodes (each read and watch event, a write's answer, a dry run's
        ``copyInto`` in registry/generic/registry/dryrun.go), so a default that depends on
        what the strategy set after the request's own defaulting shows from the write's
        answer on. Stored as it will be read, here; nothing for most kinds."""

    def warnings_on_create(self, rt: ResourceType, obj: Obj) -> list[str]:
        """``WarningsOnCreate``: what a valid new object draws (none for most kinds)."""
        return []

    def warnings_on_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[str]:
        """``WarningsOnUpdate``: what a valid update draws (none for most kinds)."""
        return []

    def field_labels(self, rt: ResourceType, obj: Obj) -> dict[str, str]:
        return fieldlabels.field_labels(rt, obj)


class NamespaceStrategy(Strategy):
    """Namespaces: spec.finalizers change only through ``/finalize``."""

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


# Kinds whose rules differ from the generic ones.
STRATEGIES: dict[tuple[str, str], type[Strategy]] = {
    ("", "Namespace"): NamespaceStrategy,
    ("", "Pod"): PodStrategy,
    ("", "Node"): NodeStrategy,
    ("", "Service"): ServiceStrategy,
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
        certificates.prepare_for_update(new, old)

    def prepare_for_status_update(self, rt: ResourceType, new: Obj, old: Obj) -> Obj:
        out = super().prepare_for_status_update(rt, new, old)
        certificates.prepare_for_status_update(out, old, _now())
        return out

    def validate_status_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[Cause]:
        return validation.validate_update_with(rt, new, old, certificates.validate_status_update)

    def validate_approval_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[Cause]:
        return validation.validate_update_with(rt, new, old,
                                               certificates.validate_approval_update)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


STRATEGIES[("certificates.k8s.io", "CertificateSigningRequest")] = (
    CertificateSigningRequestStrategy)


def strategy_for(group: str, kind: str) -> Strategy:
    """The rules of a built-in kind."""
    return STRATEGIES.get((group, kind), Strategy)()
