"""The PodSecurity plugin's metrics (k8s.io/pod-security-admission metrics/metrics.go
``PrometheusRecorder``), which kube-apiserver serves on ``/metrics``: how each mode judged
(``pod_security_evaluations_total``: the audit mode is seen here, Setpoint keeping no audit
log), what was exempt (``pod_security_exemptions_total``) and what could not be evaluated
(``pod_security_errors_total``). The series kube-apiserver creates when it registers them
(``populateCache``) are there at 0 from the start. ``prometheus_client`` is loaded at the
first scrape (``setpoint.cluster.endpoints.metrics``), not by the server's start."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING

from setpoint.cluster.admission.podsecurity.levels import PRIVILEGED, LevelVersion, Version
from setpoint.cluster.registry.admissionpoints import Attributes

if TYPE_CHECKING:
    from prometheus_client.core import Metric

DECISION_ALLOW = "allow"
DECISION_DENY = "deny"
MODE_ENFORCE = "enforce"
MODE_AUDIT = "audit"
MODE_WARN = "warn"
# api.GetAPIVersion(): the release the plugin is built for; a newer pinned version is "future"
API_VERSION = Version(1, 32)

# (client_golang prints label names sorted)
_EVALUATION_LABELS = ("decision", "mode", "policy_level", "policy_version",
                      "request_operation", "resource", "subresource")
_EXEMPTION_LABELS = ("request_operation", "resource", "subresource")
_ERROR_LABELS = ("fatal", "request_operation", "resource", "subresource")


def _resource(attributes: Attributes) -> str:
    """``resourceLabel``: pod, namespace, or any other kind (with a pod template) a
    controller."""
    rt = attributes.rt
    if rt.group == "" and rt.resource == "pods":
        return "pod"
    if rt.group == "" and rt.resource == "namespaces":
        return "namespace"
    return "controller"


def _operation(attributes: Attributes) -> str:
    return attributes.operation.lower()


class PodSecurityMetrics:
    """The recorder the plugin reports to, and the collector ``/metrics`` reads."""

    def __init__(self) -> None:
        self._evaluations: Counter[tuple[str, ...]] = Counter()
        self._exemptions: Counter[tuple[str, ...]] = Counter()
        self._errors: Counter[tuple[str, ...]] = Counter()
        for operation in ("create", "update"):  # populateCache
            self._evaluations[(DECISION_ALLOW, MODE_ENFORCE, PRIVILEGED, "latest", operation,
                               "pod", "")] += 0
            for resource in ("pod", "controller"):
                self._exemptions[(operation, resource, "")] += 0

    def __repr__(self) -> str:
        return "PodSecurityMetrics()"

    def record_evaluation(self, decision: str, policy: LevelVersion, mode: str,
                          attributes: Attributes) -> None:
        """``RecordEvaluation``: privileged and latest are "latest", a version newer than
        the plugin's "future"."""
        if policy.version.latest or policy.level == PRIVILEGED:
            version = "latest"
        elif not API_VERSION.older(policy.version):
            version = str(policy.version)
        else:
            version = "future"
        self._evaluations[(decision, mode, policy.level, version, _operation(attributes),
                           _resource(attributes), attributes.subresource)] += 1

    def record_exemption(self, attributes: Attributes) -> None:
        self._exemptions[(_operation(attributes), _resource(attributes),
                          attributes.subresource)] += 1

    def record_error(self, fatal: bool, attributes: Attributes) -> None:
        self._errors[("true" if fatal else "false", _operation(attributes),
                      _resource(attributes), attributes.subresource)] += 1

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import CounterMetricFamily

        for name, help_text, labels, counts in (
                ("pod_security_evaluations",
                 "[ALPHA] Number of policy evaluations that occurred, not counting ignored or "
                 "exempt requests.", _EVALUATION_LABELS, self._evaluations),
                ("pod_security_exemptions",
                 "[ALPHA] Number of exempt requests, not counting ignored or out of scope "
                 "requests.", _EXEMPTION_LABELS, self._exemptions),
                ("pod_security_errors",
                 "[ALPHA] Number of errors preventing normal evaluation. Non-fatal errors may "
                 "result in the latest restricted profile being used for evaluation.",
                 _ERROR_LABELS, self._errors)):
            if not counts:  # (a vector without series prints nothing in client_golang)
                continue
            family = CounterMetricFamily(name, help_text, labels=labels)
            for key, count in sorted(counts.items()):
                family.add_metric(key, count)
            yield family
