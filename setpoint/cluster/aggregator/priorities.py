"""The ``groupPriorityMinimum``/``versionPriority`` of the APIServices kube-apiserver registers.

Built-in group-versions take theirs from ``apiVersionPriorities`` (1.32:
cmd/kube-apiserver/app/aggregator.go merged over ``DefaultGenericAPIServicePriorities`` in
pkg/controlplane/apiserver/aggregator.go); a group-version missing there gets no APIService
(``makeAPIService``). Every served version of a CRD gets ``1000``/``100``
(pkg/controlplane/controller/crdregistration/crdregistration_controller.go).
"""

from __future__ import annotations

from setpoint.machinery.objects import Obj

# the label autoregister marks the APIServices it keeps with, and its two values
AUTOMANAGED_LABEL = "kube-aggregator.kubernetes.io/automanaged"
MANAGE_ON_START = "onstart"
MANAGE_CONTINUOUSLY = "true"

CRD_GROUP_PRIORITY_MINIMUM = 1000  # "CRDs should have relatively low priority"
CRD_VERSION_PRIORITY = 100

# (group, version) -> (groupPriorityMinimum, versionPriority)
API_VERSION_PRIORITIES: dict[tuple[str, str], tuple[int, int]] = {
    ("", "v1"): (18000, 1),
    ("apps", "v1"): (17800, 15),
    ("events.k8s.io", "v1"): (17750, 15),
    ("events.k8s.io", "v1beta1"): (17750, 5),
    ("authentication.k8s.io", "v1"): (17700, 15),
    ("authentication.k8s.io", "v1beta1"): (17700, 9),
    ("authentication.k8s.io", "v1alpha1"): (17700, 1),
    ("authorization.k8s.io", "v1"): (17600, 15),
    ("autoscaling", "v1"): (17500, 15),
    ("autoscaling", "v2"): (17500, 30),
    ("autoscaling", "v2beta1"): (17500, 9),
    ("autoscaling", "v2beta2"): (17500, 1),
    ("batch", "v1"): (17400, 15),
    ("batch", "v1beta1"): (17400, 9),
    ("batch", "v2alpha1"): (17400, 9),
    ("certificates.k8s.io", "v1"): (17300, 15),
    ("certificates.k8s.io", "v1beta1"): (17300, 9),
    ("certificates.k8s.io", "v1alpha1"): (17300, 1),
    ("networking.k8s.io", "v1"): (17200, 15),
    ("networking.k8s.io", "v1beta1"): (17200, 9),
    ("policy", "v1"): (17100, 15),
    ("policy", "v1beta1"): (17100, 9),
    ("rbac.authorization.k8s.io", "v1"): (17000, 15),
    ("storage.k8s.io", "v1"): (16800, 15),
    ("storage.k8s.io", "v1beta1"): (16800, 9),
    ("storage.k8s.io", "v1alpha1"): (16800, 1),
    ("apiextensions.k8s.io", "v1"): (16700, 15),
    ("admissionregistration.k8s.io", "v1"): (16700, 15),
    ("admissionregistration.k8s.io", "v1beta1"): (16700, 12),
    ("admissionregistration.k8s.io", "v1alpha1"): (16700, 9),
    ("scheduling.k8s.io", "v1"): (16600, 15),
    ("coordination.k8s.io", "v1"): (16500, 15),
    ("coordination.k8s.io", "v1beta1"): (16500, 13),
    ("coordination.k8s.io", "v1alpha2"): (16500, 12),
    ("node.k8s.io", "v1"): (16300, 15),
    ("node.k8s.io", "v1alpha1"): (16300, 1),
    ("node.k8s.io", "v1beta1"): (16300, 9),
    ("discovery.k8s.io", "v1"): (16200, 15),
    ("discovery.k8s.io", "v1beta1"): (16200, 12),
    ("resource.k8s.io", "v1beta1"): (16200, 9),
    ("resource.k8s.io", "v1alpha3"): (16200, 1),
    ("flowcontrol.apiserver.k8s.io", "v1"): (16100, 21),
    ("flowcontrol.apiserver.k8s.io", "v1beta3"): (16100, 18),
    ("flowcontrol.apiserver.k8s.io", "v1beta2"): (16100, 15),
    ("flowcontrol.apiserver.k8s.io", "v1beta1"): (16100, 12),
    ("flowcontrol.apiserver.k8s.io", "v1alpha1"): (16100, 9),
    ("internal.apiserver.k8s.io", "v1alpha1"): (16000, 9),
    ("storagemigration.k8s.io", "v1alpha1"): (15800, 9),
}

# The aggregator's own group never has an APIService: handler_apis.go always lists it first.
AGGREGATOR_GROUP = "apiregistration.k8s.io"


def apiservice_name(group: str, version: str) -> str:
    return f"{version}.{group}"


def local_apiservice(group: str, version: str, priority: tuple[int, int], sync: str) -> Obj:
    """``makeAPIService`` (or crdregistration's) with autoregister's label: no
    ``spec.service``, so this server answers for it."""
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": apiservice_name(group, version),
                         "labels": {AUTOMANAGED_LABEL: sync}},
            "spec": {"group": group, "version": version,
                     "groupPriorityMinimum": priority[0], "versionPriority": priority[1]}}


def default_priority(group: str, version: str, custom: bool) -> tuple[int, int] | None:
    """The priority the APIService of a served group-version gets once registered."""
    if custom:
        return CRD_GROUP_PRIORITY_MINIMUM, CRD_VERSION_PRIORITY
    return API_VERSION_PRIORITIES.get((group, version))
