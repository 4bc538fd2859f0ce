"""The audit metrics kube-apiserver serves on ``/metrics`` (k8s.io/apiserver pkg/audit
metrics.go): events handed to the backend (``apiserver_audit_event_total``), the policy's
level for each request (``apiserver_audit_level_total``), events a backend failed to store
(``apiserver_audit_error_total`` by plugin) and requests refused because a blocking-strict
backend could not store their first stage (``apiserver_audit_requests_rejected_total``).

They are process-wide, as Go registers them in ``legacyregistry`` at init: the backends
that report errors are built (from the command line's flags) before the server that
serves the metrics, and every server of a process would count into Go's one registry.
``prometheus_client`` is loaded at the first scrape, not by the server's start."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prometheus_client.core import Metric

log = logging.getLogger("setpoint.cluster.audit")


class AuditMetrics:
    """The four counters, and the collector ``/metrics`` reads them through."""

    __slots__ = ("errors", "events", "levels", "rejected")

    def __init__(self) -> None:
        self.events = 0
        self.rejected = 0
        self.levels: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()

    def __repr__(self) -> str:
        return f"AuditMetrics(events={self.events}, rejected={self.rejected})"

    def observe_event(self) -> None:
        """``ObserveEvent``: one stage's event handed to the backend."""
        self.events += 1

    def observe_policy_level(self, level: str) -> None:
        """``ObservePolicyLevel``: once per request the policy was asked about, ``None``
        included."""
        self.levels[level] += 1

    def reject_request(self) -> None:
        """``ApiserverAuditDroppedCounter``: a request not served because its
        RequestReceived event could not be stored."""
        self.rejected += 1

    def plugin_error(self, plugin: str, error: object, events: list[dict[str, Any]]) -> None:
        """``HandlePluginError``: counted by the events it cost; the error and each
        event logged, one line each."""
        from setpoint.cluster.audit.event import legacy_line

        self.errors[plugin] += len(events)
        log.error("audit_plugin_error plugin=%s events=%d error=%s", plugin, len(events),
                  error)
        for event in events:
            log.error("audit_event_lost %s", legacy_line(event).rstrip("\n"))

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import CounterMetricFamily

        # (component-base prefixes the help with the stability level; prometheus_client
        # adds the ``_total`` suffix to a counter's family name)
        yield CounterMetricFamily(
            "apiserver_audit_event",
            "[ALPHA] Counter of audit events generated and sent to the audit backend.",
            value=self.events)
        errors = CounterMetricFamily(
            "apiserver_audit_error",
            "[ALPHA] Counter of audit events that failed to be audited properly. Plugin "
            "identifies the plugin affected by the error.", labels=("plugin",))
        for plugin, count in sorted(self.errors.items()):
            errors.add_metric((plugin,), count)
        yield errors
        levels = CounterMetricFamily(
            "apiserver_audit_level",
            "[ALPHA] Counter of policy levels for audit events (1 per request).",
            labels=("level",))
        for level, count in sorted(self.levels.items()):
            levels.add_metric((level,), count)
        yield levels
        yield CounterMetricFamily(
            "apiserver_audit_requests_rejected",
            "[ALPHA] Counter of apiserver requests rejected due to an error in audit "
            "logging backend.", value=self.rejected)


AUDIT_METRICS = AuditMetrics()
plugin_error = AUDIT_METRICS.plugin_error
