"""Per-kind rules of the generic REST storage: generation, status, defaults, validation.

``Strategy`` is the generic behaviour; the kinds whose rules differ have their own strategies
in ``kindstrategies.py`` (with ``strategy_for``, the lookup); the per-kind tables it consults
(defaulters, validators, field selector attributes) live in their own modules so that each
concern reads in one place, as the Kubernetes registry's strategies do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from setpoint.cluster.registry import (
    defaults,
    fieldlabels,
    validation,
)
from setpoint.cluster.registry.gomembers import go_zeros
from setpoint.cluster.registry.validation_discovery import drop_topology_on_v1
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

# What metav1.ResetObjectMetaForStatus takes from the stored object.
OBJECT_META_FOR_STATUS = ("deletionTimestamp", "generation", "selfLink", "labels",
                          "annotations", "finalizers", "ownerReferences")
# All of ObjectMeta but managedFields (and the resourceVersion the store already checked):
# the flowcontrol status strategies assign the old ObjectMeta whole.
WHOLE_OBJECT_META = ("name", "generateName", "namespace", "selfLink", "uid", "generation",
                     "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                     "labels", "annotations", "ownerReferences", "finalizers")

# Metadata a built-in kind's status strategy takes from the stored object (its spec always).
STATUS_RESETS_METADATA: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps", "Deployment"): ("labels",),
    ("", "Pod"): ("deletionTimestamp", "ownerReferences"),
    # pkg/registry/admissionregistration/validatingadmissionpolicy/strategy.go
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): OBJECT_META_FOR_STATUS,
    # kube-aggregator pkg/registry/apiservice/strategy.go apiServerStatusStrategy
    ("apiregistration.k8s.io", "APIService"): ("labels", "annotations", "finalizers",
                                               "ownerReferences"),
    # pkg/registry/flowcontrol/{flowschema,prioritylevelconfiguration}/strategy.go
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): WHOLE_OBJECT_META,
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"): WHOLE_OBJECT_META,
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
    ("", "LimitRange"), ("coordination.k8s.io", "Lease"),
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
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
    ("storage.k8s.io", "CSIDriver"), ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "VolumeAttachment"), ("storage.k8s.io", "CSIStorageCapacity"),
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

    def validate_finalize_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[Cause]:
        """A ``namespaces/finalize`` write (namespaceFinalizeStrategy's ``ValidateUpdate``)."""
        return validation.validate_namespace_finalize_update(rt, new, old)

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
