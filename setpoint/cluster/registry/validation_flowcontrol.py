"""API Priority and Fairness validation: kubernetes v1.32 pkg/apis/flowcontrol/validation/
validation.go (``ValidateFlowSchema``, ``ValidatePriorityLevelConfiguration`` and their spec,
rule, subject, limit-response, queuing and status helpers; the update validators validate the
new object whole), with k8s.io/apiserver pkg/util/shufflesharding's entropy limit and the
mandatory ``exempt`` and ``catch-all`` objects' fixed specs (pkg/apis/flowcontrol/
internalbootstrap, the same objects ``bootstrap/flowcontrol.py`` creates).

Objects arrive defaulted (``defaults_flowcontrol.py``), as Go's decoder leaves them.
"""

from __future__ import annotations

import math
from typing import Any

from setpoint.cluster.bootstrap import flowcontrol as bootstrap
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

MAX_MATCHING_PRECEDENCE = 10000  # flowcontrol.FlowSchemaMaxMatchingPrecedence
MAX_QUEUES = 10 * 1000 * 1000  # priorityLevelConfigurationQueuingMaxQueues
MAX_HASH_BITS = 60  # shufflesharding.MaxHashBits
EXEMPT, CATCH_ALL = "exempt", "catch-all"
DISTINGUISHER_METHODS = ("ByNamespace", "ByUser")
SUPPORTED_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "proxy",
                   "update", "watch")
SUBJECT_KINDS = ("Group", "ServiceAccount", "User")
ENABLEMENTS = ("Exempt", "Limited")
LIMIT_RESPONSE_TYPES = ("Queue", "Reject")
NS_ERR_INTRO = "each member of this list must be '*' or a DNS-1123 label; "
_MEMBER_KINDS = {"User": "user", "Group": "group", "ServiceAccount": "serviceAccount"}


