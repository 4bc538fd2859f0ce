"""Validation of the workload controllers (``pkg/apis/apps/validation``, ``batch``):
selectors that must exist and match the template, replica counts, strategies, and the
fields that may not change once created."""

from __future__ import annotations

import re
from typing import Any

from setpoint.cluster.registry.gomembers import go_zeros
from setpoint.cluster.registry.validation_pods import validate_pod_template
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import labels, names
from setpoint.machinery.equality import semantic_equal
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj
from setpoint.machinery.schema import Schema, definitions

NON_NEGATIVE = "must be greater than or equal to 0"
_PERCENT = re.compile(r"^[0-9]+%$")


def go_label_selector(selector: Any) -> fe.GoValue:
    """``%#v`` of a ``*v1.LabelSelector`` (what immutable-selector errors print)."""
    if not isinstance(selector, dict):
        return fe.GoValue("null")
    exprs = selector.get("matchExpressions")
    if exprs is None:
        expr_text = "[]v1.LabelSelectorRequirement(nil)"
    else:
        items = [
            "v1.LabelSelectorRequirement{"
            f"Key:{fe.go_quote(str(e.get('key', '')))}, "
            f"Operator:{fe.go_quote(str(e.get('operator', '')))}, "
            f"Values:{fe.go_string_slice(e.get('values')).text}}}"
            for e in exprs
        ]
        expr_text = "[]v1.LabelSelectorRequirement{" + ", ".join(items) + "}"
    match_labels = fe.go_string_map(selector.get("matchLabels")).text
    return fe.GoValue(f"v1.LabelSelector{{MatchLabels:{match_labels}, "
                      f"MatchExpressions:{expr_text}}}")


def non_negative(spec: Obj, key: str, path: str) -> list[Cause]:
    value = spec.get(key)
    if isinstance(value, int) and value < 0:
        return [fe.invalid(f"{path}.{key}", value, NON_NEGATIVE)]
    return []


def _selector(spec: Obj, path: str, kind: str) -> list[Cause]:
    selector = spec.get("selector")
    if selector is None:
        return [fe.required(f"{path}.selector")]
    causes = labels.validate_label_selector(selector, f"{path}.selector")
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        causes.append(fe.invalid(f"{path}.selector", go_label_selector(selector),
                                 f"empty selector is invalid for {kind}"))
    return causes


def _template_matches(spec: Obj, path: str) -> list[Cause]:
    """``ValidatePodTemplateSpecForReplicaSet``'s label check (a nil selector selects
    nothing, so it never matches)."""
    try:
        selector = labels.from_label_selector(spec.get("selector"))
    except labels.SelectorError:
        return [fe.invalid(f"{path}.selector", go_label_selector(spec.get("selector")),
                           "invalid label selector")]
    template = spec.get("template")
    if not isinstance(template, dict):
        return [fe.required(f"{path}.template")]
    template_labels = (template.get("metadata") or {}).get("labels")
    if not selector.empty and not selector.matches(template_labels or {}):
        return [fe.invalid(f"{path}.template.metadata.labels",
                           fe.go_string_map(template_labels),
                           "`selector` does not match template `labels`")]
    return []


def _replica_set_template(spec: Obj, path: str, kind: str = "ReplicaSet") -> list[Cause]:
    """``ValidatePodTemplateSpecForReplicaSet`` (and DaemonSet's same rules): the selector
    match, the pod template, a restartPolicy of Always, no activeDeadlineSeconds."""
    causes = _template_matches(spec, path)
    template = spec.get("template")
    if isinstance(template, dict):
        causes.extend(validate_pod_template(template, f"{path}.template"))
        pod_spec = template.get("spec") or {}
        policy = pod_spec.get("restartPolicy") or ""
        if policy != "Always":
            causes.append(fe.not_supported(f"{path}.template.spec.restartPolicy", policy,
                                           ("Always",)))
        if pod_spec.get("activeDeadlineSeconds") is not None:
            causes.append(fe.forbidden(f"{path}.template.spec.activeDeadlineSeconds",
                                       f"activeDeadlineSeconds in {kind} is not Supported"))
    return causes


def _int_or_string(value: Any) -> fe.GoValue:
    """``%#v`` of an ``intstr.IntOrString``."""
    if isinstance(value, str):
        return fe.GoValue(f"intstr.IntOrString{{Type:1, IntVal:0, StrVal:{fe.go_quote(value)}}}")
    return fe.GoValue(f"intstr.IntOrString{{Type:0, IntVal:{value}, StrVal:\"\"}}")


def _percent(value: Any) -> int | None:
    """``getPercentValue``: the number of a valid percentage string, else None."""
    if isinstance(value, str) and _PERCENT.match(value):
        return int(value[:-1])
    return None


