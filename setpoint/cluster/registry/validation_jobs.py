"""Validation of batch/v1 Jobs and CronJobs, after kubernetes v1.32
pkg/apis/batch/validation/validation.go (``ValidateJob``, ``validateJobSpec``,
``validatePodFailurePolicy``, ``validateSuccessPolicy``, ``ValidateJobSpecUpdate``,
``ValidateCronJobCreate``/``Update``, ``validateScheduleFormat``, ``validateTimeZone``,
``ValidateJobTemplateSpec``) and pkg/registry/batch/job/strategy.go (``generateSelector``,
``validationOptionsForJob``)."""

from __future__ import annotations

import itertools
import re
from typing import Any

from setpoint.cluster.registry.validation_pods import validate_pod_template
from setpoint.cluster.registry.validation_workloads import (
    field_schema,
    go_label_selector,
    immutable,
    non_negative,
    spec_schema,
)
from setpoint.machinery import cronspec, labels, names
from setpoint.machinery import fielderrors as fe
from setpoint.machinery.errors import Cause
from setpoint.machinery.gofmt import format_q_slice
from setpoint.machinery.objects import Obj

CONTROLLER_UID, JOB_NAME = "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID, LEGACY_JOB_NAME = "controller-uid", "job-name"
MAX_PARALLELISM_INDEXED = 100_000
MAX_FAILED_INDEXES = 100_000
COMPLETIONS_SOFT_LIMIT = 100_000
PARALLELISM_HIGH_COMPLETIONS = 10_000
MAX_FAILED_INDEXES_HIGH_COMPLETIONS = 10_000
MAX_FAILURE_RULES, MAX_EXIT_CODES, MAX_CONDITION_PATTERNS = 20, 255, 20
MAX_MANAGED_BY, MAX_SUCCEEDED_INDEXES, MAX_SUCCESS_RULES = 63, 64 * 1024, 20
FAILURE_ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")
EXIT_CODE_OPERATORS = ("In", "NotIn")
CONDITION_STATUSES = ("False", "True", "Unknown")
REPLACEMENT_POLICIES = ("Failed", "TerminatingOrFailed")
CRONJOB_NAME_MAX = 52  # DNS1035LabelMaxLength - 11 (the controller's "-<timestamp>" suffix)
_TZ_PART = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")


def _invalid_omitting_value(path: str, detail: str) -> Cause:
    """``field.Invalid`` given ``field.OmitValueType{}``: the message shows no value."""
    return Cause(fe.INVALID, f"Invalid value: {detail}", path)


def generate_job_selector(obj: Obj) -> None:
    """The Job strategy's ``generateSelector`` (Validate on create, before validation):
    unless ``manualSelector``, the template gets the job-name and controller-uid labels
    it lacks and the selector matches the uid; a user's conflicting labels or selector are
    left for validation to refuse."""
    spec = obj.get("spec") or {}
    meta = obj.get("metadata") or {}
    if spec.get("manualSelector") is True or not isinstance(spec, dict):
        return
    uid, name = str(meta.get("uid") or ""), str(meta.get("name") or "")
    template = spec.setdefault("template", {})
    if not isinstance(template, dict):
        return
    template_meta = template.setdefault("metadata", {})
    template_labels = template_meta.get("labels") or {}
    template_meta["labels"] = template_labels
    for key, value in ((LEGACY_JOB_NAME, name), (JOB_NAME, name),
                       (LEGACY_CONTROLLER_UID, uid), (CONTROLLER_UID, uid)):
        template_labels.setdefault(key, value)
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        selector = spec["selector"] = {}
    match_labels = selector.get("matchLabels")
    if not isinstance(match_labels, dict):
        match_labels = selector["matchLabels"] = {}
    match_labels.setdefault(CONTROLLER_UID, uid)


def _has_label(template_labels: dict[str, str], key: str, expected: str) -> list[Cause]:
    """core validation ``ValidateHasLabel`` at spec.template.metadata."""
    path = fe.key("spec.template.metadata.labels", key)
    if key not in template_labels:
        return [fe.required(path, f"must be '{expected}'")]
    if template_labels[key] != expected:
        return [fe.invalid(path, fe.go_string_map(template_labels), f"must be '{expected}'")]
    return []