def _d(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# -- FlowSchema ------------------------------------------------------------------------------

def _subject(subject: Obj, path: str) -> list[Cause]:
    """``ValidateFlowSchemaSubject``: the member named by ``kind`` is required, the others
    forbidden."""
    kind = subject.get("kind") or ""
    if kind not in _MEMBER_KINDS:
        return [fe.not_supported(f"{path}.kind", kind, SUBJECT_KINDS)]
    member = _MEMBER_KINDS[kind]
    causes: list[Cause] = []
    value = subject.get(member)
    if not isinstance(value, dict):
        causes.append(fe.required(f"{path}.{member}",
                                  f"{member} is required when subject kind is '{kind}'"))
    elif kind != "ServiceAccount":
        if not value.get("name"):
            causes.append(fe.required(f"{path}.{member}.name"))
    else:
        name, namespace = str(value.get("name") or ""), str(value.get("namespace") or "")
        if not name:
            causes.append(fe.required(f"{path}.serviceAccount.name"))
        elif name != "*":
            causes.extend(fe.invalid(f"{path}.serviceAccount.name", name, m)
                          for m in names.name_is_dns_subdomain(name, False))
        if namespace:
            causes.extend(fe.invalid(f"{path}.serviceAccount.namespace", namespace, m)
                          for m in names.name_is_dns_label(namespace, False))
        else:
            causes.append(fe.required(f"{path}.serviceAccount.namespace",
                                      "must specify namespace for service account"))
    # (Go checks the other members in the order serviceAccount, user, group)
    for other, sole in (("serviceAccount", "ServiceAccount"), ("user", "User"),
                        ("group", "Group")):
        if other != member and subject.get(other) is not None:
            causes.append(fe.forbidden(f"{path}.{other}",
                                       f"{other} is forbidden when subject kind is not '{sole}'"))
    return causes


def _verbs(verbs: list[str], path: str) -> list[Cause]:
    if not verbs:
        return [fe.required(path, "verbs must contain at least one value")]
    if "*" in verbs:
        return ([fe.invalid(path, verbs, "if '*' is present, must not specify other verbs")]
                if len(verbs) > 1 else [])
    if not set(verbs) <= set(SUPPORTED_VERBS):
        return [fe.not_supported(path, fe.go_string_slice(verbs), SUPPORTED_VERBS)]
    return []


def _wildcard_list(values: list[str], path: str, required: str, what: str) -> list[Cause]:
    if not values:
        return [fe.required(path, required)]
    if len(values) > 1 and "*" in values:
        return [fe.invalid(path, values, f"if '*' is present, must not specify other {what}")]
    return []


def _resource_rule(rule: Obj, path: str) -> list[Cause]:
    """``ValidateFlowSchemaResourcePolicyRule``."""
    causes = _verbs(_strings(rule.get("verbs")), f"{path}.verbs")
    causes += _wildcard_list(_strings(rule.get("apiGroups")), f"{path}.apiGroups",
                             "resource rules must supply at least one api group", "api groups")
    causes += _wildcard_list(_strings(rule.get("resources")), f"{path}.resources",
                             "resource rules must supply at least one resource", "resources")
    namespaces = _strings(rule.get("namespaces"))
    if not namespaces and rule.get("clusterScope") is not True:
        causes.append(fe.required(f"{path}.namespaces",
                                  "resource rules that are not cluster scoped must supply at "
                                  "least one namespace"))
    elif "*" in namespaces:
        if len(namespaces) > 1:
            causes.append(fe.invalid(f"{path}.namespaces", namespaces,
                                     "if '*' is present, must not specify other namespaces"))
    else:
        for i, ns in enumerate(namespaces):
            causes.extend(fe.invalid(f"{path}.namespaces[{i}]", ns, NS_ERR_INTRO + m)
                          for m in names.name_is_dns_label(ns, False))
    return causes


def _non_resource_url(url: str, path: str) -> list[Cause]:
    """``ValidateNonResourceURLPath``: at most one error per URL."""
    if not url:
        return [fe.invalid(path, url, "must not be empty")]
    if url == "/":
        return []
    for bad, detail in ((not url.startswith("/"), "must start with slash"),
                        (" " in url, "must not contain white-space"),
                        ("//" in url, "must not contain double slash")):
        if bad:
            return [fe.invalid(path, url, detail)]
    stars = url.count("*")
    if stars > 1 or (stars == 1 and url[-2:] != "/*"):
        return [fe.invalid(path, url, "wildcard can only do suffix matching")]
    return []


def _non_resource_rule(rule: Obj, path: str) -> list[Cause]:
    """``ValidateFlowSchemaNonResourcePolicyRule``."""
    causes = _verbs(_strings(rule.get("verbs")), f"{path}.verbs")
    urls = _strings(rule.get("nonResourceURLs"))
    up = f"{path}.nonResourceURLs"
    if not urls:
        causes.append(fe.required(up, "nonResourceURLs must contain at least one value"))
    elif "*" in urls:
        if len(urls) > 1:
            causes.append(fe.invalid(up, urls, "if '*' is present, must not specify other "
                                               "non-resource URLs"))
    else:
        for i, url in enumerate(urls):
            causes.extend(_non_resource_url(url, f"{up}[{i}]"))
    return causes


def _rule(rule: Obj, path: str) -> list[Cause]:
    """``ValidateFlowSchemaPolicyRulesWithSubjects``."""
    causes: list[Cause] = []
    subjects = _list(rule.get("subjects"))
    if not subjects:
        causes.append(fe.required(f"{path}.subjects", "subjects must contain at least one value"))
    for i, subject in enumerate(subjects):
        causes.extend(_subject(_d(subject), f"{path}.subjects[{i}]"))
    resource_rules = _list(rule.get("resourceRules"))
    non_resource_rules = _list(rule.get("nonResourceRules"))
    if not resource_rules and not non_resource_rules:
        causes.append(fe.required(path, "at least one of resourceRules and nonResourceRules "
                                        "has to be non-empty"))
    for i, r in enumerate(resource_rules):
        causes.extend(_resource_rule(_d(r), f"{path}.resourceRules[{i}]"))
    for i, r in enumerate(non_resource_rules):
        causes.extend(_non_resource_rule(_d(r), f"{path}.nonResourceRules[{i}]"))
    return causes


def _flow_schema_spec(name: str, spec: Obj) -> list[Cause]:
    """``ValidateFlowSchemaSpec``."""
    causes: list[Cause] = []
    precedence = _int(spec.get("matchingPrecedence"))
    mp = "spec.matchingPrecedence"
    if precedence <= 0:
        causes.append(fe.invalid(mp, precedence, "must be a positive value"))
    if precedence > MAX_MATCHING_PRECEDENCE:
        causes.append(fe.invalid(mp, precedence,
                                 f"must not be greater than {MAX_MATCHING_PRECEDENCE}"))
    if precedence == 1 and name != EXEMPT:
        causes.append(fe.invalid(mp, precedence,
                                 "only the schema named 'exempt' may have matchingPrecedence 1"))
    method = spec.get("distinguisherMethod")
    if isinstance(method, dict) and method.get("type") not in DISTINGUISHER_METHODS:
        # (Go passes the *FlowDistinguisherMethod, printed dereferenced with %#v)
        shown = fe.GoValue("flowcontrol.FlowDistinguisherMethod{Type:"
                           f"{fe.go_quote(str(method.get('type') or ''))}}}")
        causes.append(fe.not_supported("spec.distinguisherMethod.type", shown,
                                       DISTINGUISHER_METHODS))
    level = str(_d(spec.get("priorityLevelConfiguration")).get("name") or "")
    lp = "spec.priorityLevelConfiguration.name"
    if level:
        causes.extend(fe.invalid(lp, level, m) for m in names.name_is_dns_subdomain(level, False))
    else:
        causes.append(fe.required(lp, "must reference a priority level"))
    rules = _list(spec.get("rules"))
    for i, rule in enumerate(rules):
        causes.extend(_rule(_d(rule), f"spec.rules[{i}]"))
    return causes


def _conditions(status: Any) -> list[Cause]:
    """``ValidateFlowSchemaStatus`` / ``ValidatePriorityLevelConfigurationStatus``."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, condition in enumerate(_list(_d(status).get("conditions"))):
        kind = str(_d(condition).get("type") or "")
        path = f"status.conditions[{i}].type"
        if kind in seen:
            causes.append(fe.duplicate(path, kind))
        seen.add(kind)
        if not kind:
            causes.append(fe.required(path, "must not be empty"))
    return causes


def _semantic(value: Any) -> Any:
    """Go's zero values dropped: apimachinery's Semantic.DeepEqual takes an empty slice for a
    nil one, and a struct field at its zero value is the same absent or present."""
    if isinstance(value, dict):
        out = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in out.items()
                if not (v is None or v is False or v in ("", [], {}))}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def _mandatory_specs(objects: list[Obj]) -> dict[str, Any]:
    return {o["metadata"]["name"]: _semantic(o["spec"]) for o in objects
            if o["metadata"]["name"] in (EXEMPT, CATCH_ALL)}


_MANDATORY_FLOW_SCHEMAS = _mandatory_specs(bootstrap.flow_schemas())
_MANDATORY_LEVELS = _mandatory_specs(bootstrap.priority_level_configurations())


def _fixed_spec(kind: str) -> fe.GoValue:
    # (Go prints the whole internal struct with %#v, pointers as addresses)
    return fe.GoValue(f"flowcontrol.{kind}{{...}}")


def validate_flow_schema(fs: Obj) -> list[Cause]:
    """``ValidateFlowSchema`` after the metadata (which the dispatcher validates)."""
    name = str(_d(fs.get("metadata")).get("name") or "")
    spec = _d(fs.get("spec"))
    causes = _flow_schema_spec(name, spec)
    if name in _MANDATORY_FLOW_SCHEMAS and _semantic(spec) != _MANDATORY_FLOW_SCHEMAS[name]:
        causes.append(fe.invalid("spec", _fixed_spec("FlowSchemaSpec"),
                                 f"spec of '{name}' must equal the fixed value"))
    return causes + _conditions(fs.get("status"))


# -- PriorityLevelConfiguration --------------------------------------------------------------

def _queuing(queuing: Obj, path: str) -> list[Cause]:
    """``ValidatePriorityLevelQueuingConfiguration``."""
    causes: list[Cause] = []
    length = _int(queuing.get("queueLengthLimit"))
    if length <= 0:
        causes.append(fe.invalid(f"{path}.queueLengthLimit", length, "must be positive"))
    queues, hand = _int(queuing.get("queues")), _int(queuing.get("handSize"))
    if queues <= 0:
        causes.append(fe.invalid(f"{path}.queues", queues, "must be positive"))
    elif queues > MAX_QUEUES:
        causes.append(fe.invalid(f"{path}.queues", queues,
                                 f"must not be greater than {MAX_QUEUES}"))
    if hand <= 0:
        causes.append(fe.invalid(f"{path}.handSize", hand, "must be positive"))
    elif hand > queues:
        causes.append(fe.invalid(f"{path}.handSize", hand,
                                 f"should not be greater than queues ({queues})"))
    elif math.ceil(math.log2(queues) * hand) > MAX_HASH_BITS:  # RequiredEntropyBits
        causes.append(fe.invalid(f"{path}.handSize", hand,
                                 f"required entropy bits of deckSize {queues} and handSize "
                                 f"{hand} should not be greater than {MAX_HASH_BITS}"))
    return causes


def _limit_response(response: Obj, path: str) -> list[Cause]:
    """``ValidateLimitResponse``."""
    kind = response.get("type") or ""
    queuing = response.get("queuing")
    if kind == "Reject":
        return ([fe.forbidden(f"{path}.queuing", "must be nil if limited.limitResponse.type "
                                                 "is not Limited")]
                if queuing is not None else [])
    if kind == "Queue":
        if not isinstance(queuing, dict):
            return [fe.required(f"{path}.queuing", "must not be empty if "
                                                   "limited.limitResponse.type is Limited")]
        return _queuing(queuing, f"{path}.queuing")
    return [fe.not_supported(f"{path}.type", kind, LIMIT_RESPONSE_TYPES)]


def _percent(holder: Obj, path: str) -> list[Cause]:
    lendable = holder.get("lendablePercent")
    if isinstance(lendable, int) and not 0 <= lendable <= 100:
        return [fe.invalid(f"{path}.lendablePercent", lendable,
                           "must be between 0 and 100, inclusive")]
    return []


def _shares(holder: Obj, path: str) -> list[Cause]:
    # (a v1 request allows zero shares: the strategy's AllowZeroLimitedNominalConcurrencyShares)
    shares = holder.get("nominalConcurrencyShares")
    if isinstance(shares, int) and shares < 0:
        return [fe.invalid(f"{path}.nominalConcurrencyShares", shares,
                           "must be a non-negative integer")]
    return []


def _limited(limited: Obj, path: str) -> list[Cause]:
    """``ValidateLimitedPriorityLevelConfiguration``."""
    causes = _shares(limited, path)
    causes += _limit_response(_d(limited.get("limitResponse")), f"{path}.limitResponse")
    causes += _percent(limited, path)
    borrowing = limited.get("borrowingLimitPercent")
    if isinstance(borrowing, int) and borrowing < 0:
        causes.append(fe.invalid(f"{path}.borrowingLimitPercent", borrowing,
                                 "if specified, must be a non-negative integer"))
    return causes


def _level_spec(name: str, spec: Obj) -> list[Cause]:
    """``ValidatePriorityLevelConfigurationSpec``."""
    causes: list[Cause] = []
    kind = spec.get("type") or ""
    if (name == EXEMPT) != (kind == "Exempt"):
        causes.append(fe.invalid("spec.type", kind,
                                 "type must be 'Exempt' if and only if name is 'exempt'"))
    limited, exempt = spec.get("limited"), spec.get("exempt")
    if kind == "Exempt":
        if limited is not None:
            causes.append(fe.forbidden("spec.limited", "must be nil if the type is not Limited"))
        if isinstance(exempt, dict):
            causes += _shares(exempt, "spec.exempt") + _percent(exempt, "spec.exempt")
    elif kind == "Limited":
        if exempt is not None:
            causes.append(fe.forbidden("spec.exempt", "must be nil if the type is Limited"))
        if not isinstance(limited, dict):
            causes.append(fe.required("spec.limited", "must not be empty when type is Limited"))
        else:
            causes.extend(_limited(limited, "spec.limited"))
    else:
        causes.append(fe.not_supported("spec.type", kind, ENABLEMENTS))
    return causes


def _mandatory_level(name: str, spec: Obj) -> list[Cause]:
    """``ValidateIfMandatoryPriorityLevelConfigurationObject``: ``catch-all``'s spec is
    fixed; ``exempt``'s too except its ``spec.exempt`` fields."""
    if name not in _MANDATORY_LEVELS:
        return []
    want, have = _MANDATORY_LEVELS[name], _semantic(spec)
    if name == EXEMPT:
        if isinstance(spec.get("exempt"), dict):
            # (Go copies the given spec.exempt fields into the fixed value before comparing)
            want = {k: v for k, v in want.items() if k != "exempt"}
            have = {k: v for k, v in have.items() if k != "exempt"}
        detail = f"spec of '{name}' except the 'spec.exempt' field must equal the fixed value"
    else:
        detail = f"spec of '{name}' must equal the fixed value"
    if have != want:
        return [fe.invalid("spec", _fixed_spec("PriorityLevelConfigurationSpec"), detail)]
    return []


def validate_priority_level_configuration(pl: Obj) -> list[Cause]:
    """``ValidatePriorityLevelConfiguration`` after the metadata."""
    name = str(_d(pl.get("metadata")).get("name") or "")
    spec = _d(pl.get("spec"))
    return _level_spec(name, spec) + _mandatory_level(name, spec) + _conditions(pl.get("status"))
