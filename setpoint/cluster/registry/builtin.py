"""The built-in resources the embedded server serves, with the names discovery reports.

The table lists what a default kube-apiserver v1.32 lists in discovery (every group and
version it enables by default), so that clients which check for a resource before using it
(kubectl, client libraries, operators probing for ``coordination.k8s.io`` or
``policy/v1``) find it. Subresources are listed as the real server lists them; which of them
the embedded server implements beyond ``status`` and ``scale`` is the HTTP layer's business.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from setpoint.cluster.registry.kindstrategies import strategy_for
from setpoint.cluster.registry.types import STANDARD_VERBS, ResourceType, ScalePaths

CREATE_ONLY = ("create",)
# namespaces cannot be deleted as a collection
NO_DELETECOLLECTION = tuple(v for v in STANDARD_VERBS if v != "deletecollection")
EXTENSIONS = ("api-extensions",)
ALL = ("all",)


class _Row(NamedTuple):
    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = STANDARD_VERBS


_POD_SUBRESOURCES = ("attach", "binding", "ephemeralcontainers", "eviction", "exec", "log",
                     "portforward", "proxy", "resize", "status")

_BUILTINS: tuple[_Row, ...] = (
    # core/v1
    _Row("", "v1", "bindings", "Binding", verbs=CREATE_ONLY),
    _Row("", "v1", "componentstatuses", "ComponentStatus", False, ("cs",),
         verbs=("get", "list")),
    _Row("", "v1", "configmaps", "ConfigMap", True, ("cm",)),
    _Row("", "v1", "endpoints", "Endpoints", True, ("ep",)),
    _Row("", "v1", "events", "Event", True, ("ev",)),
    _Row("", "v1", "limitranges", "LimitRange", True, ("limits",)),
    _Row("", "v1", "namespaces", "Namespace", False, ("ns",), (), ("finalize", "status"),
         NO_DELETECOLLECTION),
    _Row("", "v1", "nodes", "Node", False, ("no",), (), ("proxy", "status")),
    _Row("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, ("pvc",), (),
         ("status",)),
    _Row("", "v1", "persistentvolumes", "PersistentVolume", False, ("pv",), (), ("status",)),
    _Row("", "v1", "pods", "Pod", True, ("po",), ALL, _POD_SUBRESOURCES),
    _Row("", "v1", "podtemplates", "PodTemplate"),
    _Row("", "v1", "replicationcontrollers", "ReplicationController", True, ("rc",), ALL,
         ("scale", "status")),
    _Row("", "v1", "resourcequotas", "ResourceQuota", True, ("quota",), (), ("status",)),
    _Row("", "v1", "secrets", "Secret"),
    _Row("", "v1", "serviceaccounts", "ServiceAccount", True, ("sa",), (), ("token",)),
    _Row("", "v1", "services", "Service", True, ("svc",), ALL, ("proxy", "status")),
    # apiregistration.k8s.io
    _Row("apiregistration.k8s.io", "v1", "apiservices", "APIService", False, (), EXTENSIONS,
         ("status",)),
    # apps
    _Row("apps", "v1", "controllerrevisions", "ControllerRevision"),
    _Row("apps", "v1", "daemonsets", "DaemonSet", True, ("ds",), ALL, ("status",)),
    _Row("apps", "v1", "deployments", "Deployment", True, ("deploy",), ALL,
         ("scale", "status")),
    _Row("apps", "v1", "replicasets", "ReplicaSet", True, ("rs",), ALL, ("scale", "status")),
    _Row("apps", "v1", "statefulsets", "StatefulSet", True, ("sts",), ALL,
         ("scale", "status")),
    # events.k8s.io
    _Row("events.k8s.io", "v1", "events", "Event", True, ("ev",)),
    # authentication.k8s.io / authorization.k8s.io: create-only review resources
    _Row("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", False,
         verbs=CREATE_ONLY),
    _Row("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", False,
         verbs=CREATE_ONLY),
    _Row("authorization.k8s.io", "v1", "localsubjectaccessreviews",
         "LocalSubjectAccessReview", True, verbs=CREATE_ONLY),
    _Row("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview",
         False, verbs=CREATE_ONLY),
    _Row("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview",
         False, verbs=CREATE_ONLY),
    _Row("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False,
         verbs=CREATE_ONLY),
    # autoscaling: v2 is preferred, v1 still served
    _Row("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True,
         ("hpa",), ALL, ("status",)),
    _Row("autoscaling", "v1", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True,
         ("hpa",), ALL, ("status",)),
    # batch
    _Row("batch", "v1", "cronjobs", "CronJob", True, ("cj",), ALL, ("status",)),
    _Row("batch", "v1", "jobs", "Job", True, (), ALL, ("status",)),
    # certificates.k8s.io
    _Row("certificates.k8s.io", "v1", "certificatesigningrequests",
         "CertificateSigningRequest", False, ("csr",), (), ("approval", "status")),
    # networking.k8s.io
    _Row("networking.k8s.io", "v1", "ingressclasses", "IngressClass", False),
    _Row("networking.k8s.io", "v1", "ingresses", "Ingress", True, ("ing",), (), ("status",)),
    _Row("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, ("netpol",)),
    # policy
    _Row("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",), (),
         ("status",)),
    # rbac.authorization.k8s.io
    _Row("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding",
         False),
    _Row("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    _Row("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
    _Row("rbac.authorization.k8s.io", "v1", "roles", "Role"),
    # storage.k8s.io
    _Row("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
    _Row("storage.k8s.io", "v1", "csinodes", "CSINode", False),
    _Row("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity"),
    _Row("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, ("sc",)),
    _Row("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False, (), (),
         ("status",)),
    # admissionregistration.k8s.io
    _Row("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
         "MutatingWebhookConfiguration", False, (), EXTENSIONS),
    _Row("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies",
         "ValidatingAdmissionPolicy", False, (), EXTENSIONS, ("status",)),
    _Row("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings",
         "ValidatingAdmissionPolicyBinding", False, (), EXTENSIONS),
    _Row("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
         "ValidatingWebhookConfiguration", False, (), EXTENSIONS),
    # apiextensions.k8s.io
    _Row("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
         False, ("crd", "crds"), EXTENSIONS, ("status",)),
    # scheduling.k8s.io
    _Row("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ("pc",)),
    # coordination.k8s.io
    _Row("coordination.k8s.io", "v1", "leases", "Lease"),
    # node.k8s.io
    _Row("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", False),
    # discovery.k8s.io
    _Row("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice"),
    # flowcontrol.apiserver.k8s.io
    _Row("flowcontrol.apiserver.k8s.io", "v1", "flowschemas", "FlowSchema", False, (), (),
         ("status",)),
    _Row("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations",
         "PriorityLevelConfiguration", False, (), (), ("status",)),
)

_SCALE = {
    "deployments": ScalePaths(),
    "replicasets": ScalePaths(),
    "statefulsets": ScalePaths(),
    # scaleFromRC (pkg/registry/core/replicationcontroller/storage/storage.go):
    # labels.SelectorFromSet(rc.Spec.Selector)
    "replicationcontrollers": ScalePaths(label_selector=".spec.selector",
                                         label_selector_is_set=True),
}

# The group/version the real server stores a resource in, where it differs from the served
# one; discovery's storageVersionHash is computed from it.
STORAGE_VERSIONS: dict[tuple[str, str], tuple[str, str]] = {
    ("autoscaling", "horizontalpodautoscalers"): ("autoscaling", "v2"),
    # events.k8s.io events cohabit with core events and are stored as core/v1 Events
    ("events.k8s.io", "events"): ("", "v1"),
}


def builtin_resources() -> list[ResourceType]:
    """A fresh list of the built-in resource types (schemas are attached lazily)."""
    out = []
    for row in _BUILTINS:
        out.append(ResourceType(
            group=row.group, version=row.version, resource=row.resource, kind=row.kind,
            namespaced=row.namespaced, short_names=row.short_names, categories=row.categories,
            subresources=row.subresources, verbs=row.verbs,
            scale=_SCALE.get(row.resource) if "scale" in row.subresources else None,
            storage_version=(row.group, row.version) == STORAGE_VERSIONS.get(
                (row.group, row.resource), (row.group, row.version)),
            strategy=strategy_for(row.group, row.kind),
        ))
    return out


@functools.cache
def builtin_kinds() -> frozenset[tuple[str, str]]:
    """The (apiVersion, kind) pairs of the built-in scheme's served objects."""
    return frozenset((f"{row.group}/{row.version}" if row.group else row.version, row.kind)
                     for row in _BUILTINS)
