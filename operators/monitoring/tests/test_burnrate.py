"""The generated burn-rate rules under ``promtool test rules``: synthetic probe series for
a healthy route, a fast burn (a total outage) that must page through the 1h/5m window
first, and a slow burn (2 % of probes failing) that must only warn. The windows, factors
and ``for`` durations are the SRE workbook's (table 5-8 of "Alerting on SLOs").

promtool is part of the ``prometheus`` package (``apt-get install -y prometheus``); the
test is skipped where it is missing, and CI installs it (``make process-runtime-deps``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from operators.monitoring.burnrate import ALERT, budget, min_probes, rule_group
from operators.monitoring.tests.promtool import needs_promtool, promtool_test_rules

pytestmark = needs_promtool
LABELS = {"job": "shop-blackbox-exporter", "namespace": "web"}
URL = "http://shop.web.svc:80/"
PER_HOUR = 120  # probes every 30 s


def series(values: list[int]) -> str:
    return " ".join(str(v) for v in values)


def alert(severity: str, long: str, short: str, factor: str) -> dict[str, Any]:
    return {"exp_labels": {**LABELS, "severity": severity, "long_window": long,
                           "short_window": short, "routemonitor": "shop"},
            "exp_annotations": {
                "summary": f"{URL} is burning its error budget {factor}x too fast",
                "description": f"Over the last {long} and {short}, more than {factor} x "
                               f"0.005 of the probes of {URL} failed (availability "
                               "objective 99.5%)."}}


def run_promtool(tmp_path: Path, values: list[int], checks: list[tuple[str, list[Any]]],
                 evaluation_interval: str = "1m") -> None:
    """Probes every 30 s; evaluated every minute by default, as often as a page must be
    decided (the "for" of 2m)."""
    promtool_test_rules(
        tmp_path, [rule_group("shop", LABELS, "99.5", URL)],
        [('probe_success{job="shop-blackbox-exporter",namespace="web"}', series(values))],
        [(at, ALERT, expected) for at, expected in checks],
        interval="30s", evaluation_interval=evaluation_interval)


def test_the_windows_need_half_their_probes() -> None:
    assert [min_probes(w) for w in ("5m", "1h", "6h", "3d")] == [5, 60, 360, 4320]
    assert budget("99.5") == "0.005" and budget("99.95") == "0.0005"


def test_a_healthy_route_never_alerts(tmp_path: Path) -> None:
    """Every probe succeeds for 80 hours: no window ever has an error ratio above 0, so no
    alert is ever even pending, and evaluating every 15 minutes (not every minute: 320
    evaluations of 3-day windows, not 4800) sees every state there is."""
    run_promtool(tmp_path, [1] * (PER_HOUR * 80),
                 [("1h", []), ("7h", []), ("1d6h", []), ("3d6h", [])],
                 evaluation_interval="15m")


def test_a_fast_burn_pages_through_the_1h_5m_window(tmp_path: Path) -> None:
    """Healthy for 6 hours, then every probe fails: within minutes the 1h/5m alert
    pages; the 6h/30m one follows once 6 % of the 6 h window failed."""
    values = [1] * (PER_HOUR * 6) + [0] * (PER_HOUR * 2)
    run_promtool(tmp_path, values, [
        ("6h", []),
        ("6h15m", [alert("critical", "1h", "5m", "14.4")]),
        ("7h", [alert("critical", "1h", "5m", "14.4"), alert("critical", "6h", "30m", "6")]),
    ])


def test_a_new_monitor_pages_only_once_half_the_window_is_probed(tmp_path: Path) -> None:
    """Failing from its first probe: 20 minutes are 40 probes, fewer than half the 120 of
    an hour, so nothing is said yet; from 30 minutes on, the hour holds 60 and it pages."""
    run_promtool(tmp_path, [0] * (PER_HOUR * 1), [
        ("20m", []),
        ("40m", [alert("critical", "1h", "5m", "14.4")]),
    ])


def test_a_slow_burn_only_warns(tmp_path: Path) -> None:
    """One probe in 50 fails (2 %: 4x the budget of a 99.5 % objective) for two days:
    the 1d/2h and 3d/6h warnings fire, never a page (a single failed probe makes a 5 m
    window burn fast, but never the hour around it)."""
    values = [0 if i % 50 == 49 else 1 for i in range(PER_HOUR * 48)]
    # 47h57m: three minutes after a failed probe (sample 5749), which is still in every
    # short window, the 5m one included
    warnings = [alert("warning", "1d", "2h", "3"), alert("warning", "3d", "6h", "1")]
    # evaluated every 3 minutes (960 evaluations of 3-day windows, not 2880): every time
    # checked is an evaluation, the "for" durations (1h, 3h) are whole numbers of them,
    # and a page needs the hour window above 7.2 %, which 2 % never reaches at any step
    run_promtool(tmp_path, values, [("1h30m", []), ("47h57m", warnings), ("2d", warnings)],
                 evaluation_interval="3m")
