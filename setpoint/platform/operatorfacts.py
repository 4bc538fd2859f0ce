"""What the maturity check looks at: an operator's CRDs, the Deployment and ServiceAccount it
runs as, the RBAC rules bound to that account, and (on a cluster) its instances with the
objects they own, their pods and the events about them.

Read from manifests (``setpoint generate manifests`` output, or any CRD/RBAC/Deployment
YAML) or from a running cluster, where everything is listed once, kinds in parallel.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

from setpoint.client import ApiError, Client, Kind
from setpoint.platform.kinds import CRD, custom_kinds
from setpoint.platform.manifestshapes import shape_error
from setpoint.platform.settle import gather_settled

log = logging.getLogger(__name__)

Obj = dict[str, Any]

RBAC = "rbac.authorization.k8s.io/v1"

# the namespaced kinds an operator typically creates for an instance: (apiVersion, kind, plural)
CHILD_KINDS: tuple[tuple[str, str, str], ...] = (
    ("v1", "Pod", "pods"),
    ("v1", "Service", "services"),
    ("v1", "ConfigMap", "configmaps"),
    ("v1", "Secret", "secrets"),
    ("v1", "ServiceAccount", "serviceaccounts"),
    ("v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
    ("apps/v1", "Deployment", "deployments"),
    ("apps/v1", "ReplicaSet", "replicasets"),
    ("apps/v1", "StatefulSet", "statefulsets"),
    ("apps/v1", "DaemonSet", "daemonsets"),
    ("batch/v1", "Job", "jobs"),
    ("batch/v1", "CronJob", "cronjobs"),
    ("networking.k8s.io/v1", "Ingress", "ingresses"),
    ("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies"),
    ("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets"),
    ("rbac.authorization.k8s.io/v1", "Role", "roles"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings"),
)
PLURALS = {kind: plural for _, kind, plural in CHILD_KINDS}


class FactsError(Exception):
    """The operator cannot be found, or the manifests cannot be read."""


def meta(obj: Obj) -> Obj:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def ref(obj: Obj) -> str:
    """``Kind/namespace/name`` (``Kind/name`` when cluster-scoped)."""
    m = meta(obj)
    ns = m.get("namespace")
    return f"{obj.get('kind')}/{ns}/{m.get('name')}" if ns else f"{obj.get('kind')}/{m.get('name')}"


@dataclasses.dataclass(frozen=True)
class Grant:
    """One RBAC rule the operator's ServiceAccount holds, and through what."""

    rule: Obj
    role: str        # "ClusterRole/name" or "Role/namespace/name"
    binding: str     # "ClusterRoleBinding/name" or "RoleBinding/namespace/name"
    namespace: str | None  # where it applies; None: every namespace

    def allows(self, verb: str, group: str, resource: str) -> bool:
        r = self.rule
        return (_has(r.get("verbs"), verb) and _has(r.get("apiGroups"), group)
                and _has(r.get("resources"), resource))


def _has(values: Any, wanted: str) -> bool:
    values = values or ()
    return "*" in values or wanted in values