def _int_or_percent_value(value: Any) -> int:
    """``getIntOrPercentValue`` (an invalid string counts as intstr's IntValue: Atoi)."""
    pct = _percent(value)
    if pct is not None:
        return pct
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return 0
    return value if isinstance(value, int) else 0


def positive_int_or_percent(value: Any, path: str) -> list[Cause]:
    """``ValidatePositiveIntOrPercent``."""
    if isinstance(value, str):
        if not _PERCENT.match(value):
            return [fe.invalid(path, _int_or_string(value), names.regex_error(
                "a valid percent string must be a numeric string followed by an ending '%'",
                "[0-9]+%", "1%", "93%"))]
        return []
    if isinstance(value, int) and value < 0:
        return [fe.invalid(path, value, NON_NEGATIVE)]
    return []


def not_more_than_100_percent(value: Any, path: str) -> list[Cause]:
    """``IsNotMoreThan100Percent``."""
    pct = _percent(value)
    if pct is None or pct <= 100:
        return []
    return [fe.invalid(path, _int_or_string(value), "must not be greater than 100%")]


def _deployment_strategy(strategy: Obj, path: str) -> list[Cause]:
    """``ValidateDeploymentStrategy`` / ``ValidateRollingUpdateDeployment``."""
    kind = strategy.get("type") or ""
    rolling = strategy.get("rollingUpdate")
    if kind == "Recreate":
        if rolling is not None:
            return [fe.forbidden(f"{path}.rollingUpdate",
                                 "may not be specified when strategy `type` is 'Recreate'")]
        return []
    if kind != "RollingUpdate":
        shown = fe.GoValue(f"apps.DeploymentStrategy{{Type:{fe.go_quote(kind)}, "
                           "RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}")
        return [fe.not_supported(path, shown, ("Recreate", "RollingUpdate"))]
    if not isinstance(rolling, dict):
        return [fe.required(f"{path}.rollingUpdate", "this should be defaulted and never be nil")]
    rpath = f"{path}.rollingUpdate"
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    causes = positive_int_or_percent(unavailable, f"{rpath}.maxUnavailable")
    causes.extend(positive_int_or_percent(surge, f"{rpath}.maxSurge"))
    if _int_or_percent_value(unavailable) == 0 and _int_or_percent_value(surge) == 0:
        causes.append(fe.invalid(f"{rpath}.maxUnavailable", _int_or_string(unavailable or 0),
                                 "may not be 0 when `maxSurge` is 0"))
    causes.extend(not_more_than_100_percent(unavailable, f"{rpath}.maxUnavailable"))
    return causes


def validate_deployment(obj: Obj) -> list[Cause]:
    spec, path = obj.get("spec") or {}, "spec"
    causes = non_negative(spec, "replicas", path)
    causes.extend(_selector(spec, path, "deployment"))
    causes.extend(_replica_set_template(spec, path))
    causes.extend(_deployment_strategy(spec.get("strategy") or {}, f"{path}.strategy"))
    causes.extend(non_negative(spec, "minReadySeconds", path))
    causes.extend(non_negative(spec, "revisionHistoryLimit", path))
    if isinstance(spec.get("rollbackTo"), dict):
        causes.extend(non_negative(spec["rollbackTo"], "revision", f"{path}.rollback"))
    deadline = spec.get("progressDeadlineSeconds")
    if isinstance(deadline, int):
        # ValidateDeploymentSpec: non-negative, then above minReadySeconds
        causes.extend(non_negative(spec, "progressDeadlineSeconds", path))
        if deadline <= (spec.get("minReadySeconds") or 0):
            causes.append(fe.invalid(f"{path}.progressDeadlineSeconds", deadline,
                                     "must be greater than minReadySeconds"))
    return causes


def validate_replica_set(obj: Obj) -> list[Cause]:
    spec, path = obj.get("spec") or {}, "spec"
    causes = non_negative(spec, "replicas", path)
    causes.extend(non_negative(spec, "minReadySeconds", path))
    # (ValidateReplicaSetSpec's empty-selector message really names a deployment)
    causes.extend(_selector(spec, path, "deployment"))
    causes.extend(_replica_set_template(spec, path))
    return causes


