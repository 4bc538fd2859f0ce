"""The SRE workbook's multiwindow, multi-burn-rate alerts for an availability SLO
(https://sre.google/workbook/alerting-on-slos/, "Multiwindow, Multi-Burn-Rate Alerts"),
over the probe results of a blackbox exporter.

For each window the error ratio is ``1 - success/count`` of ``probe_success`` (summed over
the exporter's series, so a restarted exporter pod does not split the count); an alert
fires when both its long and its short window burn the error budget faster than its
factor (``error ratio > factor x (1 - objective)``), and only when each window holds at
least half of the probes expected at the probe interval, the RouteMonitor's ``interval``
(a monitor that just started, or an exporter that was down, says nothing rather than
something false):

==========  =====  ======  ======  =====
severity    long   short   factor  for
==========  =====  ======  ======  =====
critical    1h     5m      14.4    2m
critical    6h     30m     6       15m
warning     1d     2h      3       1h
warning     3d     6h      1       3h
==========  =====  ======  ======  =====
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

ALERT = "ErrorBudgetBurn"
PROBE_INTERVAL_SECONDS = 30


@dataclass(frozen=True)
class BurnWindow:
    severity: str
    long: str
    short: str
    factor: str
    for_: str


WINDOWS = (
    BurnWindow("critical", "1h", "5m", "14.4", "2m"),
    BurnWindow("critical", "6h", "30m", "6", "15m"),
    BurnWindow("warning", "1d", "2h", "3", "1h"),
    BurnWindow("warning", "3d", "6h", "1", "3h"),
)
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def seconds(window: str) -> int:
    return int(window[:-1]) * _SECONDS[window[-1]]


def min_probes(window: str, interval_seconds: int = PROBE_INTERVAL_SECONDS) -> int:
    """Half of the probes a window holds at the probe interval."""
    return seconds(window) // interval_seconds // 2


def selector(labels: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def budget(objective_percent: str) -> str:
    """The error budget ``1 - objective`` as an exact decimal (``99.5`` -> ``0.005``)."""
    return str((1 - Decimal(objective_percent) / 100).normalize())


def window_expr(series: str, window: str, factor: str, error_budget: str,
                interval_seconds: int) -> str:
    by = "sum by (namespace, job)"
    count = f"{by} (count_over_time(probe_success{series}[{window}]))"
    ratio = f"1 - {by} (sum_over_time(probe_success{series}[{window}])) / {count}"
    return (f"(({ratio}) > ({factor} * {error_budget})"
            f" and {count} >= {min_probes(window, interval_seconds)})")


def alert_expr(series: str, w: BurnWindow, error_budget: str, interval_seconds: int) -> str:
    return (f"{window_expr(series, w.long, w.factor, error_budget, interval_seconds)}"
            f"\nand\n"
            f"{window_expr(series, w.short, w.factor, error_budget, interval_seconds)}")


def rule_group(name: str, series_labels: dict[str, str], objective_percent: str,
               url: str, interval_seconds: int = PROBE_INTERVAL_SECONDS) -> dict[str, Any]:
    """The PrometheusRule group (prometheus-operator field names) for one probed URL,
    probed every ``interval_seconds``."""
    series = selector(series_labels)
    error_budget = budget(objective_percent)
    rules = []
    for w in WINDOWS:
        rules.append({
            "alert": ALERT, "expr": alert_expr(series, w, error_budget, interval_seconds),
            "for": w.for_,
            "labels": {"severity": w.severity, "long_window": w.long,
                       "short_window": w.short, "routemonitor": name},
            "annotations": {
                "summary": f"{url} is burning its error budget {w.factor}x too fast",
                "description": f"Over the last {w.long} and {w.short}, more than "
                               f"{w.factor} x {error_budget} of the probes of {url} failed "
                               f"(availability objective {objective_percent}%)."}})
    return {"name": f"{name}-slo-burn-rate", "rules": rules}
