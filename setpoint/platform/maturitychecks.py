"""The maturity checks that read what is there: the CRDs, the RBAC, the operator's
Deployment and, on a cluster, its instances, their objects, pods and events.

The one that acts on the cluster (restarting a pod) is ``podrestart.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from setpoint.machinery.quantity import QuantityError, parse_quantity
from setpoint.platform.maturity import Verdict, verdict
from setpoint.platform.operatorfacts import Obj, OperatorFacts, meta, ref
from setpoint.resources.relationships import (
    ANNOTATION_RELATIONSHIP,
    COMPOSITION,
    LABEL_RELATIONSHIP,
    SPECPROPERTY_RELATIONSHIP,
    USAGE,
    parse_composition,
)

# apiextensions/v1 version names: v1, v2beta1, v3alpha2 (k8s.io/apimachinery/pkg/version)
VERSION_NAME = re.compile(r"^v\d+((alpha|beta)\d+)?$")
DANGEROUS_VERBS = ("escalate", "bind", "impersonate")
BROAD_ROLES = ("ClusterRole/cluster-admin", "ClusterRole/admin", "ClusterRole/edit")


def _kind(crd: Obj) -> str:
    return str(((crd.get("spec") or {}).get("names") or {}).get("kind"))


def _versions(crd: Obj) -> list[Obj]:
    spec = crd.get("spec") or {}
    versions = spec.get("versions")
    if versions:
        return list(versions)
    # apiextensions/v1beta1: one version, schema and columns beside it
    return [{"name": spec.get("version"), "served": True, "storage": True,
             "schema": {"openAPIV3Schema": (spec.get("validation") or {}).get("openAPIV3Schema")},
             "additionalPrinterColumns": spec.get("additionalPrinterColumns"),
             "subresources": spec.get("subresources")}] if spec.get("version") else []


def _storage(crd: Obj) -> Obj:
    versions = _versions(crd)
    return next((v for v in versions if v.get("storage")), versions[0] if versions else {})


def _schema(version: Obj) -> Obj:
    return ((version.get("schema") or {}).get("openAPIV3Schema")) or {}


def _part(version: Obj, name: str) -> Obj | None:
    part = (_schema(version).get("properties") or {}).get(name)
    return part if isinstance(part, dict) else None


def _schemaless(part: Obj | None) -> bool:
    # with no properties, a spec is either kept whole (x-kubernetes-preserve-unknown-fields)
    # or pruned to nothing: in neither case does the schema say what it holds
    return part is None or not part.get("properties")


def _walk(schema: Obj, path: str) -> Iterator[tuple[str, Obj]]:
    for name, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, dict):
            yield f"{path}.{name}", sub
            yield from _walk(sub, f"{path}.{name}")
    items = schema.get("items")
    if isinstance(items, dict):
        yield from _walk(items, f"{path}[]")


def _count(schema: Obj, key: str) -> int:
    """How many nodes of ``schema`` have ``key`` (CEL rules: how many rules)."""
    nodes = [schema, *(s for _, s in _walk(schema, ""))]
    if key == "x-kubernetes-validations":
        return sum(len(n.get(key) or ()) for n in nodes)
    return sum(key in n for n in nodes[1:])


def _value_at(obj: Obj, path: str) -> Any:
    value: Any = obj
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


# -- the API ------------------------------------------------------------------------------------


def crd_schema(facts: OperatorFacts) -> Verdict:
    if not facts.crds:
        return verdict("crd-schema", "fail", ["no CustomResourceDefinition found"])
    evidence, ok = [], True
    for crd in facts.crds:
        for version in _versions(crd):
            spec = _part(version, "spec")
            where = f"{_kind(crd)} {version.get('name')}"
            if _schemaless(spec):
                ok = False
                evidence.append(f"{where}: spec has no declared properties (any spec is "
                                "accepted)")
                continue
            assert spec is not None
            fields = sum(1 for _ in _walk(spec, ""))
            evidence.append(f"{where}: spec declares {fields} fields, "
                            f"{_count(spec, 'description')} described, "
                            f"{_count(_schema(version), 'x-kubernetes-validations')} CEL rules")
    return verdict("crd-schema", "pass" if ok else "fail", evidence)


def crd_versioning(facts: OperatorFacts) -> Verdict:
    if not facts.crds:
        return verdict("crd-versioning", "skip", ["no CRD"])
    evidence, ok = [], True
    for crd in facts.crds:
        versions = _versions(crd)
        names = [str(v.get("name")) for v in versions]
        storage = [n for n, v in zip(names, versions, strict=True) if v.get("storage")]
        served = [v for v in versions if v.get("served")]
        strategy = ((crd.get("spec") or {}).get("conversion") or {}).get("strategy", "None")
        described = ", ".join(
            f"{n} ({'served' if v.get('served') else 'not served'}"
            f"{', storage' if v.get('storage') else ''}"
            f"{', deprecated' if v.get('deprecated') else ''})"
            for n, v in zip(names, versions, strict=True))
        evidence.append(f"{_kind(crd)}: {described}; conversion {strategy}")
        if len(storage) != 1:
            ok = False
            evidence.append(f"{_kind(crd)}: {len(storage)} storage versions (exactly one "
                            "must be)")
        bad = [n for n in names if not VERSION_NAME.match(n)]
        if bad:
            ok = False
            evidence.append(f"{_kind(crd)}: {', '.join(bad)} is not a Kubernetes version "
                            "name (v1, v1beta1, v2alpha1)")
        schemas = {repr(_schema(v)) for v in served}
        if len(schemas) > 1 and strategy == "None":
            ok = False
            evidence.append(f"{_kind(crd)}: served versions differ in schema but conversion "
                            "is None (fields are lost between versions)")
    return verdict("crd-versioning", "pass" if ok else "fail", evidence)


def printer_columns(facts: OperatorFacts) -> Verdict:
    evidence, ok = [], bool(facts.crds)
    for crd in facts.crds:
        columns = [c.get("name") for c in _storage(crd).get("additionalPrinterColumns") or ()
                   if c.get("name") != "Age"]
        if columns:
            evidence.append(f"{_kind(crd)}: {', '.join(map(str, columns))}")
        else:
            ok = False
            evidence.append(f"{_kind(crd)}: no printer columns (kubectl get shows only NAME "
                            "and AGE)")
    return verdict("printer-columns", "pass" if ok else "fail", evidence or ["no CRD"])


def scale_subresource(facts: OperatorFacts) -> Verdict:
    evidence, ok = [], False
    for crd in facts.crds:
        scale = (_storage(crd).get("subresources") or {}).get("scale")
        if scale:
            ok = True
            evidence.append(f"{_kind(crd)}: scale {scale.get('specReplicasPath')} / "
                            f"{scale.get('statusReplicasPath')}")
        else:
            evidence.append(f"{_kind(crd)}: no scale subresource")
    return verdict("scale-subresource", "pass" if ok else "fail", evidence or ["no CRD"])


def relationship_annotations(facts: OperatorFacts) -> Verdict:
    creates = facts.creatable_kinds()
    created: dict[str, set[str]] = {}
    for instance in facts.instances:
        kinds = {str(o.get("kind")) for o in facts.owned_by(str(meta(instance).get("uid")))}
        created.setdefault(str(instance.get("kind")), set()).update(kinds)
    if not creates and not any(created.values()):
        return verdict("relationship-annotations", "skip",
                       ["the operator creates no objects: no composition to declare"])
    evidence, ok = [], True
    for crd in facts.crds:
        annotations = meta(crd).get("annotations") or {}
        composition = parse_composition(annotations)
        kind = _kind(crd)
        if composition:
            evidence.append(f"{kind}: {COMPOSITION}: {', '.join(composition)}")
            undeclared = sorted(created.get(kind, set()) - set(composition))
            if undeclared:
                ok = False
                evidence.append(f"{kind}: instances own {', '.join(undeclared)}, which "
                                f"{COMPOSITION} does not name")
        else:
            ok = False
            seen = sorted(created.get(kind, set()))
            evidence.append(f"{kind}: no {COMPOSITION} annotation; " + (
                f"its instances own {', '.join(seen)}" if seen else
                f"the operator may create {', '.join(creates)}"))
        declared = [k for k in (ANNOTATION_RELATIONSHIP, LABEL_RELATIONSHIP,
                                SPECPROPERTY_RELATIONSHIP, USAGE) if annotations.get(k)]
        evidence.append(f"{kind}: " + ("; ".join(f"{k}: {annotations[k]}" for k in declared)
                                       if declared else "no annotation, label or spec-property "
                                       "relationship declared (needed only when instances "
                                       "depend on other objects by them)"))
    return verdict("relationship-annotations", "pass" if ok else "fail", evidence)


# -- scheduling settings passed down to pods -----------------------------------------------------


def _is_resources(name: str, schema: Obj) -> bool:
    props = schema.get("properties") or {}
    return "requests" in props or "limits" in props


def _paths(crd: Obj, matches: Callable[[str, Obj], bool]) -> list[str]:
    spec = _part(_storage(crd), "spec")
    found = [p for p, s in _walk(spec or {}, "spec") if matches(p.rpartition(".")[2], s)]
    # a match's own sub-fields are not separate settings
    found = [p for p in found if not any(p.startswith(q + ".") for q in found if q != p)]
    return sorted(found, key=lambda p: (p.count("."), p))


def _same_quantity(a: Any, b: Any) -> bool:
    try:
        return parse_quantity(str(a)) == parse_quantity(str(b))
    except QuantityError:
        return str(a) == str(b)


def _resources_differ(wanted: Obj, pod: Obj) -> list[str]:
    out = []
    for c in (pod.get("spec") or {}).get("containers") or ():
        have = c.get("resources") or {}
        for section in ("requests", "limits"):
            for key, quantity in (wanted.get(section) or {}).items():
                got = (have.get(section) or {}).get(key)
                if got is None or not _same_quantity(got, quantity):
                    out.append(f"container {c.get('name')}: {section}.{key} is {got or 'unset'}"
                               f", the instance asks {quantity}")
    return out


def _node_selector_differs(wanted: Obj, pod: Obj) -> list[str]:
    have = (pod.get("spec") or {}).get("nodeSelector") or {}
    return [f"nodeSelector {k}={v} missing" for k, v in wanted.items() if have.get(k) != v]


def _toleration_key(t: Obj) -> tuple[Any, ...]:
    return (t.get("key"), t.get("operator") or "Equal", t.get("value") or "",
            t.get("effect") or "", t.get("tolerationSeconds"))


def _tolerations_differ(wanted: list[Obj], pod: Obj) -> list[str]:
    have = {_toleration_key(t) for t in (pod.get("spec") or {}).get("tolerations") or ()}
    return [f"toleration {t.get('key')}={t.get('value', '')}:{t.get('effect', '')} missing"
            for t in wanted if _toleration_key(t) not in have]


PASSDOWN: dict[str, tuple[str, Callable[[str, Obj], bool], Callable[[Any, Obj], list[str]]]] = {
    "resources": ("resources", _is_resources, _resources_differ),
    "node-selector": ("nodeSelector", lambda n, s: n == "nodeSelector", _node_selector_differs),
    "tolerations": ("tolerations", lambda n, s: n == "tolerations", _tolerations_differ),
}


def passed_down(check_id: str, facts: OperatorFacts) -> Verdict:
    """The setting is a field of the spec (its schema, or, schema-less, an instance that
    sets it), and every pod of every instance that sets it carries it."""
    field, matches, differs = PASSDOWN[check_id]
    evidence: list[str] = []
    exposed: dict[str, list[str]] = {}
    for crd in facts.crds:
        kind = _kind(crd)
        paths = _paths(crd, matches)
        if not paths and _schemaless(_part(_storage(crd), "spec")):
            setters = [i for i in facts.instances
                       if i.get("kind") == kind and (i.get("spec") or {}).get(field)]
            if setters:
                paths = [f"spec.{field}"]
                evidence.append(f"{kind}: no schema, but {ref(setters[0])} sets spec.{field}")
        if paths:
            exposed[kind] = paths
            evidence.append(f"{kind}: exposed as {', '.join(paths)}")
        else:
            evidence.append(f"{kind}: the spec has no {field} field")
    if not exposed:
        return verdict(check_id, "fail", evidence or ["no CRD"])
    verified, problems = 0, []
    for instance in facts.instances:
        paths = exposed.get(str(instance.get("kind")), [])
        path = next((p for p in paths if _value_at(instance, p)), None)
        if path is None:
            continue
        pods = facts.pods_of(instance)
        if not pods:
            evidence.append(f"{ref(instance)} sets {path}, but has no pods to check")
            continue
        wanted = _value_at(instance, path)
        for pod in pods:
            problems += [f"Pod {meta(pod).get('name')}: {d}" for d in differs(wanted, pod)]
        verified += 1
        evidence.append(f"{ref(instance)} sets {path}: checked on {len(pods)} pods "
                        f"({', '.join(str(meta(p).get('name')) for p in pods)})")
    evidence += problems
    if problems:
        return verdict(check_id, "fail", evidence)
    if not verified:
        evidence.append("passing down not verified: no running instance sets it"
                        + ("" if facts.live else " (run with --cluster)"))
        return verdict(check_id, "skip", evidence)
    return verdict(check_id, "pass", evidence)


# -- what the operator does to its instances -------------------------------------------------------


def owner_references(facts: OperatorFacts) -> Verdict:
    if not facts.instances:
        return verdict("owner-references", "skip", [
            "no running instance to look at" + ("" if facts.live else " (run with --cluster)")])
    evidence, ok, any_owned = [], True, False
    for instance in facts.instances:
        owned = facts.owned_by(str(meta(instance).get("uid")))
        loose = facts.unowned_candidates(instance)
        if owned:
            any_owned = True
            controller = sum(1 for o in owned for r in meta(o).get("ownerReferences") or ()
                             if r.get("uid") == meta(instance).get("uid") and r.get("controller"))
            evidence.append(f"{ref(instance)} owns {len(owned)} objects ({controller} as "
                            f"controller): " + ", ".join(
                                f"{o.get('kind')}/{meta(o).get('name')}" for o in owned))
        for obj in loose:
            ok = False
            evidence.append(f"{ref(obj)} has no ownerReference (made for {ref(instance)}: "
                            "deleting it leaves this behind)")
        if not owned and not loose:
            evidence.append(f"{ref(instance)}: no object found that it owns")
    return verdict("owner-references", "pass" if ok and any_owned else "fail", evidence)


def _conditions_schema(crd: Obj) -> bool:
    status = _part(_storage(crd), "status") or {}
    conditions = (status.get("properties") or {}).get("conditions") or {}
    item = (conditions.get("items") or {}).get("properties") or {}
    return "type" in item and "status" in item


def _observed_generation_schema(crd: Obj) -> bool:
    status = _part(_storage(crd), "status") or {}
    return "observedGeneration" in (status.get("properties") or {})


def _status_check(check_id: str, facts: OperatorFacts, in_schema: Callable[[Obj], bool],
                  on_instance: Callable[[Obj], str | None], what: str) -> Verdict:
    evidence, ok = [], True
    for crd in facts.crds:
        has_status = "status" in (_storage(crd).get("subresources") or {})
        declared = in_schema(crd)
        evidence.append(f"{_kind(crd)}: {what} {'declared' if declared else 'not declared'} "
                        f"in the status schema; status subresource "
                        f"{'on' if has_status else 'off'}")
        if not declared and not facts.live:
            ok = False
    checked = 0
    for instance in facts.instances:
        problem = on_instance(instance)
        checked += 1
        if problem:
            ok = False
            evidence.append(f"{ref(instance)}: {problem}")
        else:
            evidence.append(f"{ref(instance)}: {what} as expected")
    if facts.live and not checked and not all(in_schema(c) for c in facts.crds):
        ok = False
    return verdict(check_id, "pass" if ok and facts.crds else "fail", evidence or ["no CRD"])


def _instance_conditions(instance: Obj) -> str | None:
    conditions = (instance.get("status") or {}).get("conditions") or []
    if not conditions:
        return "no status.conditions"
    bad = [c for c in conditions if not c.get("type") or c.get("status") not in
           ("True", "False", "Unknown")]
    if bad:
        return f"{len(bad)} conditions without a type or a True/False/Unknown status"
    return None


def _instance_generation(instance: Obj) -> str | None:
    generation = meta(instance).get("generation")
    observed = (instance.get("status") or {}).get("observedGeneration")
    if observed is None:
        return "no status.observedGeneration"
    if observed != generation:
        return f"status.observedGeneration {observed} != metadata.generation {generation}"
    return None


def status_conditions(facts: OperatorFacts) -> Verdict:
    return _status_check("status-conditions", facts, _conditions_schema,
                         _instance_conditions, "conditions")


def observed_generation(facts: OperatorFacts) -> Verdict:
    return _status_check("observed-generation", facts, _observed_generation_schema,
                         _instance_generation, "observedGeneration")


def events(facts: OperatorFacts) -> Verdict:
    grants = facts.may("create", "", "events") + facts.may("create", "events.k8s.io", "events")
    evidence = [f"may create events ({grants[0].role})" if grants
                else "no rule grants create on events (core or events.k8s.io)"]
    if not facts.instances:
        evidence.append("none observed: no running instance"
                        + ("" if facts.live else " (run with --cluster)"))
        return verdict("events", "skip" if grants else "fail", evidence)
    seen = 0
    for instance in facts.instances:
        about = facts.events_about(instance)
        seen += len(about)
        reasons = sorted({str(e.get("reason")) for e in about})
        evidence.append(f"{ref(instance)}: {len(about)} events"
                        + (f" ({', '.join(reasons)})" if reasons else ""))
    return verdict("events", "pass" if seen else "fail", evidence)


# -- how the operator runs ------------------------------------------------------------------------


def service_account(facts: OperatorFacts) -> Verdict:
    if facts.service_account is None:
        return verdict("service-account", "fail", ["no Deployment and no ServiceAccount found"])
    namespace, name = facts.service_account
    evidence = []
    if facts.deployment is not None:
        evidence.append(f"Deployment {meta(facts.deployment).get('name')} runs as "
                        f"ServiceAccount {namespace}/{name}")
    else:
        evidence.append(f"no Deployment found: the operator runs as ServiceAccount "
                        f"{namespace}/{name}")
    if name == "default":
        return verdict("service-account", "fail", [
            *evidence, "the namespace's default ServiceAccount is shared by every pod there"])
    if not facts.service_account_exists:
        return verdict("service-account", "fail", [*evidence, "that ServiceAccount is not "
                                                   "defined"])
    sharing = [meta(d).get("name") for d in facts.other_deployments
               if meta(d).get("namespace", namespace) == namespace
               and (((d.get("spec") or {}).get("template") or {}).get("spec") or {})
               .get("serviceAccountName") == name]
    if sharing:
        return verdict("service-account", "fail", [
            *evidence, f"shared with Deployment {', '.join(map(str, sharing))}"])
    return verdict("service-account", "pass", [*evidence, "used by no other Deployment"])


def rbac_least_privilege(facts: OperatorFacts) -> Verdict:
    if not facts.grants:
        bound = f" (bound: {', '.join(facts.bound_roles)}, not found)" if facts.bound_roles else ""
        return verdict("rbac-least-privilege", "fail", [
            f"no Role or ClusterRole rules are bound to the operator's ServiceAccount{bound}"])
    evidence, ok = [], True
    for role in facts.bound_roles:
        if role in BROAD_ROLES:
            ok = False
            evidence.append(f"bound to {role}: far more than an operator needs")
    by_role: dict[str, list[Obj]] = {}
    for g in facts.grants:
        by_role.setdefault(f"{g.role} via {g.binding}", []).append(g.rule)
        rule = g.rule
        for field in ("verbs", "apiGroups", "resources", "nonResourceURLs"):
            if "*" in (rule.get(field) or ()):
                ok = False
                evidence.append(f"{g.role}: wildcard {field} in {_rule_text(rule)}")
        dangerous = [v for v in DANGEROUS_VERBS if v in (rule.get("verbs") or ())]
        if dangerous:
            ok = False
            evidence.append(f"{g.role}: {', '.join(dangerous)} in {_rule_text(rule)}")
    for source, rules in by_role.items():
        resources = sorted({r for rule in rules for r in rule.get("resources") or ()})
        evidence.insert(0, f"{source}: {len(rules)} rules on {', '.join(resources) or '-'}")
    return verdict("rbac-least-privilege", "pass" if ok else "fail", evidence)


def _rule_text(rule: Obj) -> str:
    return "; ".join(f"{k} {','.join(map(str, rule.get(k) or ())) or repr('')}"
                     for k in ("apiGroups", "resources", "verbs", "nonResourceURLs")
                     if k in rule)


def metrics_endpoint(facts: OperatorFacts) -> Verdict:
    if facts.deployment is None:
        return verdict("metrics-endpoint", "skip", [
            "no Deployment runs the operator here: its ports cannot be seen"])
    template = (facts.deployment.get("spec") or {}).get("template") or {}
    annotations = meta(template).get("annotations") or {}
    ports = [(c.get("name"), p) for c in (template.get("spec") or {}).get("containers") or ()
             for p in c.get("ports") or ()]
    found = [f"container {c} port {p.get('name')} ({p.get('containerPort')})"
             for c, p in ports if "metrics" in str(p.get("name") or "")]
    if annotations.get("prometheus.io/scrape") == "true":
        found.append(f"prometheus.io/scrape on port {annotations.get('prometheus.io/port')}")
    if found:
        return verdict("metrics-endpoint", "pass", found)
    return verdict("metrics-endpoint", "fail", [
        f"Deployment {meta(facts.deployment).get('name')}: no port named metrics and no "
        "prometheus.io/scrape annotation"])


def pod_restarts_static(facts: OperatorFacts) -> Verdict:
    watches = facts.may("watch", "", "pods")
    return verdict("pod-restarts", "skip", [
        (f"may watch pods ({watches[0].role})" if watches else "may not watch pods"),
        "reaction not verified: needs --cluster with --instance KIND/NAME"])


def static_verdicts(facts: OperatorFacts) -> list[Verdict]:
    """Every check, in the order they are reported; pod-restarts as not yet exercised."""
    return [
        crd_schema(facts), relationship_annotations(facts),
        passed_down("resources", facts), passed_down("node-selector", facts),
        passed_down("tolerations", facts), owner_references(facts),
        service_account(facts), rbac_least_privilege(facts),
        status_conditions(facts), observed_generation(facts), events(facts),
        metrics_endpoint(facts), pod_restarts_static(facts), crd_versioning(facts),
        printer_columns(facts), scale_subresource(facts),
    ]
