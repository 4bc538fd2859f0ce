"""Validation of the workload controllers (``pkg/apis/apps/validation``, ``batch``):
selectors that must exist and match the template, replica counts, strategies, and the
fields that may not change once created."""

from __future__ import annotations

from typing import Any

from setpoint.cluster.registry.validation_pods import validate_pod_template
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import labels, names
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

NON_NEGATIVE = "must be greater than or equal to 0"


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


def _non_negative(spec: Obj, key: str, path: str) -> list[Cause]:
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


def _replica_set_template(spec: Obj, path: str, restart: tuple[str, ...] = ("Always",)
                          ) -> list[Cause]:
    causes = _template_matches(spec, path)
    template = spec.get("template")
    if isinstance(template, dict):
        causes.extend(validate_pod_template(template, f"{path}.template"))
        policy = (template.get("spec") or {}).get("restartPolicy")
        if policy and policy not in restart:
            causes.append(fe.not_supported(f"{path}.template.spec.restartPolicy", policy,
                                           restart))
    return causes


def validate_deployment(obj: Obj) -> list[Cause]:
    spec, path = obj.get("spec") or {}, "spec"
    causes = _non_negative(spec, "replicas", path)
    causes.extend(_selector(spec, path, "deployment"))
    causes.extend(_replica_set_template(spec, path))
    strategy = spec.get("strategy") or {}
    kind = strategy.get("type")
    if kind not in ("Recreate", "RollingUpdate"):
        causes.append(fe.not_supported(f"{path}.strategy.type", kind or "",
                                       ("Recreate", "RollingUpdate")))
    elif kind == "Recreate" and strategy.get("rollingUpdate") is not None:
        causes.append(fe.forbidden(f"{path}.strategy.rollingUpdate",
                                   "may not be specified when strategy `type` is 'Recreate'"))
    causes.extend(_non_negative(spec, "minReadySeconds", path))
    causes.extend(_non_negative(spec, "revisionHistoryLimit", path))
    deadline = spec.get("progressDeadlineSeconds")
    if deadline is not None:
        if deadline <= 0:
            causes.append(fe.invalid(f"{path}.progressDeadlineSeconds", deadline,
                                     "must be greater than 0"))
        if deadline <= (spec.get("minReadySeconds") or 0):
            causes.append(fe.invalid(f"{path}.progressDeadlineSeconds", deadline,
                                     "must be greater than minReadySeconds"))
    return causes


def validate_replica_set(obj: Obj) -> list[Cause]:
    spec, path = obj.get("spec") or {}, "spec"
    causes = _non_negative(spec, "replicas", path)
    causes.extend(_non_negative(spec, "minReadySeconds", path))
    causes.extend(_selector(spec, path, "replicaset"))
    causes.extend(_replica_set_template(spec, path))
    return causes


def validate_stateful_set(obj: Obj) -> list[Cause]:
    spec, path = obj.get("spec") or {}, "spec"
    causes: list[Cause] = []
    policy = spec.get("podManagementPolicy")
    if policy not in ("OrderedReady", "Parallel"):
        causes.append(fe.not_supported(f"{path}.podManagementPolicy", policy or "",
                                       ("OrderedReady", "Parallel")))
    strategy = (spec.get("updateStrategy") or {}).get("type")
    if strategy not in ("RollingUpdate", "OnDelete"):
        causes.append(fe.not_supported(f"{path}.updateStrategy.type", strategy or "",
                                       ("RollingUpdate", "OnDelete")))
    causes.extend(_non_negative(spec, "replicas", path))
    causes.extend(_non_negative(spec, "minReadySeconds", path))
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


def validate_daemon_set(obj: Obj) -> list[Cause]:
    spec, path = obj.get("spec") or {}, "spec"
    causes = _selector(spec, path, "daemonset")
    causes.extend(_replica_set_template(spec, path))
    causes.extend(_non_negative(spec, "minReadySeconds", path))
    strategy = (spec.get("updateStrategy") or {}).get("type")
    if strategy not in ("RollingUpdate", "OnDelete"):
        causes.append(fe.not_supported(f"{path}.updateStrategy.type", strategy or "",
                                       ("RollingUpdate", "OnDelete")))
    return causes


def generate_job_selector(obj: Obj) -> None:
    """The Job strategy's ``generateSelector``: unless ``manualSelector``, label the
    template with the job's uid and name and select on the uid (needs the uid set)."""
    spec = obj.get("spec") or {}
    meta = obj.get("metadata") or {}
    if spec.get("manualSelector") or not meta.get("uid"):
        return
    uid, name = str(meta["uid"]), str(meta.get("name") or "")
    template_meta = ((spec.setdefault("template", {})).setdefault("metadata", {}))
    template_labels = template_meta.get("labels") or {}
    template_meta["labels"] = template_labels
    for key, value in (("batch.kubernetes.io/controller-uid", uid),
                       ("batch.kubernetes.io/job-name", name),
                       ("controller-uid", uid), ("job-name", name)):
        template_labels.setdefault(key, value)
    if spec.get("selector") is None:
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}


