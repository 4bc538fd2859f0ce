"""The bootstrap RBAC policy: every role and binding kube-apiserver 1.32 starts with.

kube-apiserver's ``rbac/bootstrap-roles`` post-start hook creates the ClusterRoles and
ClusterRoleBindings of ``policy.go`` and ``controller_policy.go`` and the kube-system /
kube-public Roles and RoleBindings of ``namespace_policy.go`` (kubernetes/kubernetes
``plugin/pkg/auth/authorizer/rbac/bootstrappolicy``). Their golden output with default
feature gates is that package's ``testdata/{cluster-roles, cluster-role-bindings,
controller-roles, controller-role-bindings, namespace-roles, namespace-role-bindings}.yaml``;
``bootstrappolicy.json`` beside this module is that output as data (JSON: it loads a hundred
times faster than YAML), read once, on first use.

Which version (the stored copies of those files are of several commits, none tagged):

* cluster roles: testdata at 025f2834a128798cef30018a5e6a6ae82b5ad885. It is at least 1.28
  (``system:basic-user`` grants ``selfsubjectreviews``, ``system:monitoring`` has
  ``/metrics/slis``, ``system:discovery`` has ``/openapi/*`` and ``/version/``) and before
  1.34 (no ``resource.k8s.io`` rule in ``system:kube-scheduler``/``system:node``: DRA was
  beta and off by default in 1.32, on from 1.34). ``system:service-account-issuer-discovery``
  keeps the trailing-slash URLs too, as a live cluster's SelfSubjectRulesReview lists them.
* controller roles: testdata at 008b3652959ca58af8be3fb5b6ecfe9ae7638282 (a later version)
  less the roles that are not in 1.32's default-gate output: ``device-taint-eviction``
  (DRADeviceTaints, 1.33), ``resource-claim`` (DynamicResourceAllocation, default-off in
  1.32), ``selinux-warning`` (1.33), ``service-cidrs`` (MultiCIDRServiceAllocator,
  default-off until 1.33) and ``volumeattributesclass-protection`` (VolumeAttributesClass,
  default-off until 1.34). Each ``system:controller:<name>`` role is bound to the
  ServiceAccount ``kube-system/<name>`` (``addControllerRole``).
* namespace roles and bindings: testdata at 008b3652 (``leasecandidates`` in the
  leader-locking roles came with coordinated leader election in 1.31).

``admin``, ``edit`` and ``view`` carry only an aggregation rule: their rules are filled in,
as in kube-apiserver, by the clusterrole-aggregation controller from the
``system:aggregate-to-*`` roles and any ClusterRole labelled
``rbac.authorization.k8s.io/aggregate-to-<role>: "true"``.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from setpoint.machinery.objects import Obj

MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"

GROUP = "rbac.authorization.k8s.io"
CONTROLLER_PREFIX = "system:controller:"
CONTROLLER_NAMESPACE = "kube-system"
DATA = Path(__file__).with_name("bootstrappolicy.json")


def _meta(name: str, namespace: str | None = None,
          labels: dict[str, str] | None = None) -> Obj:
    meta: Obj = {"name": name,
                 "labels": {"kubernetes.io/bootstrapping": "rbac-defaults", **(labels or {})},
                 "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def _subject(subject: Obj) -> Obj:
    # RBAC's helpers give User and Group subjects the rbac API group, ServiceAccounts none
    if subject["kind"] == "ServiceAccount":
        return dict(subject)
    return {"apiGroup": GROUP, **subject}


def _binding(kind: str, name: str, role_kind: str, role: str, subjects: list[Obj],
             namespace: str | None = None) -> Obj:
    binding: Obj = {"apiVersion": f"{GROUP}/v1", "kind": kind,
                    "metadata": _meta(name, namespace),
                    "roleRef": {"apiGroup": GROUP, "kind": role_kind, "name": role}}
    if subjects:  # (``system:node`` is bound to no one since 1.8; it keeps the binding)
        binding["subjects"] = [_subject(s) for s in subjects]
    return binding


@cache
def _policy() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DATA.read_bytes())
    return loaded


def cluster_roles() -> list[Obj]:
    """The bootstrap ClusterRoles (``policy.go``'s and the controllers'), to create."""
    policy = _policy()
    out: list[Obj] = []
    for name, spec in policy["clusterRoles"].items():
        role: Obj = {"apiVersion": f"{GROUP}/v1", "kind": "ClusterRole",
                     "metadata": _meta(name, labels=spec.get("labels"))}
        if "aggregationRule" in spec:
            role["aggregationRule"] = spec["aggregationRule"]
        else:
            role["rules"] = spec["rules"]
        out.append(role)
    for short, rules in policy["controllerRoles"].items():
        out.append({"apiVersion": f"{GROUP}/v1", "kind": "ClusterRole",
                    "metadata": _meta(CONTROLLER_PREFIX + short), "rules": rules})
    return out


def cluster_role_bindings() -> list[Obj]:
    """The bootstrap ClusterRoleBindings, each binding the ClusterRole of its name."""
    policy = _policy()
    out = [_binding("ClusterRoleBinding", name, "ClusterRole", name, subjects)
           for name, subjects in policy["clusterRoleBindings"].items()]
    for short in policy["controllerRoles"]:
        name = CONTROLLER_PREFIX + short
        out.append(_binding("ClusterRoleBinding", name, "ClusterRole", name, [
            {"kind": "ServiceAccount", "name": short, "namespace": CONTROLLER_NAMESPACE}]))
    return out


def roles() -> list[Obj]:
    """The bootstrap Roles of kube-system and kube-public (``namespace_policy.go``)."""
    return [{"apiVersion": f"{GROUP}/v1", "kind": "Role", "metadata": _meta(name, namespace),
             "rules": rules}
            for namespace, by_name in _policy()["namespaceRoles"].items()
            for name, rules in by_name.items()]


def role_bindings() -> list[Obj]:
    """The bootstrap RoleBindings of kube-system and kube-public."""
    return [_binding("RoleBinding", name, "Role", spec["role"], spec["subjects"], namespace)
            for namespace, by_name in _policy()["namespaceRoleBindings"].items()
            for name, spec in by_name.items()]
