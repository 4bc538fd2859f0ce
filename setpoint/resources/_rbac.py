"""Least-privilege RBAC from what an operator declares (``setpoint generate rbac``).

A controller declares what it touches as :class:`Permissions`: the kinds it watches (read
only), the kinds it owns (creates and deletes), whose status it writes, on which it sets
finalizers or controller owner references, and whether it records events or takes part in
leader election. :func:`generate_rbac` turns any number of them into the smallest rules
that allow exactly that: a ClusterRole (or a Role per watched namespace) bound to the
operator's ServiceAccount, and a Role for the leader election Lease in the operator's
own namespace.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Permissions", "PolicyRule", "generate_rbac", "resource_of"]

# A kind as a typed class (with api_version and plural), "plural.group" ("deployments.apps",
# "configmaps"), or (group, plural)
Target = type | str | tuple[str, str]
PolicyRule = dict[str, Any]

READ = ("get", "list", "watch")
WRITE = ("create", "update", "patch", "delete")
VERB_ORDER = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
RBAC_API = "rbac.authorization.k8s.io/v1"

# built-in cluster-scoped resources, for targets given by name
CLUSTER_SCOPED = frozenset({
    ("", "namespaces"), ("", "nodes"), ("", "persistentvolumes"),
    ("apiextensions.k8s.io", "customresourcedefinitions"),
    ("rbac.authorization.k8s.io", "clusterroles"),
    ("rbac.authorization.k8s.io", "clusterrolebindings"),
    ("storage.k8s.io", "storageclasses"), ("storage.k8s.io", "csidrivers"),
    ("storage.k8s.io", "csinodes"), ("storage.k8s.io", "volumeattachments"),
    ("scheduling.k8s.io", "priorityclasses"), ("networking.k8s.io", "ingressclasses"),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
    ("certificates.k8s.io", "certificatesigningrequests"),
})


@dataclass(frozen=True)
class Permissions:
    """What an operator's controllers do with which kinds.

    - ``watches``: read (get, list, watch);
    - ``owns``: read and write (create, update, patch, delete);
    - ``writes_status``: update and patch of the ``status`` subresource;
    - ``finalizes``: update and patch of the object itself, to add and remove finalizers;
    - ``owners``: kinds named as the controller owner of other objects: Kubernetes asks
      for update on their ``finalizers`` subresource to set ``blockOwnerDeletion``;
    - ``events``: create and patch core Events (what the recorder writes, as
      kubebuilder's ``groups=core,resources=events,verbs=create;patch``);
    - ``leader_election``: get, create and update Leases, and create and patch Events, in
      the operator's namespace (what client-go's Lease lock does there, its events about
      the Lease included: kubebuilder's ``leader_election_role.yaml``);
    - ``rules``: any further PolicyRules, as dicts;
    - ``namespaces``: the namespaces the operator works in, or None for the whole cluster.
    """

    watches: Sequence[Target] = ()
    owns: Sequence[Target] = ()
    writes_status: Sequence[Target] = ()
    finalizes: Sequence[Target] = ()
    owners: Sequence[Target] = ()
    events: bool = False
    leader_election: bool = False
    rules: Sequence[PolicyRule] = ()
    namespaces: Sequence[str] | None = None

    def __or__(self, other: Permissions) -> Permissions:
        """Everything either needs; the namespaces too (None, the cluster, wins)."""
        namespaces = None if self.namespaces is None or other.namespaces is None else (
            tuple(dict.fromkeys([*self.namespaces, *other.namespaces]))
        )
        return Permissions(
            watches=(*self.watches, *other.watches), owns=(*self.owns, *other.owns),
            writes_status=(*self.writes_status, *other.writes_status),
            finalizes=(*self.finalizes, *other.finalizes),
            owners=(*self.owners, *other.owners),
            events=self.events or other.events,
            leader_election=self.leader_election or other.leader_election,
            rules=(*self.rules, *other.rules), namespaces=namespaces,
        )


@dataclass
class _Grants:
    verbs: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    cluster_scoped: set[tuple[str, str]] = field(default_factory=set)

    def add(self, target: Target, verbs: Iterable[str], subresource: str = "") -> None:
        group, plural, namespaced = resource_of(target)
        resource = f"{plural}/{subresource}" if subresource else plural
        self.verbs.setdefault((group, resource), set()).update(verbs)
        if not namespaced:
            self.cluster_scoped.add((group, resource))


def resource_of(target: Target) -> tuple[str, str, bool]:
    """(API group, resource, namespaced) of a typed class, ``"plural.group"`` or a pair."""
    if isinstance(target, type):
        api_version = getattr(target, "api_version", None)
        plural = getattr(target, "plural", None)
        if not isinstance(api_version, str) or not isinstance(plural, str):
            raise TypeError(f"{target.__name__} does not name an API resource")
        group = api_version.rpartition("/")[0]
        return group, plural, bool(getattr(target, "namespaced", True))
    if isinstance(target, tuple):
        group, plural = target
    else:
        plural, _, group = target.partition(".")
    return group, plural, (group, plural) not in CLUSTER_SCOPED


def _grants(p: Permissions) -> _Grants:
    g = _Grants()
    for t in p.watches:
        g.add(t, READ)
    for t in p.owns:
        g.add(t, (*READ, *WRITE))
    for t in p.writes_status:
        g.add(t, ("get", "update", "patch"), "status")
    for t in p.finalizes:
        g.add(t, ("update", "patch"))
    for t in p.owners:
        g.add(t, ("update",), "finalizers")
    if p.events:
        g.add(("", "events"), ("create", "patch"))
    return g


def _verb_rank(verb: str) -> tuple[int, str]:
    return (VERB_ORDER.index(verb) if verb in VERB_ORDER else len(VERB_ORDER), verb)


def _rules(grants: dict[tuple[str, str], set[str]]) -> list[PolicyRule]:
    """Rules grouping resources of one group that need the same verbs."""
    by_verbs: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (group, resource), verbs in grants.items():
        ordered = tuple(sorted(verbs, key=_verb_rank))
        by_verbs.setdefault((group, ordered), []).append(resource)
    rules = [
        {"apiGroups": [group], "resources": sorted(resources), "verbs": list(verbs)}
        for (group, verbs), resources in by_verbs.items()
    ]
    return sorted(rules, key=lambda r: (r["apiGroups"][0], r["resources"]))


def _permissions_of(source: Any) -> Permissions:
    if isinstance(source, Permissions):
        return source
    found = getattr(source, "permissions", None)
    found = found() if callable(found) else found
    if isinstance(found, Permissions):
        return found
    raise TypeError(f"{source!r} is neither Permissions nor declares .permissions")


def _role(kind: str, name: str, namespace: str | None, rules: list[PolicyRule],
          labels: dict[str, str]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": dict(labels)}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"apiVersion": RBAC_API, "kind": kind, "metadata": metadata, "rules": rules}


def _binding(kind: str, name: str, namespace: str | None, role_kind: str,
             service_account: str, sa_namespace: str,
             labels: dict[str, str]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": dict(labels)}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {
        "apiVersion": RBAC_API, "kind": kind, "metadata": metadata,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": service_account,
                      "namespace": sa_namespace}],
    }


def leader_election_rules() -> list[PolicyRule]:
    """What leader election needs in the lease's namespace: client-go's ``LeaseLock`` gets,
    creates and updates the Lease (resourcelock/leaselock.go ``Get``, ``Create``,
    ``Update``) and records its ``LeaderElection`` events there (``RecordEvent``), which
    the recorder creates and patches, as kubebuilder's ``leader_election_role.yaml``
    grants (its scaffold adds list, watch, patch and delete on leases, which the lock
    never uses)."""
    return [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
             "verbs": ["get", "create", "update"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]}]


def generate_rbac(
    sources: Permissions | Any | Iterable[Permissions | Any],
    *,
    name: str = "setpoint-operator",
    namespace: str = "default",
    service_account: str | None = None,
    leader_election_namespace: str | None = None,
) -> list[dict[str, Any]]:
    """Roles and bindings granting the operator exactly what its controllers declare.

    ``sources`` are :class:`Permissions` or controllers with a ``permissions`` attribute
    (or method); the operator runs as ServiceAccount ``service_account`` (default:
    ``name``) in ``namespace``. Cluster-wide operators get a ClusterRole and
    ClusterRoleBinding named ``name``; operators limited to namespaces get a Role and
    RoleBinding in each (plus a ClusterRole for cluster-scoped kinds, if any). Leader
    election adds a Role ``<name>-leader-election`` (:func:`leader_election_rules`) in
    ``leader_election_namespace`` (default: ``namespace``), where the Lease is.
    """
    if isinstance(sources, Permissions) or not isinstance(sources, Iterable):
        sources = [sources]
    merged = Permissions(namespaces=())
    for source in sources:
        merged = merged | _permissions_of(source)
    sa = service_account or name
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "setpoint"}
    grants = _grants(merged)
    out: list[dict[str, Any]] = []
    namespaced_grants = {k: v for k, v in grants.verbs.items() if k not in grants.cluster_scoped}
    cluster_grants = {k: v for k, v in grants.verbs.items() if k in grants.cluster_scoped}
    if merged.namespaces is None:
        rules = _rules(grants.verbs) + list(merged.rules)
        if rules:
            out += [_role("ClusterRole", name, None, rules, labels),
                    _binding("ClusterRoleBinding", name, None, "ClusterRole", sa, namespace,
                             labels)]
    else:
        if cluster_grants:
            cname = f"{name}-cluster"
            out += [_role("ClusterRole", cname, None, _rules(cluster_grants), labels),
                    _binding("ClusterRoleBinding", cname, None, "ClusterRole", sa, namespace,
                             labels)]
        rules = _rules(namespaced_grants) + list(merged.rules)
        for ns in merged.namespaces:
            if rules:
                out += [_role("Role", name, ns, rules, labels),
                        _binding("RoleBinding", name, ns, "Role", sa, namespace, labels)]
    if merged.leader_election:
        le = f"{name}-leader-election"
        lease_rules = leader_election_rules()
        lease_ns = leader_election_namespace or namespace
        out += [_role("Role", le, lease_ns, lease_rules, labels),
                _binding("RoleBinding", le, lease_ns, "Role", sa, namespace, labels)]
    return out