def _generated_selector(obj: Obj, require_prefixed: bool) -> list[Cause]:
    """``validateGeneratedSelector``."""
    spec, meta = obj.get("spec") or {}, obj.get("metadata") or {}
    if spec.get("manualSelector") is True or spec.get("selector") is None:
        return []
    uid, name = str(meta.get("uid") or ""), str(meta.get("name") or "")
    causes = [] if uid else [fe.required("metadata.uid")]
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    causes.extend(_has_label(template_labels, LEGACY_CONTROLLER_UID, uid))
    causes.extend(_has_label(template_labels, LEGACY_JOB_NAME, name))
    expected = {LEGACY_CONTROLLER_UID: uid, LEGACY_JOB_NAME: name}
    if require_prefixed:
        causes.extend(_has_label(template_labels, CONTROLLER_UID, uid))
        causes.extend(_has_label(template_labels, JOB_NAME, name))
        expected.update({CONTROLLER_UID: uid, JOB_NAME: name})
    try:
        selector = labels.from_label_selector(spec["selector"])
    except labels.SelectorError:
        return causes
    if not selector.matches(expected):
        causes.append(fe.invalid("spec.selector", go_label_selector(spec["selector"]),
                                 "`selector` not auto-generated"))
    return causes


_HTTP_PATH = re.compile(r"^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$")