@dataclasses.dataclass
class OperatorFacts:
    """Everything the checks read about one operator."""

    name: str
    source: str
    live: bool                       # read from a running cluster
    crds: list[Obj]
    deployment: Obj | None
    service_account: tuple[str, str] | None   # (namespace, name) it runs as
    service_account_exists: bool
    grants: list[Grant]
    bound_roles: list[str]           # every role bound to the account ("ClusterRole/x")
    instances: list[Obj] = dataclasses.field(default_factory=list)
    objects: list[Obj] = dataclasses.field(default_factory=list)  # in instances' namespaces
    events: list[Obj] = dataclasses.field(default_factory=list)
    other_deployments: list[Obj] = dataclasses.field(default_factory=list)

    def may(self, verb: str, group: str, resource: str) -> list[Grant]:
        return [g for g in self.grants if g.allows(verb, group, resource)]

    def creatable_kinds(self) -> list[str]:
        """The child kinds the operator may create (every one under a wildcard rule)."""
        return [kind for api_version, kind, plural in CHILD_KINDS
                if self.may("create", api_version.rpartition("/")[0], plural)]

    # -- an instance's objects --------------------------------------------------------------

    def owned_by(self, uid: str) -> list[Obj]:
        return [o for o in self.objects
                if any(r.get("uid") == uid for r in meta(o).get("ownerReferences") or ())]

    def descendants(self, roots: Iterable[Obj]) -> list[Obj]:
        """``roots`` and everything below them by ownerReferences."""
        out: dict[str, Obj] = {}
        todo = list(roots)
        while todo:
            obj = todo.pop()
            uid = str(meta(obj).get("uid"))
            if uid in out:
                continue
            out[uid] = obj
            todo += self.owned_by(uid)
        return list(out.values())

    def unowned_candidates(self, instance: Obj) -> list[Obj]:
        """Objects that look made for ``instance`` but have no owner at all: in its
        namespace, of a kind the operator may create, created no earlier than it, and named
        after it (``NAME`` or ``NAME-…``) or labelled with its name."""
        m = meta(instance)
        name, namespace = str(m.get("name")), m.get("namespace")
        created = str(m.get("creationTimestamp") or "")
        kinds = set(self.creatable_kinds())
        out = []
        for obj in self.objects:
            om = meta(obj)
            if (om.get("namespace") != namespace or om.get("ownerReferences")
                    or obj.get("kind") not in kinds
                    or str(om.get("creationTimestamp") or "") < created):
                continue
            own_name = str(om.get("name"))
            if (own_name == name or own_name.startswith(name + "-")
                    or name in (om.get("labels") or {}).values()):
                out.append(obj)
        return out

    def pods_of(self, instance: Obj) -> list[Obj]:
        """The live pods below ``instance`` (through its owned objects, or through the
        unowned objects made for it)."""
        uid = str(meta(instance).get("uid"))
        roots = self.owned_by(uid) + self.unowned_candidates(instance)
        return sorted((o for o in self.descendants(roots)
                       if o.get("kind") == "Pod" and not meta(o).get("deletionTimestamp")),
                      key=lambda p: str(meta(p).get("name")))

    def events_about(self, instance: Obj) -> list[Obj]:
        uid = meta(instance).get("uid")
        return [e for e in self.events
                if (e.get("involvedObject") or e.get("regarding") or {}).get("uid") == uid]


# -- RBAC ---------------------------------------------------------------------------------------


def _subject_is(subject: Obj, namespace: str, name: str, binding_ns: str | None) -> bool:
    if subject.get("kind") == "ServiceAccount":
        return (subject.get("name") == name
                and (subject.get("namespace") or binding_ns) == namespace)
    if subject.get("kind") == "Group":
        # every service account, or every one of its namespace (rbac/v1 groups)
        return subject.get("name") in ("system:serviceaccounts",
                                       f"system:serviceaccounts:{namespace}")
    return False


def grants_of(account: tuple[str, str], objects: Sequence[Obj]) -> tuple[list[Grant], list[str]]:
    """The rules bound to ``account`` by the (Cluster)RoleBindings among ``objects``, read
    from the (Cluster)Roles among them; and the names of the roles bound."""
    namespace, name = account
    roles: dict[tuple[Any, Any, Any], Obj] = {
        ("ClusterRole", None, meta(o).get("name")): o for o in objects
        if o.get("kind") == "ClusterRole"}
    roles |= {("Role", meta(o).get("namespace") or "default", meta(o).get("name")): o
              for o in objects if o.get("kind") == "Role"}
    grants: list[Grant] = []
    bound: list[str] = []
    for binding in objects:
        kind = binding.get("kind")
        if kind not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        binding_ns = (meta(binding).get("namespace") or "default") if kind == "RoleBinding" \
            else None
        if not any(_subject_is(s, namespace, name, binding_ns)
                   for s in binding.get("subjects") or ()):
            continue
        role_ref = binding.get("roleRef") or {}
        role_kind = role_ref.get("kind")
        key = (role_kind, binding_ns if role_kind == "Role" else None, role_ref.get("name"))
        role_name = (f"Role/{binding_ns}/{role_ref.get('name')}" if role_kind == "Role"
                     else f"ClusterRole/{role_ref.get('name')}")
        bound.append(role_name)
        role = roles.get(key)
        for rule in (role or {}).get("rules") or ():
            grants.append(Grant(rule, role_name, ref(binding), binding_ns))
    return grants, bound


# -- manifests ----------------------------------------------------------------------------------


