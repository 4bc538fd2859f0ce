"""Authorization: RBAC, as kube-apiserver's ``--authorization-mode=RBAC`` decides.

Every request is judged by who sends it (user name and groups) and what it asks for (verb,
API group, resource and subresource, namespace, name; or a non-resource path). Members of
``system:masters`` may do anything (the privileged-group authorizer that comes before RBAC).
Everyone else is allowed exactly what a rule grants them: a ClusterRoleBinding's role
everywhere, a RoleBinding's role (a Role of its namespace, or a ClusterRole) in its
namespace. Rules match as ``rbac/v1`` says: ``*`` for any verb, group or resource,
``*/<subresource>`` for that subresource of any resource, ``resourceNames`` only when the
request names an object, ``/path/*`` as a prefix of non-resource URLs.

The applicable rules of a user are computed once and kept until an RBAC object changes.
The bootstrap roles every cluster has
(:mod:`setpoint.cluster.authorization.bootstrappolicy`) are created with
their bindings when the server starts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from setpoint.cluster.authentication.tokens import service_account_username
from setpoint.cluster.authorization.bootstrappolicy import MASTERS
from setpoint.machinery import errors
from setpoint.machinery.errors import StatusError
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.storage import Event, Informer

GROUP = "rbac.authorization.k8s.io"
KEYS = {f"{GROUP}/{r}": r for r in ("roles", "rolebindings", "clusterroles",
                                    "clusterrolebindings")}


class Attributes(NamedTuple):
    """What a request asks to do, as the authorizer sees it. (A named tuple: immutable, and
    built for every request at a fraction of a frozen dataclass's cost.)"""

    verb: str
    path: str = ""
    resource: str = ""
    subresource: str = ""
    group: str = ""
    version: str = ""
    namespace: str = ""
    name: str = ""

    @property
    def is_resource(self) -> bool:
        return bool(self.resource)


Grant = tuple[Obj, str]
"""A rule and the binding it comes from, worded as RBAC's "allowed by" reason."""


@dataclass
class Grants:
    """The rules a user holds: everywhere, and per namespace."""

    cluster: list[Grant] = field(default_factory=list)
    namespaced: dict[str, list[Grant]] = field(default_factory=dict)

    def rules_in(self, namespace: str) -> Iterable[Grant]:
        yield from self.cluster
        if namespace:
            yield from self.namespaced.get(namespace, ())


def _matches(items: list[str] | None, wanted: str) -> bool:
    items = items or []
    return "*" in items or wanted in items


def _resource_matches(rule: Obj, attrs: Attributes) -> bool:
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    for resource in rule.get("resources") or []:
        if resource in ("*", combined):
            return True
        if attrs.subresource and resource == f"*/{attrs.subresource}":
            return True
    return False


def _url_matches(rule: Obj, path: str) -> bool:
    for url in rule.get("nonResourceURLs") or []:
        if url == "*" or url == path or (url.endswith("*") and path.startswith(url[:-1])):
            return True
    return False


def rule_allows(rule: Obj, attrs: Attributes) -> bool:
    """Whether one PolicyRule grants the request."""
    if not _matches(rule.get("verbs"), attrs.verb):
        return False
    if not attrs.is_resource:
        return _url_matches(rule, attrs.path)
    if not _matches(rule.get("apiGroups"), attrs.group) or not _resource_matches(rule, attrs):
        return False
    names = rule.get("resourceNames") or []
    return not names or attrs.name in names


def _describe_subject(subject: Obj, binding_namespace: str) -> str:
    """rule.go ``describeSubject``."""
    kind, name = subject.get("kind", ""), subject.get("name", "")
    if kind == "ServiceAccount":
        name = f'{name}/{subject.get("namespace") or binding_namespace}'
    return f'{kind} "{name}"'


def _subject_matches(subject: Obj, user: Obj) -> bool:
    kind, name = subject.get("kind"), subject.get("name", "")
    if kind == "User":
        return bool(user.get("username") == name)
    if kind == "Group":
        return name in (user.get("groups") or [])
    if kind == "ServiceAccount":
        return bool(user.get("username") ==
                    service_account_username(subject.get("namespace", ""), name))
    return False


class Authorizer:
    """RBAC over the cluster's stored roles and bindings (see the module docstring)."""

    def __init__(self, store: Informer) -> None:
        self.store = store
        self._cache: dict[tuple[str, tuple[str, ...]], Grants] = {}
        store.add_listener(self._on_change, KEYS)

    def __repr__(self) -> str:
        return f"Authorizer(users cached={len(self._cache)})"

    def _on_change(self, event: Event) -> None:
        if event.resource in KEYS:
            self._cache.clear()

    def bootstrap(self, ensure: Callable[[str, str, str, str | None, Obj], Obj]) -> None:
        """Create the bootstrap roles and bindings (those absent) through
        ``ensure(group, version, resource, namespace, object)``, as the
        ``rbac/bootstrap-roles`` post-start hook does (roles before their bindings)."""
        from setpoint.cluster.authorization import bootstrappolicy as policy

        for role in policy.cluster_roles():
            ensure(GROUP, "v1", "clusterroles", None, role)
        for binding in policy.cluster_role_bindings():
            ensure(GROUP, "v1", "clusterrolebindings", None, binding)
        for role in policy.roles():
            ensure(GROUP, "v1", "roles", role["metadata"]["namespace"], role)
        for binding in policy.role_bindings():
            ensure(GROUP, "v1", "rolebindings", binding["metadata"]["namespace"], binding)

    # -- deciding ------------------------------------------------------------------------

    def decide(self, user: Obj, attrs: Attributes) -> tuple[bool, str]:
        """(allowed, why) — the reason names the binding that allows, as RBAC's does."""
        if MASTERS in (user.get("groups") or []):
            return True, ""
        for rule, source in self.grants(user).rules_in(attrs.namespace):
            if rule_allows(rule, attrs):
                return True, f"RBAC: allowed by {source}"
        return False, ""

    def authorize(self, user: Obj, attrs: Attributes) -> None:
        """Return if ``user`` may; else the apiserver's 403 Forbidden."""
        if not self.decide(user, attrs)[0]:
            raise forbidden(user, attrs)

    def rules(self, user: Obj, namespace: str) -> tuple[list[Obj], list[Obj]]:
        """(resource rules, non-resource rules) ``user`` holds in ``namespace`` (what a
        SelfSubjectRulesReview answers). Only RBAC's bindings count, ``system:masters``
        included: kube-apiserver's privileged-group authorizer decides but resolves no
        rules (pkg/kubeapiserver/authorizer/reload.go appends it to the authorizers, not
        to the rule resolvers), so an administrator's list is cluster-admin's rules beside
        those of system:basic-user, system:discovery and system:public-info-viewer."""
        resource: list[Obj] = []
        non_resource: list[Obj] = []
        for rule, _ in self.grants(user).rules_in(namespace):
            if rule.get("nonResourceURLs"):
                non_resource.append({"verbs": rule.get("verbs") or [],
                                     "nonResourceURLs": rule["nonResourceURLs"]})
            else:
                entry = {k: rule[k] for k in ("verbs", "apiGroups", "resources",
                                              "resourceNames") if rule.get(k)}
                resource.append(entry)
        return resource, non_resource

    def grants(self, user: Obj) -> Grants:
        """The rules ``user`` holds (collected once per RBAC state)."""
        key = (str(user.get("username", "")), tuple(user.get("groups") or ()))
        grants = self._cache.get(key)
        if grants is None:
            grants = self._cache[key] = self._collect(user)
        return grants

    def _collect(self, user: Obj) -> Grants:
        store = self.store
        grants = Grants()
        for kind, key in (("ClusterRoleBinding", "clusterrolebindings"),
                          ("RoleBinding", "rolebindings")):
            for binding in store.list(f"{GROUP}/{key}"):
                subject = next((s for s in binding.get("subjects") or []
                                if _subject_matches(s, user)), None)
                if subject is None:
                    continue
                namespace = binding["metadata"].get("namespace", "")
                ref = binding.get("roleRef") or {}
                # pkg/registry/rbac/validation/rule.go, the binding describers: a
                # RoleBinding is "name/namespace", a service account "name/namespace"
                name = binding["metadata"]["name"]
                shown = f"{name}/{namespace}" if namespace else name
                source = (f'{kind} "{shown}" of {ref.get("kind", "")} "{ref.get("name", "")}" '
                          f"to {_describe_subject(subject, namespace)}")
                rules = [(r, source) for r in self.role_rules(ref, namespace)]
                if namespace:
                    grants.namespaced.setdefault(namespace, []).extend(rules)
                else:
                    grants.cluster.extend(rules)
        return grants

    def role_rules(self, ref: Obj, namespace: str) -> list[Obj]:
        """The rules of the role ``ref`` names (a Role of ``namespace``, or a ClusterRole)."""
        store = self.store
        if ref.get("kind") == "ClusterRole":
            role = store.get(f"{GROUP}/clusterroles", "", ref.get("name", ""))
        elif ref.get("kind") == "Role" and namespace:
            role = store.get(f"{GROUP}/roles", namespace, ref.get("name", ""))
        else:
            role = None
        return list((role or {}).get("rules") or [])


def forbidden(user: Obj, attrs: Attributes) -> StatusError:
    """The 403 the apiserver answers a request its authorizer refused."""
    username = user.get("username", "")
    if not attrs.is_resource:
        message = f'User "{username}" cannot {attrs.verb} path "{attrs.path}"'
        return StatusError(403, "Forbidden", f"forbidden: {message}")
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else \
        "at the cluster scope"
    message = (f'User "{username}" cannot {attrs.verb} resource "{resource}" in API group '
               f'"{attrs.group}" {where}')
    return errors.forbidden(attrs.resource, attrs.name, message, attrs.group)