def _domain_prefixed_path(path: str, value: str) -> list[Cause]:
    """apimachinery ``IsDomainPrefixedPath``."""
    if not value:
        return [fe.required(path)]
    host, _, rest = value.partition("/")
    if not host or not rest:
        return [fe.invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    causes = [fe.invalid(path, host, m) for m in names.is_dns1123_subdomain(host)]
    if not _HTTP_PATH.match(rest):
        causes.append(fe.invalid(path, rest, names.regex_error(
            "Invalid path", "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+")))
    return causes


def _int(spec: Obj, key: str) -> int | None:
    value = spec.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _indexed_limits(spec: Obj, path: str) -> list[Cause]:
    causes: list[Cause] = []
    completions, parallelism = _int(spec, "completions"), _int(spec, "parallelism")
    max_failed, per_index = _int(spec, "maxFailedIndexes"), spec.get("backoffLimitPerIndex")
    if spec.get("completions") is None:
        causes.append(fe.required(f"{path}.completions", "when completion mode is Indexed"))
    if parallelism is not None and parallelism > MAX_PARALLELISM_INDEXED:
        causes.append(fe.invalid(f"{path}.parallelism", parallelism,
                                 f"must be less than or equal to {MAX_PARALLELISM_INDEXED} "
                                 "when completion mode is Indexed"))
    if completions is not None and max_failed is not None and max_failed > completions:
        causes.append(fe.invalid(f"{path}.maxFailedIndexes", max_failed,
                                 "must be less than or equal to completions"))
    if max_failed is not None and max_failed > MAX_FAILED_INDEXES:
        causes.append(fe.invalid(f"{path}.maxFailedIndexes", max_failed,
                                 f"must be less than or equal to {MAX_FAILED_INDEXES}"))
    if completions is not None and completions > COMPLETIONS_SOFT_LIMIT and (
            per_index is not None):
        tail = (f"when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff "
                "limit per index")
        if spec.get("maxFailedIndexes") is None:
            causes.append(fe.required(f"{path}.maxFailedIndexes", "must be specified when "
                                      f"completions is above {COMPLETIONS_SOFT_LIMIT}"))
        if parallelism is not None and parallelism > PARALLELISM_HIGH_COMPLETIONS:
            causes.append(fe.invalid(f"{path}.parallelism", parallelism, "must be less than "
                                     f"or equal to {PARALLELISM_HIGH_COMPLETIONS} {tail}"))
        if max_failed is not None and max_failed > MAX_FAILED_INDEXES_HIGH_COMPLETIONS:
            causes.append(fe.invalid(f"{path}.maxFailedIndexes", max_failed,
                                     "must be less than or equal to "
                                     f"{MAX_FAILED_INDEXES_HIGH_COMPLETIONS} {tail}"))
    return causes


def _enum_value(value: str, path: str, allowed: tuple[str, ...]) -> list[Cause]:
    """A pod failure policy's enum: Required naming the valid values when unset,
    NotSupported when not one of them."""
    if not value:
        return [fe.required(path, f"valid values: {format_q_slice(allowed)}")]
    if value not in allowed:
        return [fe.not_supported(path, value, allowed)]
    return []


def _exit_codes(rule: Obj, path: str, container_names: set[str]) -> list[Cause]:
    """``validatePodFailurePolicyRuleOnExitCodes``."""
    operator = rule.get("operator") or ""
    causes = _enum_value(operator, f"{path}.operator", EXIT_CODE_OPERATORS)
    container = rule.get("containerName")
    if container is not None and container not in container_names:
        causes.append(fe.invalid(f"{path}.containerName", container, "must be one of the "
                                 "container or initContainer names in the pod template"))
    values = [v for v in rule.get("values") or [] if isinstance(v, int)]
    if not values:
        causes.append(fe.invalid(f"{path}.values", fe.GoValue("[]int32(nil)" if rule.get(
            "values") is None else "[]int32{}"), "at least one value is required"))
    elif len(values) > MAX_EXIT_CODES:
        causes.append(fe.too_many(f"{path}.values", len(values), MAX_EXIT_CODES))
    seen: set[int] = set()
    for j, value in enumerate(values):
        if operator == "In" and value == 0:
            causes.append(fe.invalid(fe.index(f"{path}.values", j), value,
                                     "must not be 0 for the In operator"))
        if value in seen:
            causes.append(fe.duplicate(fe.index(f"{path}.values", j), value))
        seen.add(value)
    if any(a > b for a, b in itertools.pairwise(values)):
        shown = fe.GoValue("[]int32{" + ", ".join(str(v) for v in values) + "}")
        causes.append(fe.invalid(f"{path}.values", shown, "must be ordered"))
    return causes


def _pod_conditions(patterns: list[Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    if len(patterns) > MAX_CONDITION_PATTERNS:
        causes.append(fe.too_many(path, len(patterns), MAX_CONDITION_PATTERNS))
    for j, pattern in enumerate(patterns):
        ppath = fe.index(path, j)
        pattern = pattern if isinstance(pattern, dict) else {}
        kind = str(pattern.get("type") or "")
        causes.extend(fe.invalid(f"{ppath}.type", kind, m)
                      for m in names.is_qualified_name(kind))
        causes.extend(_enum_value(pattern.get("status") or "", f"{ppath}.status",
                                  CONDITION_STATUSES))
    return causes


def _pod_failure_policy(spec: Obj, path: str) -> list[Cause]:
    """``validatePodFailurePolicy`` / ``validatePodFailurePolicyRule``."""
    rules = (spec.get("podFailurePolicy") or {}).get("rules") or []
    causes: list[Cause] = []
    if len(rules) > MAX_FAILURE_RULES:
        causes.append(fe.too_many(f"{path}.rules", len(rules), MAX_FAILURE_RULES))
    pod_spec = (spec.get("template") or {}).get("spec") or {}
    container_names = {str(c.get("name")) for key in ("containers", "initContainers")
                       for c in pod_spec.get(key) or [] if isinstance(c, dict)}
    for i, rule in enumerate(rules):
        rpath = fe.index(f"{path}.rules", i)
        rule = rule if isinstance(rule, dict) else {}
        action = rule.get("action") or ""
        causes.extend(_enum_value(action, f"{rpath}.action", FAILURE_ACTIONS))
        if action == "FailIndex" and spec.get("backoffLimitPerIndex") is None:
            causes.append(fe.invalid(f"{rpath}.action", action,
                                     "requires the backoffLimitPerIndex to be set"))
        on_exit, on_conditions = rule.get("onExitCodes"), rule.get("onPodConditions") or []
        if on_exit is not None:
            causes.extend(_exit_codes(on_exit, f"{rpath}.onExitCodes", container_names))
        if on_conditions:
            causes.extend(_pod_conditions(on_conditions, f"{rpath}.onPodConditions"))
        if on_exit is not None and on_conditions:
            causes.append(_invalid_omitting_value(rpath, "specifying both OnExitCodes and "
                                     "OnPodConditions is not supported"))
        if on_exit is None and not on_conditions:
            causes.append(_invalid_omitting_value(rpath, "specifying one of OnExitCodes and "
                                     "OnPodConditions is required"))
    return causes


def _indexes_format(text: str, completions: int) -> int:
    """``validateIndexesFormat``: the number of indexes, or ValueError with Go's words."""
    if not text:
        return 0
    last: int | None = None
    total = 0
    for interval in text.split(","):
        parts = interval.split("-")
        if len(parts) > 2:
            raise ValueError(f'the fragment "{interval}" violates the requirement that an '
                             "index interval can have at most two parts separated by '-'")
        bounds = []
        for part in parts:
            if not re.fullmatch(r"[+-]?[0-9]+", part):
                raise ValueError(f'cannot convert string to integer for index: "{part}"')
            if int(part) >= completions:
                raise ValueError(f'too large index: "{part}"')
            bounds.append(int(part))
        x, y = bounds[0], bounds[-1]
        if len(bounds) == 2 and x >= y:
            raise ValueError(f"non-increasing order, previous: {x}, current: {y}")
        if last is not None and last >= x:
            raise ValueError(f"non-increasing order, previous: {last}, current: {x}")
        total += y - x + 1
        last = y
    return total


def _success_policy(spec: Obj, path: str) -> list[Cause]:
    """``validateSuccessPolicy`` / ``validateSuccessPolicyRule``."""
    rules = (spec.get("successPolicy") or {}).get("rules") or []
    causes: list[Cause] = []
    if not rules:
        causes.append(fe.required(f"{path}.rules", "at least one rules must be specified "
                                  "when the successPolicy is specified"))
    if len(rules) > MAX_SUCCESS_RULES:
        causes.append(fe.too_many(f"{path}.rules", len(rules), MAX_SUCCESS_RULES))
    completions = _int(spec, "completions") or 0
    for i, rule in enumerate(rules):
        rpath = fe.index(f"{path}.rules", i)
        rule = rule if isinstance(rule, dict) else {}
        count, indexes = rule.get("succeededCount"), rule.get("succeededIndexes")
        if count is None and indexes is None:
            causes.append(fe.required(rpath, "at least one of succeededCount or "
                                      "succeededIndexes must be specified"))
        total = 0
        if isinstance(indexes, str):
            if len(indexes) > MAX_SUCCEEDED_INDEXES:
                causes.append(fe.too_long(f"{rpath}.succeededIndexes", MAX_SUCCEEDED_INDEXES))
            try:
                total = _indexes_format(indexes, completions)
            except ValueError as err:
                causes.append(fe.invalid(f"{rpath}.succeededIndexes", indexes,
                                         f"error parsing succeededIndexes: {err}"))
        if isinstance(count, int):
            cpath = f"{rpath}.succeededCount"
            causes.extend(non_negative(rule, "succeededCount", rpath))
            if count > completions:
                causes.append(fe.invalid(cpath, count, f"must be less than or equal to "
                                         f"{completions} (the number of specified completions)"))
            if indexes is not None and count > total:
                causes.append(fe.invalid(cpath, count, f"must be less than or equal to {total} "
                                         "(the number of indexes in the specified "
                                         "succeededIndexes field)"))
    return causes


def validate_job_spec_fields(spec: Obj, path: str) -> list[Cause]:
    """``validateJobSpec``: what a Job and a CronJob's job template share."""
    causes: list[Cause] = []
    for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
                "ttlSecondsAfterFinished", "backoffLimitPerIndex", "maxFailedIndexes"):
        causes.extend(non_negative(spec, key, path))
        if key == "maxFailedIndexes" and spec.get(key) is not None and spec.get(
                "backoffLimitPerIndex") is None:
            causes.append(fe.required(f"{path}.backoffLimitPerIndex",
                                      "when maxFailedIndexes is specified"))
    managed_by = spec.get("managedBy")
    if isinstance(managed_by, str):
        causes.extend(_domain_prefixed_path(f"{path}.managedBy", managed_by))
        if len(managed_by) > MAX_MANAGED_BY:
            causes.append(fe.too_long(f"{path}.managedBy", MAX_MANAGED_BY))
    mode = spec.get("completionMode")
    if mode is not None:
        if mode not in ("NonIndexed", "Indexed"):
            causes.append(fe.not_supported(f"{path}.completionMode", mode,
                                           ("NonIndexed", "Indexed")))
        if mode == "Indexed":
            causes.extend(_indexed_limits(spec, path))
    if mode in (None, "NonIndexed"):
        for key in ("backoffLimitPerIndex", "maxFailedIndexes"):
            if spec.get(key) is not None:
                causes.append(fe.invalid(f"{path}.{key}", spec[key],
                                         "requires indexed completion mode"))
    if spec.get("podFailurePolicy") is not None:
        causes.extend(_pod_failure_policy(spec, f"{path}.podFailurePolicy"))
    if spec.get("successPolicy") is not None:
        if mode != "Indexed":
            causes.append(fe.invalid(f"{path}.successPolicy", fe.GoValue("batch.SuccessPolicy"
                                     "{...}"), "requires indexed completion mode"))
        else:
            causes.extend(_success_policy(spec, f"{path}.successPolicy"))
    replacement = spec.get("podReplacementPolicy")
    if replacement is not None:
        if spec.get("podFailurePolicy") is not None:
            if replacement != "Failed":
                causes.append(fe.not_supported(f"{path}.podReplacementPolicy", replacement,
                                               ("Failed",)))
        elif replacement not in REPLACEMENT_POLICIES:
            causes.append(fe.not_supported(f"{path}.podReplacementPolicy", replacement,
                                           REPLACEMENT_POLICIES))
    template = spec.get("template")
    if isinstance(template, dict):
        causes.extend(validate_pod_template(template, f"{path}.template"))
    restart = ((template if isinstance(template, dict) else {}).get("spec") or {}).get(
        "restartPolicy") or ""
    rpath = f"{path}.template.spec.restartPolicy"
    if restart in ("Always", ""):
        # the pod defaults fill in Always, so a missing policy is asked for, not refused
        causes.append(fe.required(rpath, 'valid values: "OnFailure", "Never"'))
    elif restart not in ("OnFailure", "Never"):
        causes.append(fe.not_supported(rpath, restart, ("OnFailure", "Never")))
    elif spec.get("podFailurePolicy") is not None and restart != "Never":
        causes.append(fe.invalid(rpath, restart,
                                 'only "Never" is supported when podFailurePolicy is specified'))
    return causes


def _job_spec(spec: Obj, path: str) -> list[Cause]:
    """``ValidateJobSpec``: the shared fields, a selector that exists and matches."""
    causes = validate_job_spec_fields(spec, path)
    selector = spec.get("selector")
    if selector is None:
        return [*causes, fe.required(f"{path}.selector")]
    causes.extend(labels.validate_label_selector(selector, f"{path}.selector"))
    try:
        parsed = labels.from_label_selector(selector)
    except labels.SelectorError:
        return causes
    template_labels = (((spec.get("template") or {}).get("metadata") or {}).get("labels"))
    if not parsed.matches(template_labels or {}):
        causes.append(fe.invalid(f"{path}.template.metadata.labels",
                                 fe.go_string_map(template_labels),
                                 "`selector` does not match template `labels`"))
    return causes


def _validate_job(obj: Obj, require_prefixed: bool) -> list[Cause]:
    """``ValidateJob`` less its metadata check (the caller's)."""
    spec = obj.get("spec") or {}
    causes = _generated_selector(obj, require_prefixed)
    causes.extend(_job_spec(spec, "spec"))
    completions = _int(spec, "completions")
    if spec.get("completionMode") == "Indexed" and completions is not None and completions > 0:
        name = str((obj.get("metadata") or {}).get("name") or "")
        hostname = f"{name}-{completions - 1}"
        if names.is_dns1123_label(hostname):
            causes.append(fe.invalid("metadata.name", name, "will not able to create pod "
                                     f"with invalid DNS label: {hostname}"))
    return causes


def validate_job(obj: Obj) -> list[Cause]:
    return _validate_job(obj, require_prefixed=True)


_SCHEDULING_KEYS = ("nodeSelector", "tolerations", "schedulingGates")


def _template_for_compare(template: Any, old_template: Any, mutable: bool) -> Any:
    """``validatePodTemplateUpdate``: a suspended job that never started may change its
    scheduling directives (node affinity, node selector, tolerations, scheduling gates) and
    its template's labels and annotations; the rest of the template is fixed."""
    if not mutable or not isinstance(template, dict) or not isinstance(old_template, dict):
        return old_template
    old = {**old_template, "metadata": dict(old_template.get("metadata") or {}),
           "spec": dict(old_template.get("spec") or {})}
    new_meta, new_spec = template.get("metadata") or {}, template.get("spec") or {}
    for key in ("labels", "annotations"):
        old["metadata"].pop(key, None)
        if key in new_meta:
            old["metadata"][key] = new_meta[key]
    for key in _SCHEDULING_KEYS:
        old["spec"].pop(key, None)
        if key in new_spec:
            old["spec"][key] = new_spec[key]
    new_aff, old_aff = new_spec.get("affinity"), old["spec"].get("affinity")
    if new_aff is None and old_aff is not None:
        rest = {k: v for k, v in old_aff.items() if k != "nodeAffinity"}
        if any(v is not None for v in rest.values()):
            old["spec"]["affinity"] = rest
        else:
            old["spec"].pop("affinity")
    elif isinstance(new_aff, dict):
        merged = {k: v for k, v in (old_aff or {}).items() if k != "nodeAffinity"}
        if new_aff.get("nodeAffinity") is not None:
            merged["nodeAffinity"] = new_aff["nodeAffinity"]
        old["spec"]["affinity"] = merged
    return old


def validate_job_update(new: Obj, old: Obj) -> list[Cause]:
    """The Job strategy's ``ValidateUpdate``: ``ValidateJob`` (the prefixed labels only
    required of a job that had them) then ``ValidateJobSpecUpdate``, which validates the
    spec again and keeps its fixed fields."""
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    schema = spec_schema("batch", "Job")
    old_labels = ((os_.get("template") or {}).get("metadata") or {}).get("labels") or {}
    causes = _validate_job(new, CONTROLLER_UID in old_labels and JOB_NAME in old_labels)
    causes.extend(_job_spec(ns, "spec"))
    if ns.get("completions") != os_.get("completions"):
        if ns.get("completionMode") != "Indexed":
            causes.extend(immutable(ns.get("completions"), os_.get("completions"),
                                    "spec.completions", ns.get("completions")))
        elif ns.get("completions") is not None and ns.get("completions") != ns.get(
                "parallelism"):
            causes.append(fe.invalid("spec.completions", ns["completions"],
                                     "can only be modified in tandem with spec.parallelism"))
    causes.extend(immutable(ns.get("selector"), os_.get("selector"), "spec.selector",
                            go_label_selector(ns.get("selector")),
                            field_schema(schema, "selector")))
    mutable = (bool(os_.get("suspend")) and bool(ns.get("suspend"))
               and (old.get("status") or {}).get("startTime") is None)
    old_template = _template_for_compare(ns.get("template"), os_.get("template"), mutable)
    causes.extend(immutable(ns.get("template"), old_template, "spec.template",
                            fe.GoValue("core.PodTemplateSpec{...}"),
                            field_schema(schema, "template")))
    for key in ("completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy",
                "successPolicy"):
        causes.extend(immutable(ns.get(key), os_.get(key), f"spec.{key}",
                                ns.get(key) if not isinstance(ns.get(key), dict) else
                                fe.GoValue("{...}"), field_schema(schema, key)))
    return causes


# -- CronJob -------------------------------------------------------------------------------

def _time_zone(zone: Any, path: str) -> list[Cause]:
    """``validateTimeZone``."""
    if zone is None:
        return []
    shown = zone
    if zone == "":
        return [fe.invalid(path, shown, "timeZone must be nil or non-empty string")]
    for part in str(zone).split("/"):
        if part in (".", "..") or part.startswith("-") or not _TZ_PART.match(part):
            return [fe.invalid(path, shown, f"unknown time zone {zone}")]
    causes = []
    if str(zone).lower() == "local":
        causes.append(fe.invalid(path, shown, "timeZone must be an explicit time zone as "
                                 "defined in https://www.iana.org/time-zones"))
    problem = cronspec.load_location(str(zone))
    if problem is not None:
        causes.append(fe.invalid(path, shown, problem))
    return causes


def _cron_job_spec(spec: Obj, old_spec: Obj | None, path: str) -> list[Cause]:
    """``validateCronJobSpec`` (``old_spec`` None on create)."""
    causes: list[Cause] = []
    schedule = spec.get("schedule")
    spath = f"{path}.schedule"
    if not schedule:
        causes.append(fe.required(spath))
    elif isinstance(schedule, str):
        try:
            cronspec.parse_standard(schedule)
        except cronspec.CronError as err:
            causes.append(fe.invalid(spath, schedule, str(err)))
        allow_tz = old_spec is not None and "TZ" in str(old_spec.get("schedule") or "")
        if allow_tz and "TZ" in schedule and spec.get("timeZone") is not None:
            causes.append(fe.invalid(spath, schedule, "cannot use both timeZone field and TZ "
                                     "or CRON_TZ in schedule"))
        elif not allow_tz and "TZ" in schedule:
            causes.append(fe.invalid(spath, schedule, "cannot use TZ or CRON_TZ in schedule, "
                                     "use timeZone field instead"))
    causes.extend(non_negative(spec, "startingDeadlineSeconds", path))
    if old_spec is None or old_spec.get("timeZone") != spec.get("timeZone"):
        causes.extend(_time_zone(spec.get("timeZone"), f"{path}.timeZone"))
    policy = spec.get("concurrencyPolicy") or ""
    if not policy:
        causes.append(fe.required(f"{path}.concurrencyPolicy"))
    elif policy not in ("Allow", "Forbid", "Replace"):
        causes.append(fe.not_supported(f"{path}.concurrencyPolicy", policy,
                                       ("Allow", "Forbid", "Replace")))
    jpath = f"{path}.jobTemplate.spec"
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    causes.extend(validate_job_spec_fields(job_spec, jpath))
    if job_spec.get("selector") is not None:
        causes.append(fe.invalid(f"{jpath}.selector", go_label_selector(job_spec["selector"]),
                                 "`selector` will be auto-generated"))
    if job_spec.get("manualSelector") is True:
        causes.append(fe.not_supported(f"{jpath}.manualSelector", fe.GoValue("true"),
                                       ("nil", "false")))
    for key in ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        causes.extend(non_negative(spec, key, path))
    return causes


def validate_cron_job_create(obj: Obj) -> list[Cause]:
    """``ValidateCronJobCreate`` less its metadata check: no TZ in the schedule, and a name
    that leaves room for the jobs' timestamp suffix."""
    causes = _cron_job_spec(obj.get("spec") or {}, None, "spec")
    name = str((obj.get("metadata") or {}).get("name") or "")
    if len(name) > CRONJOB_NAME_MAX:
        causes.append(fe.invalid("metadata.name", name,
                                 f"must be no more than {CRONJOB_NAME_MAX} characters"))
    return causes


def validate_cron_job_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateCronJobUpdate``: the spec against the old one (a TZ schedule may stay,
    an unchanged time zone is not looked up again), no name length rule."""
    return _cron_job_spec(new.get("spec") or {}, old.get("spec") or {}, "spec")
