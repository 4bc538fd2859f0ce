"""The runtime's per-event metrics (``setpoint/runtime/series.py``, plain numbers rendered
per scrape) expose exactly what prometheus_client's ``Counter``, ``Gauge`` and
``Histogram`` expose for the same updates: names, help, types, labels, ``le`` bounds, the
cumulative buckets, counts, sums and ``_created`` series (its times aside), so a dashboard
written for controller-runtime's metrics reads them the same."""

from __future__ import annotations

import math
import re

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from setpoint.runtime import _metric_series as series


def _text(registry: CollectorRegistry) -> str:
    # a _created series holds the time its series was made: equal only in its labels
    return re.sub(r"(_created(?:\{[^}]*\})?) \S+", r"\1 <time>",
                  generate_latest(registry).decode())


def test_the_series_expose_what_prometheus_clients_metrics_expose() -> None:
    theirs, ours = CollectorRegistry(), CollectorRegistry()
    buckets = (0.005, 0.01, 0.025, 1, 60)
    counters = (Counter("x_reconcile_total", "Total reconciles", ["controller", "result"],
                        registry=theirs),
                series.Counter("x_reconcile_total", "Total reconciles",
                                ["controller", "result"], ours))
    gauges = (Gauge("x_depth", "Current depth", ["name"], registry=theirs),
              series.Gauge("x_depth", "Current depth", ["name"], ours))
    histograms = (Histogram("x_time_seconds", "Time per reconcile", ["controller"],
                            buckets=buckets, registry=theirs),
                  series.Histogram("x_time_seconds", "Time per reconcile", ["controller"],
                                    ours, buckets=buckets))
    for counter in counters:
        counter.labels("w", "success").inc()
        counter.labels("w", "success").inc(2.5)
        counter.labels("w", "error").inc()
    for gauge in gauges:
        gauge.labels("q").inc()
        gauge.labels("q").inc()
        gauge.labels("q").dec()
        gauge.labels("r").set(7)
    for histogram in histograms:
        # on a bound, between bounds, past the last, and NaN (in the sum, no bucket)
        for amount in (0.001, 0.005, 0.0051, 0.5, 100.0, math.nan, 0.01):
            histogram.labels("w").observe(amount)
        histogram.labels("v").observe(0.02)
    assert _text(ours) == _text(theirs)
    assert ours.get_sample_value("x_reconcile_total",
                                 {"controller": "w", "result": "success"}) == 3.5


def test_label_values_are_strings_and_counters_only_grow() -> None:
    """A label value given as another type is its text (one series for 200 and "200"), as
    prometheus_client's ``labels`` makes it; a counter refuses a negative increment."""
    registry = CollectorRegistry()
    requests = series.Counter("x_requests_total", "Requests", ["code"], registry)
    requests.labels(200).inc()  # type: ignore[arg-type]
    requests.labels("200").inc()
    assert registry.get_sample_value("x_requests_total", {"code": "200"}) == 2.0
    with pytest.raises(ValueError, match="non-negative"):
        requests.labels("200").inc(-1)
    with pytest.raises(ValueError, match="take 1 values"):
        requests.labels("200", "GET")


def test_a_name_taken_twice_in_one_registry_is_refused() -> None:
    registry = CollectorRegistry()
    series.Counter("x_requests_total", "Requests", ["code"], registry)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        Counter("x_requests_total", "Requests", ["code"], registry=registry)
