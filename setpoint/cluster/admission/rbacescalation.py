"""RBAC escalation prevention: nobody grants permissions they do not hold.

As the apiserver's RBAC storage: a Role or ClusterRole may be created or updated only by a
user who holds every permission it grants (in its namespace; cluster-wide for a ClusterRole)
or may ``escalate`` it; a RoleBinding or ClusterRoleBinding only by a user who holds every
permission of the role it binds or may ``bind`` that role. Members of ``system:masters`` and
the server's own controllers are exempt. The refusal lists the missing permissions one rule
per line, as ``rbacv1helpers.CompactString`` writes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from setpoint.cluster.authorization.bootstrappolicy import MASTERS
from setpoint.cluster.authorization.rbac import GROUP
from setpoint.cluster.authorization.rbac import Attributes as AuthorizationAttributes
from setpoint.cluster.registry.admissionpoints import Attributes
from setpoint.machinery import errors
from setpoint.machinery import fielderrors as fe
from setpoint.machinery.gofmt import format_q_slice
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.authorization.rbac import Authorizer

ROLE_KINDS = {"Role": "roles", "ClusterRole": "clusterroles"}
BINDING_KINDS = {"RoleBinding": "rolebindings", "ClusterRoleBinding": "clusterrolebindings"}


def _has(items: list[str], wanted: str) -> bool:
    return wanted in items


def _has_all(items: list[str], wanted: list[str]) -> bool:
    return all(w in items for w in wanted)


def _resources_cover(owned: list[str], wanted: list[str]) -> bool:
    if "*" in owned or _has_all(owned, wanted):
        return True
    for path in wanted:
        if path in owned:
            continue
        if "/" not in path or f"*/{path.split('/', 1)[1]}" not in owned:
            return False
    return True


def _urls_cover(owned: list[str], wanted: list[str]) -> bool:
    return all(any(o == w or (o.endswith("*") and w.startswith(o.rstrip("*"))) for o in owned)
               for w in wanted)


def rule_covers(owner: Obj, sub: Obj) -> bool:
    """``ruleCovers``: whether ``owner`` grants everything the atomic rule ``sub`` does."""
    verbs, groups = owner.get("verbs") or [], owner.get("apiGroups") or []
    names, sub_names = owner.get("resourceNames") or [], sub.get("resourceNames") or []
    return (("*" in verbs or _has_all(verbs, sub.get("verbs") or []))
            and ("*" in groups or _has_all(groups, sub.get("apiGroups") or []))
            and _resources_cover(owner.get("resources") or [], sub.get("resources") or [])
            and _urls_cover(owner.get("nonResourceURLs") or [], sub.get("nonResourceURLs") or [])
            and (not names or (bool(sub_names) and _has_all(names, sub_names))))


def breakdown(rule: Obj) -> list[Obj]:
    """``BreakdownRule``: one rule per verb and group/resource/name, or per verb and URL."""
    out: list[Obj] = []
    verbs = rule.get("verbs") or []
    for group in rule.get("apiGroups") or []:
        for resource in rule.get("resources") or []:
            for verb in verbs:
                names = rule.get("resourceNames") or []
                if names:
                    out += [{"apiGroups": [group], "resources": [resource],
                             "resourceNames": [n], "verbs": [verb]} for n in names]
                else:
                    out.append({"apiGroups": [group], "resources": [resource],
                                "verbs": [verb]})
    for url in rule.get("nonResourceURLs") or []:
        out += [{"nonResourceURLs": [url], "verbs": [verb]} for verb in verbs]
    return out


def compact_string(rule: Obj) -> str:
    """``CompactString``: ``{APIGroups:["apps"], Resources:["deployments"], Verbs:[...]}``."""
    parts = [f"{label}:{format_q_slice(rule[key])}" for label, key in (
        ("APIGroups", "apiGroups"), ("Resources", "resources"),
        ("NonResourceURLs", "nonResourceURLs"), ("ResourceNames", "resourceNames"),
        ("Verbs", "verbs")) if rule.get(key)]
    return "{" + ", ".join(parts) + "}"


def _compact(missing: list[Obj]) -> list[Obj]:
    """``CompactRules``: atomic rules that differ only in their verb, merged."""
    merged: dict[tuple[Any, ...], Obj] = {}
    for rule in missing:
        key = tuple(tuple(rule.get(k) or ()) for k in ("apiGroups", "resources",
                                                        "resourceNames", "nonResourceURLs"))
        if key in merged:
            merged[key]["verbs"] = [*merged[key]["verbs"], *rule["verbs"]]
        else:
            merged[key] = {**rule, "verbs": list(rule["verbs"])}
    return list(merged.values())


def _role_reference_rules(authorizer: Authorizer, ref: Obj, namespace: str, resource: str,
                          name: str) -> list[Obj]:
    """rule.go ``GetRoleReferenceRules``: the bound role's rules; a role that does not exist
    or a kind that is no role refuses the binding (Forbidden, wrapping the lookup's error),
    before the binding is validated."""
    kind, role_name = str(ref.get("kind") or ""), str(ref.get("name") or "")
    if kind not in ROLE_KINDS:
        reason = f"unsupported role reference kind: {fe.go_quote(kind)}"
    elif authorizer.store.get(f"{GROUP}/{ROLE_KINDS[kind]}",
                              namespace if kind == "Role" else "", role_name) is None:
        reason = f'{ROLE_KINDS[kind]}.{GROUP} "{role_name}" not found'
    else:
        return authorizer.role_rules(ref, namespace)
    raise errors.forbidden(resource, name, reason, GROUP)


class EscalationCheck:
    """The admission step (see the module docstring)."""

    def __init__(self, authorizer: Authorizer) -> None:
        self.authorizer = authorizer

    def __call__(self, attributes: Attributes) -> None:
        rt, obj = attributes.rt, attributes.obj
        if rt.group != GROUP or (rt.kind not in ROLE_KINDS and rt.kind not in BINDING_KINDS):
            return
        user = attributes.user
        if user is None or MASTERS in (user.get("groups") or []):
            return
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace", "") if rt.namespaced else ""
        authorizer = self.authorizer
        if rt.kind in ROLE_KINDS:
            if authorizer.decide(user, AuthorizationAttributes(
                    "escalate", resource=rt.resource, group=GROUP, namespace=namespace,
                    name=meta.get("name", "")))[0]:
                return
            granted = list(obj.get("rules") or [])
        else:
            ref = obj.get("roleRef") or {}
            resource = ROLE_KINDS.get(ref.get("kind", ""), "")
            if authorizer.decide(user, AuthorizationAttributes(
                    "bind", resource=resource, group=GROUP, namespace=namespace,
                    name=ref.get("name", "")))[0]:
                return
            granted = _role_reference_rules(authorizer, ref, namespace, rt.resource,
                                            meta.get("name", ""))
        owned = [rule for rule, _ in authorizer.grants(user).rules_in(namespace)]
        missing = [sub for rule in granted for sub in breakdown(rule)
                   if not any(rule_covers(o, sub) for o in owned)]
        if missing:
            groups = format_q_slice(list(user.get("groups") or []))
            lines = sorted({compact_string(r) for r in _compact(missing)})
            raise errors.forbidden(
                rt.resource, meta.get("name", ""),
                f'user {fe.go_quote(str(user.get("username", "")))} (groups={groups}) is '
                "attempting to grant RBAC permissions not currently held:\n" + "\n".join(lines),
                GROUP)
