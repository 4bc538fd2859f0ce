"""Which requests a webhook is called for: rules, selectors and match conditions.

The rules follow the apiserver's ``rules.Matcher``: ``*`` matches every resource but no
subresource, ``*/*`` both, ``pods/*`` every subresource of pods, ``*/status`` the status of
every resource; scope ``Namespaced`` never matches a Namespace (cluster-scoped), ``Cluster``
always does. The namespace selector applies to namespaced objects and to Namespaces
themselves (their own labels), never to other cluster-scoped kinds; the object selector
matches when the new or the old object's labels match.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from setpoint.cluster.registry.admissionpoints import AdmissionPoint
from setpoint.machinery import errors, labels
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry.types import ResourceType
    from setpoint.cluster.storage import Reader


@dataclass(frozen=True)
class Hook:
    """One webhook of a configuration, with the defaults the API gives its fields."""

    configuration: str
    spec: Obj

    @property
    def name(self) -> str:
        return str(self.spec.get("name", ""))

    @property
    def ignore_failures(self) -> bool:
        return bool(self.spec.get("failurePolicy", "Fail") == "Ignore")

    @property
    def timeout_s(self) -> int:
        return int(self.spec.get("timeoutSeconds") or 10)

    @property
    def reinvocable(self) -> bool:
        return bool(self.spec.get("reinvocationPolicy", "Never") == "IfNeeded")


def _is_namespace(point: AdmissionPoint) -> bool:
    return point.rt.group == "" and point.rt.resource == "namespaces"


def request_namespace(point: AdmissionPoint) -> str:
    """The request's namespace as admission sees it: from the path, so a Namespace named in
    it (/api/v1/namespaces/<name>, every operation but create) is its own namespace
    (k8s.io/apiserver pkg/endpoints/request/requestinfo.go, handlers/namer.go)."""
    if _is_namespace(point) and point.operation != "CREATE":
        return point.name
    return point.namespace


def _selector(spec: Obj, field: str) -> labels.Selector | None:
    """The parsed selector, None when it selects everything."""
    raw = spec.get(field)
    if not raw or not (raw.get("matchLabels") or raw.get("matchExpressions")):
        return None
    try:
        return labels.from_label_selector(raw)
    except labels.SelectorError as exc:
        raise errors.internal(str(exc)) from None


def _labels(obj: Obj | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


def namespace_selector(store: Reader, spec: Obj, point: AdmissionPoint,
                       obj: Obj | None) -> bool:
    if not point.namespace and not _is_namespace(point):
        return True  # other cluster-scoped kinds are never exempted by namespace
    selector = _selector(spec, "namespaceSelector")
    if selector is None:
        return True
    if _is_namespace(point):
        namespace_labels = _labels(obj if obj is not None else point.old)
    else:
        namespace = store.get("/namespaces", "", point.namespace)
        if namespace is None:
            raise errors.not_found("namespaces", point.namespace)
        namespace_labels = _labels(namespace)
    return selector.matches(namespace_labels)


# The kinds admitted without an ObjectMeta: a CONNECT's options (core/v1 types.go)
_WITHOUT_OBJECT_META = frozenset({"PodExecOptions", "PodAttachOptions", "PodPortForwardOptions",
                                  "PodProxyOptions", "ServiceProxyOptions", "NodeProxyOptions"})


def object_selector(spec: Obj, obj: Obj | None, old: Obj | None) -> bool:
    """predicates/object/matcher.go MatchObjectSelector: an object whose metadata cannot be
    accessed (meta.Accessor fails on a kind without ObjectMeta) matches no selector but the
    empty one."""
    selector = _selector(spec, "objectSelector")
    if selector is None:
        return True
    return any(selector.matches(_labels(o)) for o in (obj, old)
               if o is not None and o.get("kind") not in _WITHOUT_OBJECT_META)


def _one_of(items: list[str], wanted: str) -> bool:
    return "*" in items or wanted in items


def rule_matches(rule: Obj, point: AdmissionPoint, group: str, version: str) -> bool:
    rt = point.rt
    scope = rule.get("scope") or "*"
    if scope == "Namespaced" and (_is_namespace(point) or not point.namespace):
        return False
    if scope == "Cluster" and not (_is_namespace(point) or not point.namespace):
        return False
    if scope not in ("*", "Namespaced", "Cluster"):
        return False
    if not _one_of(rule.get("operations") or [], point.operation):
        return False
    if not _one_of(rule.get("apiGroups") or [], group):
        return False
    if not _one_of(rule.get("apiVersions") or [], version):
        return False
    for entry in rule.get("resources") or []:
        resource, _, sub = str(entry).partition("/")
        if resource in ("*", rt.resource) and sub in ("*", point.subresource):
            return True
    return False


def rules(spec: Obj, point: AdmissionPoint, equivalents: list[ResourceType]
          ) -> ResourceType | None:
    """The resource the webhook is called for: the request's when a rule matches it, else
    (``matchPolicy: Equivalent``, the default) the first equivalent resource (another
    version, or a group sharing its storage) a rule matches, earlier rules first; None when
    no rule matches."""
    all_rules = spec.get("rules") or []
    requested = point.rt
    if any(rule_matches(r, point, requested.group, requested.version) for r in all_rules):
        return requested
    if spec.get("matchPolicy", "Equivalent") != "Equivalent":
        return None
    for rule in all_rules:
        for other in equivalents:
            if (other.group, other.version) != (requested.group, requested.version) \
                    and rule_matches(rule, point, other.group, other.version):
                return other
    return None


def conditions(hook: Hook, match_conditions: list[Obj], point: AdmissionPoint,
               obj: Obj | None, old: Obj | None, target: ResourceType) -> bool:
    """Whether every match condition holds; when none is false but some erred, the webhook
    fails closed (403) unless its failurePolicy is Ignore, which skips it."""
    from celpy.adapter import json_to_cel

    from setpoint.cluster.apiextensions.schema.cellib import error_text
    from setpoint.cluster.apiextensions.schema.celprogram import compile_expression

    activation = {
        "object": json_to_cel(obj),
        "oldObject": json_to_cel(old),
        "request": json_to_cel({
            "operation": point.operation, "name": point.name,
            "namespace": request_namespace(point),
            "subResource": point.subresource, "dryRun": point.dry_run,
            "kind": {"group": target.group, "version": target.version, "kind": target.kind},
            "resource": {"group": target.group, "version": target.version,
                         "resource": target.resource},
            "options": point.options,
        }),
    }
    # matchconditions/matcher.go Match: a false condition wins over an error in another;
    # the errors count only when none is false
    failures: list[str] = []
    for condition in match_conditions:
        expression = str(condition.get("expression", ""))
        try:
            result = compile_expression(expression).evaluate(activation)
            if isinstance(result, Exception):
                raise result
        except Exception as exc:  # CEL reports its errors in many types
            failures.append(f"expression '{expression}' resulted in error: {error_text(exc)}")
            continue
        if not bool(result):
            return False
    if not failures:
        return True
    if hook.ignore_failures:
        return False
    unique = list(dict.fromkeys(failures))  # utilerrors.NewAggregate's Error()
    message = unique[0] if len(unique) == 1 else f"[{', '.join(unique)}]"
    rt = point.rt
    raise errors.forbidden(rt.resource, point.name, message, rt.group)