def validate_job(obj: Obj) -> list[Cause]:
    spec, path = obj.get("spec") or {}, "spec"
    causes: list[Cause] = []
    for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
                "ttlSecondsAfterFinished"):
        causes.extend(_non_negative(spec, key, path))
    if spec.get("selector") is None:
        causes.append(fe.required(f"{path}.selector"))
    else:
        causes.extend(labels.validate_label_selector(spec["selector"], f"{path}.selector"))
    template = spec.get("template")
    causes.extend(_template_matches(spec, path))
    if isinstance(template, dict):
        causes.extend(validate_pod_template(template, f"{path}.template"))
        policy = (template.get("spec") or {}).get("restartPolicy")
        if policy not in ("OnFailure", "Never"):
            causes.append(fe.not_supported(f"{path}.template.spec.restartPolicy", policy or "",
                                           ("OnFailure", "Never")))
    mode = spec.get("completionMode")
    if mode not in ("NonIndexed", "Indexed"):
        causes.append(fe.not_supported(f"{path}.completionMode", mode or "",
                                       ("NonIndexed", "Indexed")))
    elif mode == "Indexed" and spec.get("completions") is None:
        causes.append(fe.required(f"{path}.completions",
                                  "when completion mode is Indexed"))
    return causes


def validate_cron_job(obj: Obj) -> list[Cause]:
    spec, path = obj.get("spec") or {}, "spec"
    causes: list[Cause] = []
    if not spec.get("schedule"):
        causes.append(fe.required(f"{path}.schedule"))
    policy = spec.get("concurrencyPolicy")
    if policy not in ("Allow", "Forbid", "Replace"):
        causes.append(fe.not_supported(f"{path}.concurrencyPolicy", policy or "",
                                       ("Allow", "Forbid", "Replace")))
    for key in ("startingDeadlineSeconds", "successfulJobsHistoryLimit",
                "failedJobsHistoryLimit"):
        causes.extend(_non_negative(spec, key, path))
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    template = job_spec.get("template")
    jpath = f"{path}.jobTemplate.spec"
    if isinstance(template, dict):
        causes.extend(validate_pod_template(template, f"{jpath}.template"))
        restart = (template.get("spec") or {}).get("restartPolicy")
        if restart not in ("OnFailure", "Never"):
            causes.append(fe.not_supported(f"{jpath}.template.spec.restartPolicy", restart or "",
                                           ("OnFailure", "Never")))
    else:
        causes.append(fe.required(f"{jpath}.template"))
    return causes


def _immutable(new: Any, old: Any, path: str, shown: Any) -> list[Cause]:
    return [] if new == old else [fe.invalid(path, shown, "field is immutable")]


def validate_selector_update(new: Obj, old: Obj) -> list[Cause]:
    """apps/v1 controllers: ``spec.selector`` never changes."""
    new_sel = (new.get("spec") or {}).get("selector")
    old_sel = (old.get("spec") or {}).get("selector")
    return _immutable(new_sel, old_sel, "spec.selector", go_label_selector(new_sel))


_STS_UPDATABLE = ("replicas", "ordinals", "template", "updateStrategy",
                  "persistentVolumeClaimRetentionPolicy", "minReadySeconds")


def validate_stateful_set_update(new: Obj, old: Obj) -> list[Cause]:
    new_spec = {k: v for k, v in (new.get("spec") or {}).items() if k not in _STS_UPDATABLE}
    old_spec = {k: v for k, v in (old.get("spec") or {}).items() if k not in _STS_UPDATABLE}
    if new_spec != old_spec:
        return [fe.forbidden("spec", "updates to statefulset spec for fields other than "
                             "'replicas', 'ordinals', 'template', 'updateStrategy', "
                             "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' "
                             "are forbidden")]
    return []


def validate_job_update(new: Obj, old: Obj) -> list[Cause]:
    """Jobs: selector, completions (unless scaling an Indexed job) and the pod template
    (unless the job is suspended) are immutable."""
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    causes = _immutable(ns.get("selector"), os_.get("selector"), "spec.selector",
                        go_label_selector(ns.get("selector")))
    if ns.get("completionMode") != "Indexed" or ns.get("completions") != ns.get("parallelism"):
        causes.extend(_immutable(ns.get("completions"), os_.get("completions"),
                                 "spec.completions", ns.get("completions")))
    causes.extend(_immutable(ns.get("completionMode"), os_.get("completionMode"),
                             "spec.completionMode", ns.get("completionMode") or ""))
    if not os_.get("suspend"):
        causes.extend(_immutable(ns.get("template"), os_.get("template"), "spec.template",
                                 fe.GoValue("core.PodTemplateSpec{...}")))
    return causes

