"""The PodSecurity admission plugin (k8s.io/pod-security-admission admission/admission.go, as
kube-apiserver's plugin/pkg/admission/security/podsecurity/admission.go runs it: validating,
CREATE and UPDATE of namespaces, pods and the kinds holding a pod template).

kube-apiserver's default configuration unless its admission configuration file gives one
(``configuration.py``): every mode privileged at latest, no exemptions. Exempt users and
namespaces are not checked, nor pods of exempt runtime classes. A
namespace's ``pod-security.kubernetes.io/{enforce,audit,warn}[-version]`` labels choose its
policy. A pod that violates the enforce level is refused (403); one that violates the warn
level is admitted with a ``would violate PodSecurity`` warning. A pod template is never
refused, only warned about. The audit level only annotates the audit event (with
``--audit-policy-file``, the audit log's: ``pod-security.kubernetes.io/audit-violations``,
beside ``enforce-policy`` and ``exempt``). A namespace whose labels are invalid is refused
(422); raising its enforce level warns about the existing pods that would violate it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import orjson

from setpoint.cluster.admission.podsecurity.configuration import PodSecurityConfiguration
from setpoint.cluster.admission.podsecurity.levels import (
    AUDIT_LEVEL_LABEL,
    AUDIT_VERSION_LABEL,
    ENFORCE_LEVEL_LABEL,
    ENFORCE_VERSION_LABEL,
    PRIVILEGED,
    WARN_LEVEL_LABEL,
    WARN_VERSION_LABEL,
    LevelVersion,
    Policy,
    compare_levels,
    policy_to_evaluate,
)
from setpoint.cluster.admission.podsecurity.metrics import (
    DECISION_ALLOW,
    DECISION_DENY,
    MODE_AUDIT,
    MODE_ENFORCE,
    MODE_WARN,
    PodSecurityMetrics,
)
from setpoint.cluster.audit.context import add_annotation
from setpoint.cluster.registry.admissionpoints import Attributes
from setpoint.machinery import errors

if TYPE_CHECKING:
    from setpoint.cluster.admission.podsecurity.policy import AggregateCheckResult, Obj
    from setpoint.cluster.storage import Store

NAMESPACES_KEY = "/namespaces"
PODS_KEY = "/pods"
# admission.go: how many existing pods, and for how long, a new enforce level is checked
NAMESPACE_MAX_PODS_TO_CHECK = 3000
NAMESPACE_POD_CHECK_TIMEOUT_S = 1.0
POLICY_CACHE_LIMIT = 4096
# the pods subresources admission.go passes over
# pod-security-admission api/constants.go: the audit annotations' prefix and keys
AUDIT_ANNOTATION_PREFIX = "pod-security.kubernetes.io/"
EXEMPT_ANNOTATION = "exempt"
AUDIT_VIOLATIONS_ANNOTATION = "audit-violations"
ENFORCE_POLICY_ANNOTATION = "enforce-policy"
IGNORED_POD_SUBRESOURCES = frozenset({"exec", "attach", "binding", "eviction", "log",
                                      "portforward", "proxy", "status"})
# DefaultPodSpecExtractor: (group, resource) -> the path of the pod template in the object
POD_TEMPLATE_PATHS: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "replicationcontrollers"): ("spec", "template"),
    ("", "podtemplates"): ("template",),
    ("apps", "replicasets"): ("spec", "template"),
    ("apps", "deployments"): ("spec", "template"),
    ("apps", "statefulsets"): ("spec", "template"),
    ("apps", "daemonsets"): ("spec", "template"),
    ("batch", "jobs"): ("spec", "template"),
    ("batch", "cronjobs"): ("spec", "jobTemplate", "spec", "template"),
}

def _checked(level: LevelVersion, meta: Obj, spec: Obj) -> AggregateCheckResult:
    """The checks of ``level`` over a pod, aggregated. The checks (and the evaluator that
    orders them) load with the first pod evaluated, not at the server's start: a start
    creates namespaces, whose labels need the levels alone (docs/benchmarks.md, Start-up)."""
    from setpoint.cluster.admission.podsecurity.evaluator import evaluate_pod
    from setpoint.cluster.admission.podsecurity.policy import aggregate

    return aggregate(evaluate_pod(level, meta, spec))


def _labels(obj: Obj) -> dict[str, Any]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _dig(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


class PodSecurity:
    """The validating plugin; reads namespaces and the pods of a namespace."""

    def __init__(self, store: Store,
                 configuration: PodSecurityConfiguration | None = None) -> None:
        self._reader = store
        self._config = configuration or PodSecurityConfiguration()
        self.metrics = PodSecurityMetrics()
        # namespace name -> (its stored JSON, its policy and label errors): every pod write
        # looks its namespace's policy up; the same bytes object is the same version (as
        # NamespaceLifecycle caches it)
        self._policies: dict[str, tuple[bytes, tuple[Policy, list[Any]]]] = {}

    def __repr__(self) -> str:
        return "PodSecurity()"

    def __call__(self, attributes: Attributes) -> None:
        rt = attributes.rt
        key = (rt.group, rt.resource)
        if key == ("", "namespaces"):
            self._validate_namespace(attributes)
        elif key == ("", "pods"):
            self._validate_pod(attributes)
        elif key in POD_TEMPLATE_PATHS:
            self._validate_pod_controller(attributes, POD_TEMPLATE_PATHS[key])

    # -- namespaces --------------------------------------------------------------------
    def _validate_namespace(self, attributes: Attributes) -> None:
        if attributes.subresource:
            return
        namespace = attributes.obj
        name = str((namespace.get("metadata") or {}).get("name") or "")
        new_policy, new_errs = policy_to_evaluate(_labels(namespace), self._config.defaults)
        if attributes.operation == "CREATE":
            if new_errs:
                raise errors.invalid("Namespace", name, new_errs)
            if name in self._config.exempt_namespaces:
                self._warn(attributes, self._exempt_namespace_warning(
                    name, new_policy, _labels(namespace)))
            return
        if attributes.operation != "UPDATE" or attributes.old is None:
            return
        old_policy, old_errs = policy_to_evaluate(_labels(attributes.old),
                                                  self._config.defaults)
        if new_errs and (not old_errs or new_errs != old_errs):
            raise errors.invalid("Namespace", name, new_errs)
        new, old = new_policy.enforce, old_policy.enforce
        if new == old or new.level == PRIVILEGED:
            return
        if new.version == old.version and compare_levels(new.level, old.level) < 1:
            return
        if name in self._config.exempt_namespaces:
            self._warn(attributes, self._exempt_namespace_warning(
                name, new_policy, _labels(namespace)))
            return
        for warning in self.evaluate_pods_in_namespace(name, new):
            self._warn(attributes, warning)

    def evaluate_pods_in_namespace(self, namespace: str, enforce: LevelVersion) -> list[str]:
        """``EvaluatePodsInNamespace``: one warning per distinct violation among the existing
        pods (one pod per controller first), naming the first pod by name and how many
        others share it; at most 3000 pods or one second of checking."""
        deadline = time.monotonic() + NAMESPACE_POD_CHECK_TIMEOUT_S
        pods = self._prioritize_pods(self._reader.list(PODS_KEY, namespace))
        total = len(pods)
        pods = pods[:NAMESPACE_MAX_PODS_TO_CHECK]
        checked = len(pods)
        pod_warnings: list[str] = []
        counts: dict[str, list[Any]] = {}  # warning -> [first pod name, count]
        for i, pod in enumerate(pods):
            name = str(pod["metadata"].get("name") or "")
            result = _checked(enforce, pod["metadata"], pod.get("spec") or {})
            if not result.allowed:
                warning = result.forbidden_reason()
                seen = counts.get(warning)
                if seen is None:
                    counts[warning] = seen = [name, 0]
                    pod_warnings.append(warning)
                elif name < seen[0]:
                    seen[0] = name
                seen[1] += 1
            if time.monotonic() > deadline:
                checked = i + 1
                break
        warnings: list[str] = []
        if checked < total:
            warnings.append(f"new PodSecurity enforce level only checked against the first "
                            f"{checked} of {total} existing pods")
        if pod_warnings:
            warnings.append(f'existing pods in namespace "{namespace}" violate the new '
                            f'PodSecurity enforce level "{enforce}"')
        decorated = []
        for warning in pod_warnings:
            first, count = counts[warning]
            if count == 1:
                decorated.append(f"{first}: {warning}")
            elif count == 2:
                decorated.append(f"{first} (and 1 other pod): {warning}")
            else:
                decorated.append(f"{first} (and {count - 1} other pods): {warning}")
        return warnings + sorted(decorated)

    def _prioritize_pods(self, pods: list[Obj]) -> list[Obj]:
        """``prioritizePods``: pods of exempt runtime classes left out, one pod of each
        controller first, the controllers' other pods after all of those."""
        first: list[Obj] = []
        duplicates: list[Obj] = []
        controllers: set[str] = set()
        for pod in pods:
            if self._exempt_runtime_class(pod.get("spec") or {}):
                continue
            owner = next((ref for ref in pod["metadata"].get("ownerReferences") or ()
                          if ref.get("controller") is True), None)
            if owner is None:
                first.append(pod)
            elif owner.get("uid") in controllers:
                duplicates.append(pod)
            else:
                first.append(pod)
                controllers.add(owner.get("uid"))
        return first + duplicates

    def _exempt_namespace_warning(self, name: str, policy: Policy,
                                  labels: dict[str, Any]) -> str:
        if policy.fully_privileged() or policy.equivalent(self._config.defaults):
            return ""
        parts = []
        for mode, lv, level_label, version_label in (
                ("enforce", policy.enforce, ENFORCE_LEVEL_LABEL, ENFORCE_VERSION_LABEL),
                ("audit", policy.audit, AUDIT_LEVEL_LABEL, AUDIT_VERSION_LABEL),
                ("warn", policy.warn, WARN_LEVEL_LABEL, WARN_VERSION_LABEL)):
            if lv.level != PRIVILEGED and (level_label in labels or version_label in labels):
                parts.append(f"{mode}={lv}")
        return (f'namespace "{name}" is exempt from Pod Security, and the policy '
                f"({', '.join(parts)}) will be ignored")

    # -- pods and pod templates ----------------------------------------------------------
    def _exempt(self, attributes: Attributes, namespace: str) -> bool:
        """An exempt namespace, then an exempt user; the audit event is told which
        (response.go ``sharedAllowedBy{Namespace,User}ExemptionResponse``)."""
        user = str((attributes.user or {}).get("username") or "")
        if namespace in self._config.exempt_namespaces:
            _annotate(EXEMPT_ANNOTATION, "namespace")
            return True
        if user and user in self._config.exempt_usernames:
            _annotate(EXEMPT_ANNOTATION, "user")
            return True
        return False

    def _exempt_runtime_class(self, spec: Obj) -> bool:
        runtime_class = spec.get("runtimeClassName")
        return bool(runtime_class) and runtime_class in self._config.exempt_runtime_classes

    def _namespace_policy(self, namespace: str) -> tuple[Policy, list[Any]] | None:
        raw = self._reader.get_raw(NAMESPACES_KEY, "", namespace)
        if raw is None:
            self._policies.pop(namespace, None)
            return None
        hit = self._policies.get(namespace)
        if hit is not None and hit[0] is raw:
            return hit[1]
        found = policy_to_evaluate(_labels(orjson.loads(raw)), self._config.defaults)
        if len(self._policies) >= POLICY_CACHE_LIMIT:
            self._policies.clear()
        self._policies[namespace] = (raw, found)
        return found

    def _validate_pod(self, attributes: Attributes) -> None:
        if attributes.subresource in IGNORED_POD_SUBRESOURCES:
            return
        pod = attributes.obj
        namespace = str(pod["metadata"].get("namespace") or "")
        if self._exempt(attributes, namespace):
            self.metrics.record_exemption(attributes)
            return
        found = self._namespace_policy(namespace)
        if found is None:
            self.metrics.record_error(True, attributes)
            refusal = errors.internal(f'failed to lookup namespace "{namespace}"')
            # errorResponse: the Status message and the lookup's error
            _annotate("error", f'{refusal.message}: namespaces "{namespace}" not found')
            raise refusal
        policy, policy_errs = found
        if not policy_errs and policy.fully_privileged():
            self.metrics.record_evaluation(DECISION_ALLOW, policy.enforce, MODE_ENFORCE,
                                           attributes)
            _annotate(ENFORCE_POLICY_ANNOTATION, f"{PRIVILEGED}:latest")
            return
        if attributes.operation == "UPDATE" and attributes.old is not None \
                and not significant_pod_update(pod.get("spec") or {},
                                               attributes.old.get("spec") or {}):
            return
        self._evaluate(attributes, policy, policy_errs, pod["metadata"],
                       pod.get("spec") or {}, enforce=True)

    def _validate_pod_controller(self, attributes: Attributes, path: tuple[str, ...]) -> None:
        if attributes.subresource:
            return
        namespace = str(attributes.obj["metadata"].get("namespace") or "")
        if self._exempt(attributes, namespace):
            self.metrics.record_exemption(attributes)
            return
        found = self._namespace_policy(namespace)
        if found is None:  # (admitted: the lookup error only annotates the audit event)
            self.metrics.record_error(True, attributes)
            _annotate("error", f'failed to lookup namespace "{namespace}": namespaces '
                               f'"{namespace}" not found')
            return
        policy, policy_errs = found
        if not policy_errs and policy.warn.level == PRIVILEGED \
                and policy.audit.level == PRIVILEGED:
            return
        template = _dig(attributes.obj, path)
        if not isinstance(template, dict):
            return
        self._evaluate(attributes, policy, policy_errs, template.get("metadata") or {},
                       template.get("spec") or {}, enforce=False)

    def _evaluate(self, attributes: Attributes, policy: Policy, policy_errs: list[Any],
                  meta: Obj, spec: Obj, *, enforce: bool) -> None:
        """``EvaluatePod``: refused by the enforce level (pods only); judged by the audit
        level (only counted: no audit log); else warned by the warn level; the result of one
        level and version reused for another mode."""
        if self._exempt_runtime_class(spec):
            self.metrics.record_exemption(attributes)
            _annotate(EXEMPT_ANNOTATION, "runtimeClass")
            return
        if policy_errs:  # (evaluated at the levels the invalid labels fall back to)
            self.metrics.record_error(False, attributes)
            texts = [f"{c.field}: {c.message}" for c in policy_errs]
            _annotate("error", "Failed to parse policy: " + (
                texts[0] if len(texts) == 1 else f"[{', '.join(texts)}]"))
        results: dict[LevelVersion, AggregateCheckResult] = {}

        def judged(lv: LevelVersion) -> AggregateCheckResult:
            if lv not in results:
                results[lv] = _checked(lv, meta, spec)
            return results[lv]

        refusal: errors.StatusError | None = None
        if enforce:
            _annotate(ENFORCE_POLICY_ANNOTATION, str(policy.enforce))
            result = judged(policy.enforce)
            self.metrics.record_evaluation(DECISION_ALLOW if result.allowed else DECISION_DENY,
                                           policy.enforce, MODE_ENFORCE, attributes)
            if not result.allowed:
                name = str(attributes.obj["metadata"].get("name") or "")
                refusal = errors.forbidden(
                    attributes.rt.resource,
                    name, f'violates PodSecurity "{policy.enforce}": '
                    f"{result.forbidden_detail()}", attributes.rt.group)
        audited = judged(policy.audit)
        if not audited.allowed:
            _annotate(AUDIT_VIOLATIONS_ANNOTATION, f'would violate PodSecurity "{policy.audit}": '
                                                   f"{audited.forbidden_detail()}")
            self.metrics.record_evaluation(DECISION_DENY, policy.audit, MODE_AUDIT, attributes)
        if refusal is not None:  # (no warnings on a request refused anyway)
            raise refusal
        result = judged(policy.warn)
        if not result.allowed:
            self._warn(attributes, f'would violate PodSecurity "{policy.warn}": '
                                   f"{result.forbidden_detail()}")
            self.metrics.record_evaluation(DECISION_DENY, policy.warn, MODE_WARN, attributes)

    @staticmethod
    def _warn(attributes: Attributes, warning: str) -> None:
        if warning and attributes.warnings is not None:
            attributes.warnings.append(warning)


def _annotate(key: str, value: str) -> None:
    """The plugin's audit annotations, each key under ``pod-security.kubernetes.io/``
    (plugin/pkg/admission/security/podsecurity/admission.go ``Validate``)."""
    add_annotation(AUDIT_ANNOTATION_PREFIX + key, value)


def significant_pod_update(spec: Obj, old: Obj) -> bool:
    """``isSignificantPodUpdate``: an update is checked only when it adds or removes
    containers, changes a container's image, or adds (or changes the image of) an ephemeral
    container."""
    for key in ("containers", "initContainers"):
        new_items, old_items = spec.get(key) or [], old.get(key) or []
        if len(new_items) != len(old_items):
            return True
        if any(c.get("image") != o.get("image")
               for c, o in zip(new_items, old_items, strict=True)):
            return True
    old_ephemeral = {c.get("name"): c for c in old.get("ephemeralContainers") or ()}
    for container in spec.get("ephemeralContainers") or ():
        before = old_ephemeral.get(container.get("name"))
        if before is None or container.get("image") != before.get("image"):
            return True
    return False