def read_manifests(paths: Sequence[str], stdin: str | None = None) -> list[Obj]:
    """Every object in the YAML or JSON files (directories: their *.yaml, *.yml, *.json;
    ``-``: ``stdin``); ``kind: List`` is unpacked."""
    texts: list[tuple[str, str]] = []
    for p in paths:
        if p == "-":
            texts.append(("-", stdin or ""))
            continue
        path = Path(p)
        files = sorted(f for f in path.iterdir() if f.suffix in (".yaml", ".yml", ".json")) \
            if path.is_dir() else [path]
        for f in files:
            try:
                texts.append((str(f), f.read_text()))
            except OSError as exc:
                raise FactsError(f"{f}: {exc.strerror}") from None
            except UnicodeDecodeError:
                raise FactsError(f"{f}: not UTF-8 text") from None
    out: list[Obj] = []
    for name, text in texts:
        try:
            documents = list(yaml.safe_load_all(text))
        except yaml.MarkedYAMLError as exc:
            # PyYAML's own text is five lines with a caret, naming "<unicode string>": one
            # line naming the file, as kubectl's error is
            mark = exc.problem_mark or exc.context_mark
            where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
            raise FactsError(f"{name}: not YAML: {where}{exc.problem or exc.context}") \
                from None
        except yaml.YAMLError as exc:
            raise FactsError(f"{name}: not YAML: {exc}") from None
        found: list[Obj] = []
        for doc in documents:
            if isinstance(doc, dict) and doc.get("kind") == "List":
                items = doc.get("items") or ()
                found += [i for i in items if isinstance(i, dict)] \
                    if isinstance(items, list) else []
            elif isinstance(doc, dict) and doc.get("kind"):
                found.append(doc)
        for obj in found:
            problem = shape_error(obj)
            if problem is not None:
                raise FactsError(f"{name}: {obj['kind']} {_name_of(obj)}: {problem}")
        out += found
    return out


def _name_of(obj: Obj) -> str:
    metadata = obj.get("metadata")
    return str(metadata.get("name")) if isinstance(metadata, dict) else "?"


def _pod_account(deployment: Obj) -> tuple[str, str]:
    spec = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
    name = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    return meta(deployment).get("namespace") or "default", str(name)


def facts_from_manifests(objects: list[Obj], source: str) -> OperatorFacts:
    """The operator the manifests describe: their first Deployment (or, without one, their
    only ServiceAccount)."""
    crds = [o for o in objects if o.get("kind") == "CustomResourceDefinition"]
    deployments = [o for o in objects if o.get("kind") == "Deployment"]
    accounts = {(meta(o).get("namespace") or "default", str(meta(o).get("name")))
                for o in objects if o.get("kind") == "ServiceAccount"}
    deployment = deployments[0] if deployments else None
    account: tuple[str, str] | None
    if deployment is not None:
        account = _pod_account(deployment)
        name = str(meta(deployment).get("name"))
    elif len(accounts) == 1:
        account = next(iter(accounts))
        name = account[1]
    else:
        account, name = None, ", ".join(
            str((c.get("spec") or {}).get("names", {}).get("kind")) for c in crds) or "?"
    grants, bound = grants_of(account, objects) if account else ([], [])
    return OperatorFacts(name=name, source=source, live=False, crds=crds,
                         deployment=deployment, service_account=account,
                         service_account_exists=account in accounts,
                         grants=grants, bound_roles=bound,
                         other_deployments=deployments[1:])


# -- a cluster ----------------------------------------------------------------------------------


async def _list(client: Client, kind: Kind, namespace: str | None = None) -> list[Obj]:
    try:
        return list((await client.list_all(kind, namespace=namespace)).items)
    except ApiError as exc:
        # a kind this server does not serve, or that we may not list: nothing to look at
        log.info("check_list_skipped kind=%s code=%s", kind.kind, exc.code)
        return []


def _owned_crds(crds: list[Obj], grants: list[Grant]) -> list[Obj]:
    """The CRDs whose status the operator may write (the ones it serves); failing that,
    the ones it may watch by name (wildcards name none)."""
    def named(crd: Obj, resource: str, verb: str) -> bool:
        spec = crd.get("spec") or {}
        group, plural = spec.get("group"), (spec.get("names") or {}).get("plural")
        return any(verb in (g.rule.get("verbs") or ()) and group in (g.rule.get("apiGroups") or ())
                   and resource.format(plural) in (g.rule.get("resources") or ())
                   for g in grants)

    by_status = [c for c in crds if named(c, "{}/status", "update") or
                 named(c, "{}/status", "patch")]
    return by_status or [c for c in crds if named(c, "{}", "watch")]


