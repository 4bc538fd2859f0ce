"""The audit policy: ``--audit-policy-file`` read, checked and evaluated.

Reading follows k8s.io/apiserver pkg/audit/policy/reader.go ``LoadPolicyFromBytes`` (an
``audit.k8s.io/v1`` ``Policy``; unknown fields only warned about, as its lenient fallback;
no rules is an error), checking pkg/apis/audit/validation/validation.go ``ValidatePolicy``
(its messages, aggregated as field.ErrorList.ToAggregate words them), and deciding a
request's level pkg/audit/policy/checker.go (the first rule that matches; ``None``
otherwise).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from setpoint.cluster.audit.context import LEVELS

log = logging.getLogger("setpoint.cluster.audit")

API_VERSION = "audit.k8s.io/v1"
STAGES = ("RequestReceived", "ResponseStarted", "ResponseComplete", "Panic")

_POLICY_FIELDS = {"apiVersion", "kind", "metadata", "rules", "omitStages", "omitManagedFields"}
_RULE_FIELDS = {"level", "users", "userGroups", "verbs", "resources", "namespaces",
                "nonResourceURLs", "omitStages", "omitManagedFields"}
_GROUP_RESOURCE_FIELDS = {"group", "resources", "resourceNames"}
# apimachinery validation.IsDNS1123Subdomain
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class AuditPolicyError(ValueError):
    """The policy file kube-apiserver would refuse to start with; one line that names the
    file and the field."""


class RequestAttributes(Protocol):
    """What a rule matches on: the authorizer's attributes of the request."""

    @property
    def verb(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def resource(self) -> str: ...
    @property
    def subresource(self) -> str: ...
    @property
    def group(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...


@dataclass(frozen=True)
class GroupResources:
    group: str = ""
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class PolicyRule:
    level: str
    users: tuple[str, ...] = ()
    user_groups: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    resources: tuple[GroupResources, ...] = ()
    namespaces: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool | None = None


@dataclass(frozen=True)
class RequestAuditConfig:
    """What the policy says of one request (evaluator.go ``RequestAuditConfig``)."""

    level: str
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False


@dataclass(frozen=True)
class Policy:
    rules: tuple[PolicyRule, ...]
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False
    _configs: tuple[RequestAuditConfig, ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        # NewPolicyRuleEvaluator: each rule's stages joined with the policy's
        object.__setattr__(self, "_configs", tuple(
            RequestAuditConfig(r.level, r.omit_stages | self.omit_stages,
                               self.omit_managed_fields if r.omit_managed_fields is None
                               else r.omit_managed_fields)
            for r in self.rules))

    def evaluate(self, user: dict[str, Any] | None,
                 attrs: RequestAttributes) -> RequestAuditConfig:
        """``EvaluatePolicyRule``: the first matching rule's level and stages."""
        for rule, config in zip(self.rules, self._configs, strict=True):
            if _rule_matches(rule, user, attrs):
                return config
        return RequestAuditConfig("None", self.omit_stages, self.omit_managed_fields)


def _rule_matches(rule: PolicyRule, user: dict[str, Any] | None,
                  attrs: RequestAttributes) -> bool:
    """checker.go ``ruleMatches``."""
    if rule.users and (user is None or user.get("username") not in rule.users):
        return False
    if rule.user_groups and (user is None or not any(
            g in rule.user_groups for g in user.get("groups") or ())):
        return False
    if rule.verbs and attrs.verb not in rule.verbs:
        return False
    if rule.namespaces or rule.resources:
        return _matches_resource(rule, attrs)
    if rule.non_resource_urls:
        return not attrs.resource and any(_path_matches(attrs.path, spec)
                                          for spec in rule.non_resource_urls)
    return True


def _path_matches(path: str, spec: str) -> bool:
    return spec in ("*", path) or (spec.endswith("*") and path.startswith(spec.rstrip("*")))


def _matches_resource(rule: PolicyRule, attrs: RequestAttributes) -> bool:
    """checker.go ``ruleMatchesResource``: ``resource/subresource``, ``*``, ``*/sub`` and
    ``resource/*``; non-namespaced resources are in the namespace ``""``."""
    if not attrs.resource:
        return False
    if rule.namespaces and attrs.namespace not in rule.namespaces:
        return False
    if not rule.resources:
        return True
    resource, subresource = attrs.resource, attrs.subresource
    combined = f"{resource}/{subresource}" if subresource else resource
    for gr in rule.resources:
        if gr.group != attrs.group:
            continue
        if not gr.resources:
            return True
        if gr.resource_names and attrs.name not in gr.resource_names:
            continue
        for res in gr.resources:
            if res in (combined, "*"):
                return True
            if subresource and res.startswith("*/") and subresource == res[2:]:
                return True
            if res.endswith("/*") and resource == res[:-2]:
                return True
    return False


# -- reading ---------------------------------------------------------------------------------

def load_policy(path: Path) -> Policy:
    """``LoadPolicyFromFile``: the policy, or :class:`AuditPolicyError` worded as Go's."""
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise AuditPolicyError(
            f'failed to read file path "{path}": {exc.strerror or exc}') from None
    try:
        return policy_from_document(_decode(text))
    except AuditPolicyError as exc:
        raise AuditPolicyError(f"{exc}: from file {path}") from None


def _decode(text: bytes) -> Any:
    import yaml  # (loaded only when a policy file is read: a start without one loads none)

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise AuditPolicyError(f"failed decoding: yaml: {where}{problem}") from None


def policy_from_document(doc: Any) -> Policy:
    """The policy a decoded document holds, checked as reader.go and ValidatePolicy do."""
    if not isinstance(doc, dict):
        raise AuditPolicyError("failed decoding: Object 'Kind' is missing in the document")
    for key in ("kind", "apiVersion"):
        if not doc.get(key):
            name = "Kind" if key == "kind" else "apiVersion"
            raise AuditPolicyError(f"failed decoding: Object '{name}' is missing in the document")
    if doc["apiVersion"] != API_VERSION or doc["kind"] != "Policy":
        # the audit scheme registers audit.k8s.io/v1 only (pkg/apis/audit/install)
        raise AuditPolicyError(
            f'failed decoding: no kind "{doc["kind"]}" is registered for version '
            f'"{doc["apiVersion"]}" in scheme "pkg/audit/scheme.go:30"')
    unknown = _unknown_fields(doc)
    if unknown:  # the strict decoder's complaint; the lenient decoder then reads the rest
        log.warning("audit_policy_lenient reason=%s",
                    "; ".join(f'unknown field "{u}"' for u in unknown))
    errs: list[str] = []
    omit = _strings(doc.get("omitStages"), "omitStages")
    errs += _omit_stage_errors(omit, "omitStages")
    rules_raw = doc.get("rules") or []
    if not isinstance(rules_raw, list):
        raise AuditPolicyError("failed decoding: json: cannot unmarshal object into Go struct "
                               "field Policy.rules of type []v1.PolicyRule")
    rules = []
    for i, raw in enumerate(rules_raw):
        rule, rule_errs = _rule(raw if isinstance(raw, dict) else {}, f"rules[{i}]")
        rules.append(rule)
        errs += rule_errs
    if errs:
        raise AuditPolicyError(errs[0] if len(errs) == 1 else f"[{', '.join(errs)}]")
    if not rules:
        raise AuditPolicyError("loaded illegal policy with 0 rules")
    return Policy(tuple(rules), frozenset(omit), bool(doc.get("omitManagedFields")))


def _unknown_fields(doc: dict[str, Any]) -> list[str]:
    found = [k for k in doc if k not in _POLICY_FIELDS]
    for i, rule in enumerate(doc.get("rules") or []):
        if isinstance(rule, dict):
            found += [f"rules[{i}].{k}" for k in rule if k not in _RULE_FIELDS]
            for j, gr in enumerate(rule.get("resources") or []):
                if isinstance(gr, dict):
                    found += [f"rules[{i}].resources[{j}].{k}" for k in gr
                              if k not in _GROUP_RESOURCE_FIELDS]
    return found


def _strings(value: Any, path: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise AuditPolicyError(f"failed decoding: json: cannot unmarshal {path} into Go "
                               "value of type []string")
    return value


def _go_list(values: list[str]) -> str:
    """Go's ``%v`` of a ``[]string`` (field.Invalid's value)."""
    return "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"


def _omit_stage_errors(stages: list[str], path: str) -> list[str]:
    return [f'{path}[{i}]: Invalid value: "{s}": allowed stages are {",".join(STAGES)}'
            for i, s in enumerate(stages) if s not in STAGES]


def _rule(raw: dict[str, Any], path: str) -> tuple[PolicyRule, list[str]]:
    """``validatePolicyRule``: level, non-resource URLs, resources, stages."""
    errs: list[str] = []
    level = raw.get("level") or ""
    if level == "":
        errs.append(f"{path}.level: Required value")
    elif level not in LEVELS:
        supported = ", ".join(f'"{v}"' for v in LEVELS)
        errs.append(f'{path}.level: Unsupported value: "{level}": supported values: {supported}')
    urls = _strings(raw.get("nonResourceURLs"), f"{path}.nonResourceURLs")
    for i, url in enumerate(urls):
        if url == "*":
            continue
        if not url.startswith("/"):
            errs.append(f'{path}.nonResourceURLs[{i}]: Invalid value: "{url}": non-resource '
                        "URL rules must begin with a '/' character")
        if url and "*" in url[:-1]:
            errs.append(f'{path}.nonResourceURLs[{i}]: Invalid value: "{url}": non-resource '
                        "URL wildcards '*' must be the final character of the rule")
    groups: list[GroupResources] = []
    for j, gr in enumerate(raw.get("resources") or []):
        gr = gr if isinstance(gr, dict) else {}
        group = str(gr.get("group") or "")
        resources = _strings(gr.get("resources"), f"{path}.resources[{j}].resources")
        names = _strings(gr.get("resourceNames"), f"{path}.resources[{j}].resourceNames")
        if group and (len(group) > 253 or not _DNS1123_SUBDOMAIN.match(group)):
            errs.append(f'{path}.resources.group: Invalid value: "{group}": ' + (
                "must be no more than 253 characters" if len(group) > 253 else
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric "
                "character (e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"))
        if names and not resources:
            errs.append(f"{path}.resources.resourceNames: Invalid value: {_go_list(names)}: "
                        "using resourceNames requires at least one resource")
        groups.append(GroupResources(group, tuple(resources), tuple(names)))
    omit = _strings(raw.get("omitStages"), f"{path}.omitStages")
    errs += _omit_stage_errors(omit, f"{path}.omitStages")
    namespaces = _strings(raw.get("namespaces"), f"{path}.namespaces")
    if urls and (groups or namespaces):
        errs.append(f"{path}.nonResourceURLs: Invalid value: {_go_list(urls)}: rules cannot "
                    "apply to both regular resources and non-resource URLs")
    omf = raw.get("omitManagedFields")
    rule = PolicyRule(
        level if level in LEVELS else "None",
        tuple(_strings(raw.get("users"), f"{path}.users")),
        tuple(_strings(raw.get("userGroups"), f"{path}.userGroups")),
        tuple(_strings(raw.get("verbs"), f"{path}.verbs")),
        tuple(groups), tuple(namespaces), tuple(urls), frozenset(omit),
        None if omf is None else bool(omf))
    return rule, errs