def _stateful_set_update_strategy(strategy: Obj, path: str) -> list[Cause]:
    """``ValidateStatefulSetSpec``'s updateStrategy switch and
    ``validateRollingUpdateStatefulSet``."""
    kind = strategy.get("type") or ""
    rolling = strategy.get("rollingUpdate")
    spath = f"{path}.updateStrategy"
    if not kind:
        return [fe.required(spath)]
    if kind == "OnDelete":
        if rolling is not None:
            return [fe.invalid(f"{spath}.rollingUpdate", fe.GoValue(
                "&apps.RollingUpdateStatefulSetStrategy{...}"),
                "only allowed for updateStrategy 'RollingUpdate'")]
        return []
    if kind != "RollingUpdate":
        shown = fe.GoValue(f"apps.StatefulSetUpdateStrategy{{Type:{fe.go_quote(kind)}, "
                           "RollingUpdate:(*apps.RollingUpdateStatefulSetStrategy)(nil)}")
        return [fe.invalid(spath, shown, "must be 'RollingUpdate' or 'OnDelete'")]
    if not isinstance(rolling, dict):
        return []
    rpath = f"{spath}.rollingUpdate"
    causes = non_negative(rolling, "partition", rpath)
    unavailable = rolling.get("maxUnavailable")
    if unavailable is not None:
        causes.extend(positive_int_or_percent(unavailable, f"{rpath}.maxUnavailable"))
        if _int_or_percent_value(unavailable) == 0:
            causes.append(fe.invalid(f"{rpath}.maxUnavailable", _int_or_string(unavailable),
                                     "cannot be 0"))
        causes.extend(not_more_than_100_percent(unavailable, f"{rpath}.maxUnavailable"))
    return causes


def validate_stateful_set(obj: Obj) -> list[Cause]:
    """``ValidateStatefulSetSpec``."""
    spec, path = obj.get("spec") or {}, "spec"
    causes: list[Cause] = []
    policy = spec.get("podManagementPolicy") or ""
    if not policy:
        causes.append(fe.required(f"{path}.podManagementPolicy"))
    elif policy not in ("OrderedReady", "Parallel"):
        causes.append(fe.invalid(f"{path}.podManagementPolicy", policy,
                                 "must be 'OrderedReady' or 'Parallel'"))
    causes.extend(_stateful_set_update_strategy(spec.get("updateStrategy") or {}, path))
    retention = spec.get("persistentVolumeClaimRetentionPolicy")
    if isinstance(retention, dict):
        for key in ("whenDeleted", "whenScaled"):
            value = retention.get(key) or ""
            if value not in ("Retain", "Delete"):
                causes.append(fe.not_supported(
                    f"{path}.persistentVolumeClaimRetentionPolicy.{key}", value,
                    ("Retain", "Delete")))
    causes.extend(non_negative(spec, "replicas", path))
    causes.extend(non_negative(spec, "minReadySeconds", path))
    if isinstance(spec.get("ordinals"), dict):
        causes.extend(non_negative(spec["ordinals"], "start", f"{path}.ordinals"))
    causes.extend(_selector(spec, path, "statefulset"))
    causes.extend(_stateful_set_template(spec, path))
    return causes


def _stateful_set_template(spec: Obj, path: str) -> list[Cause]:
    """``ValidatePodTemplateSpecForStatefulSet``: the selector match, the template's labels
    and annotations — and not its pod spec, whose volume mounts may name the claim templates
    (Go leaves that check as a TODO) — then ``ValidateStatefulSetSpec``'s restartPolicy and
    activeDeadlineSeconds rules."""
    causes = _template_matches(spec, path)
    template = spec.get("template")
    if not isinstance(template, dict):
        return causes
    meta = template.get("metadata") or {}
    causes.extend(names.validate_labels(meta.get("labels"), f"{path}.template.labels"))
    causes.extend(names.validate_annotations(meta.get("annotations"),
                                             f"{path}.template.annotations"))
    pod_spec = template.get("spec") or {}
    policy = pod_spec.get("restartPolicy") or ""
    if policy != "Always":
        causes.append(fe.not_supported(f"{path}.template.spec.restartPolicy", policy,
                                       ("Always",)))
    if pod_spec.get("activeDeadlineSeconds") is not None:
        causes.append(fe.forbidden(f"{path}.template.spec.activeDeadlineSeconds",
                                   "activeDeadlineSeconds in StatefulSet is not Supported"))
    return causes