async def facts_from_cluster(client: Client, name: str, namespace: str,
                             crd_names: Sequence[str] = (),
                             instance: tuple[str, str] | None = None) -> OperatorFacts:
    """The operator running as Deployment ``name`` in ``namespace`` (or, with no such
    Deployment, as the ServiceAccount ``name``); its CRDs are the ones its RBAC lets it
    write the status of, plus ``crd_names``; its instances all of theirs, or only
    ``instance`` (kind, name)."""
    crds, deployments, accounts, *rbac_lists = await gather_settled(
        _list(client, CRD), _list(client, Kind("apps/v1", "Deployment"), namespace),
        _list(client, Kind("v1", "ServiceAccount"), namespace),
        *(_list(client, Kind(RBAC, k)) for k in ("ClusterRole", "ClusterRoleBinding",
                                                  "Role", "RoleBinding")))
    rbac = [o for lst in rbac_lists for o in lst]
    deployment = next((d for d in deployments if meta(d).get("name") == name), None)
    account_names = {str(meta(a).get("name")) for a in accounts}
    if deployment is not None:
        account = _pod_account(deployment)
    elif name in account_names:
        account = (namespace, name)
    else:
        raise FactsError(f"no Deployment or ServiceAccount named {name!r} in namespace "
                         f"{namespace!r}")
    grants, bound = grants_of(account, rbac)
    chosen = _owned_crds(crds, grants)
    wanted = set(crd_names)
    if instance is not None:
        wanted |= {str(meta(c).get("name")) for c in crds
                   if instance[0].lower() in _kind_names(c)}
    chosen += [c for c in crds if meta(c).get("name") in wanted and c not in chosen]
    missing = wanted - {str(meta(c).get("name")) for c in crds}
    if missing:
        raise FactsError(f"no CustomResourceDefinition named {', '.join(sorted(missing))}")
    if instance is not None and not any(instance[0].lower() in _kind_names(c) for c in chosen):
        raise FactsError(f"no CustomResourceDefinition serves kind {instance[0]!r}")
    if not chosen:
        raise FactsError(f"cannot tell which CRDs {name!r} serves (its RBAC names none by "
                         "its status subresource): pass --crd NAME")
    instance_lists = await gather_settled(*(_list(client, k.ref) for k in custom_kinds(chosen)))
    instances = [i for lst in instance_lists for i in lst]
    if instance is not None:
        kinds = {n for c in chosen if instance[0].lower() in _kind_names(c)
                 for n in _kind_names(c)}
        instances = [i for i in instances if str(i.get("kind")).lower() in kinds
                     and meta(i).get("name") == instance[1]
                     and meta(i).get("namespace") in (namespace, None)]
        if not instances:
            raise FactsError(f"no {instance[0]} named {instance[1]!r} in namespace "
                             f"{namespace!r}")
    namespaces = {meta(i).get("namespace") for i in instances} - {None}
    object_lists = await gather_settled(
        *(_list(client, Kind(v, k)) for v, k, _ in CHILD_KINDS),
        _list(client, Kind("v1", "Event")))
    events = object_lists[-1]
    objects = [o for lst in object_lists[:-1] for o in lst
               if meta(o).get("namespace") in namespaces]
    account_exists = account[1] in account_names
    return OperatorFacts(
        name=name, source=f"cluster, namespace {namespace}", live=True, crds=chosen,
        deployment=deployment, service_account=account,
        service_account_exists=account_exists, grants=grants, bound_roles=bound,
        instances=instances, objects=objects, events=events,
        other_deployments=[d for d in deployments if d is not deployment])


def _kind_names(crd: Obj) -> set[str]:
    """Every name ``--instance KIND/NAME`` may use for the CRD's kind (lowercased)."""
    names = (crd.get("spec") or {}).get("names") or {}
    out = {str(names.get(k, "")).lower() for k in ("kind", "plural", "singular")}
    out |= {str(s).lower() for s in names.get("shortNames") or ()}
    out.add(str(meta(crd).get("name")).lower())
    return out - {""}