def _daemon_set_update_strategy(strategy: Obj, path: str) -> list[Cause]:
    """``ValidateDaemonSetUpdateStrategy`` / ``ValidateRollingUpdateDaemonSet``."""
    kind = strategy.get("type") or ""
    rolling = strategy.get("rollingUpdate")
    if kind == "OnDelete":
        return []
    if kind != "RollingUpdate":
        shown = fe.GoValue(f"apps.DaemonSetUpdateStrategy{{Type:{fe.go_quote(kind)}, "
                           "RollingUpdate:(*apps.RollingUpdateDaemonSet)(nil)}")
        return [fe.not_supported(path, shown, ("RollingUpdate", "OnDelete"))]
    rpath = f"{path}.rollingUpdate"
    if not isinstance(rolling, dict):
        return [fe.required(rpath)]
    unavailable, surge = rolling.get("maxUnavailable", 0), rolling.get("maxSurge", 0)
    causes = positive_int_or_percent(unavailable, f"{rpath}.maxUnavailable")
    causes.extend(positive_int_or_percent(surge, f"{rpath}.maxSurge"))
    causes.extend(not_more_than_100_percent(unavailable, f"{rpath}.maxUnavailable"))
    causes.extend(not_more_than_100_percent(surge, f"{rpath}.maxSurge"))
    has_unavailable = _int_or_percent_value(unavailable) != 0
    has_surge = _int_or_percent_value(surge) != 0
    if has_unavailable and has_surge:
        causes.append(fe.invalid(f"{rpath}.maxSurge", _int_or_string(surge),
                                 "may not be set when maxUnavailable is non-zero"))
    elif not has_unavailable and not has_surge:
        causes.append(fe.required(f"{rpath}.maxUnavailable", "cannot be 0 when maxSurge is 0"))
    return causes


def validate_daemon_set(obj: Obj) -> list[Cause]:
    """``ValidateDaemonSetSpec``."""
    spec, path = obj.get("spec") or {}, "spec"
    causes = _selector(spec, path, "daemonset")
    causes.extend(_replica_set_template(spec, path, "DaemonSet"))
    causes.extend(non_negative(spec, "minReadySeconds", path))
    causes.extend(_daemon_set_update_strategy(spec.get("updateStrategy") or {},
                                              f"{path}.updateStrategy"))
    causes.extend(non_negative(spec, "revisionHistoryLimit", path))
    return causes


def immutable(new: Any, old: Any, path: str, shown: Any,
              schema: Schema | None = None) -> list[Cause]:
    """``ValidateImmutableField``: compared with apiequality.Semantic.DeepEqual, so with the
    field's ``schema`` a nil and an empty slice or map are the same value."""
    same = semantic_equal(new, old, schema, go_zeros) if schema is not None else new == old
    return [] if same else [fe.invalid(path, shown, "field is immutable")]


def spec_schema(group: str, kind: str) -> Schema | None:
    """The OpenAPI schema of a built-in workload's v1 ``spec``."""
    schema = definitions().for_kind(group, "v1", kind)
    return schema.properties.get("spec") if schema is not None else None


def field_schema(schema: Schema | None, key: str) -> Schema | None:
    return schema.properties.get(key) if schema is not None else None


def validate_selector_update(new: Obj, old: Obj) -> list[Cause]:
    """apps/v1 controllers: ``spec.selector`` never changes."""
    new_sel = (new.get("spec") or {}).get("selector")
    old_sel = (old.get("spec") or {}).get("selector")
    kind = str(new.get("kind") or "Deployment")
    return immutable(new_sel, old_sel, "spec.selector", go_label_selector(new_sel),
                     field_schema(spec_schema("apps", kind), "selector"))


_STS_UPDATABLE = ("replicas", "ordinals", "template", "updateStrategy",
                  "persistentVolumeClaimRetentionPolicy", "minReadySeconds")


def validate_stateful_set_update(new: Obj, old: Obj) -> list[Cause]:
    new_spec = {k: v for k, v in (new.get("spec") or {}).items() if k not in _STS_UPDATABLE}
    old_spec = {k: v for k, v in (old.get("spec") or {}).items() if k not in _STS_UPDATABLE}
    # (ValidateStatefulSetUpdate: apiequality.Semantic.DeepEqual of the specs)
    if not semantic_equal(new_spec, old_spec, spec_schema("apps", "StatefulSet"), go_zeros):
        return [fe.forbidden("spec", "updates to statefulset spec for fields other than "
                             "'replicas', 'ordinals', 'template', 'updateStrategy', "
                             "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' "
                             "are forbidden")]
    return []


def validate_controller_revision(obj: Obj) -> list[Cause]:
    """``ValidateControllerRevision``: data is mandatory, the revision non-negative."""
    causes = [fe.required("data", "data is mandatory")] if obj.get("data") is None else []
    revision = obj.get("revision")
    if isinstance(revision, int) and revision < 0:
        causes.append(fe.invalid("revision", revision, NON_NEGATIVE))
    return causes


def validate_controller_revision_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateControllerRevisionUpdate``: the data never changes."""
    return immutable(new.get("data"), old.get("data"), "data",
                     fe.GoValue("runtime.RawExtension{...}"))

