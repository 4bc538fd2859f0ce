"""Metric families updated per event: plain numbers, rendered at each scrape.

A reconcile of the simplest operator updates about twenty series (the workqueue's adds,
depth and two durations, the reconcile's count and time, the busy workers, two requests'
counts and latencies). prometheus_client's own metrics take a lock and check the call on
every update, and a histogram scans its bounds one by one, taking a lock for its sum and
another for its bucket: a few per cent of such an operator's CPU (issue 12, fourteenth
pass). The runtime's updates all happen on its event loop's thread, so these families keep
each series as plain Python numbers and build what prometheus_client's ``Counter``,
``Gauge`` and ``Histogram`` would expose (names, help, labels, ``le`` bounds, ``_created``
series) only when the registry is scraped.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from typing import Generic, TypeVar

from setpoint.machinery.packageinit import defer_init

# the metric classes without the package's exposition servers (machinery/packageinit.py)
defer_init("prometheus_client")

import prometheus_client.metrics  # noqa: E402
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric  # noqa: E402
from prometheus_client.registry import CollectorRegistry  # noqa: E402
from prometheus_client.utils import INF, floatToGoString  # noqa: E402


class CounterSeries:
    """One labelled counter (``inc`` as prometheus_client's)."""

    __slots__ = ("created", "value")

    def __init__(self) -> None:
        self.value = 0.0
        self.created = time.time()

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError("Counters can only be incremented by non-negative amounts.")
        self.value += amount

    def get(self) -> float:
        return self.value


class GaugeSeries:
    """One labelled gauge."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount

    def dec(self, amount: float = 1.0) -> None:
        self.value -= amount

    def set(self, value: float) -> None:
        self.value = float(value)

    def get(self) -> float:
        return self.value


class HistogramSeries:
    """One labelled histogram: per bucket the observations at most its bound (the first
    bound not below the amount, as prometheus_client's scan finds it), and their sum."""

    __slots__ = ("bounds", "counts", "created", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0.0] * len(bounds)
        self.sum = 0.0
        self.created = time.time()

    def observe(self, amount: float) -> None:
        self.sum += amount
        if amount == amount:  # NaN falls in no bucket, as in prometheus_client
            self.counts[bisect_left(self.bounds, amount)] += 1.0


S = TypeVar("S", CounterSeries, GaugeSeries, HistogramSeries)


class _Family(Generic[S]):
    """A metric's labelled series, registered as a collector of ``registry``."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str],
                 registry: CollectorRegistry) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._series: dict[tuple[str, ...], S] = {}
        registry.register(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def labels(self, *values: str) -> S:
        """The series of these label values (made at the first ask)."""
        series = self._series.get(values)
        if series is None:
            if len(values) != len(self.labelnames):
                raise ValueError(f"{self.name}: labels {self.labelnames} take "
                                 f"{len(self.labelnames)} values, not {len(values)}")
            key = tuple(str(v) for v in values)
            series = self._series.get(key)
            if series is None:
                series = self._series[key] = self._new()
        return series

    def _new(self) -> S:
        raise NotImplementedError

    def _labels(self, values: tuple[str, ...]) -> dict[str, str]:
        return dict(zip(self.labelnames, values, strict=True))

    def describe(self) -> list[Metric]:
        """What the registry checks for names already taken (no samples)."""
        return [self._metric()]

    def collect(self) -> Iterator[Metric]:
        metric = self._metric()
        for values, series in list(self._series.items()):
            self._add(metric, values, series)
        yield metric

    def _metric(self) -> Metric:
        raise NotImplementedError

    def _add(self, metric: Metric, values: tuple[str, ...], series: S) -> None:
        raise NotImplementedError


def _created() -> bool:
    """Whether ``_created`` series are exposed (prometheus_client's switch, which
    ``PROMETHEUS_DISABLE_CREATED_SERIES`` and ``disable_created_metrics()`` turn off)."""
    return bool(getattr(prometheus_client.metrics, "_use_created", True))


class Counter(_Family[CounterSeries]):
    def _new(self) -> CounterSeries:
        return CounterSeries()

    def _metric(self) -> Metric:
        return CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def _add(self, metric: Metric, values: tuple[str, ...], series: CounterSeries) -> None:
        assert isinstance(metric, CounterMetricFamily)
        metric.add_metric(values, series.value,
                          created=series.created if _created() else None)


class Gauge(_Family[GaugeSeries]):
    def _new(self) -> GaugeSeries:
        return GaugeSeries()

    def _metric(self) -> Metric:
        return GaugeMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def _add(self, metric: Metric, values: tuple[str, ...], series: GaugeSeries) -> None:
        assert isinstance(metric, GaugeMetricFamily)
        metric.add_metric(values, series.value)


class Histogram(_Family[HistogramSeries]):
    def __init__(self, name: str, documentation: str, labelnames: Sequence[str],
                 registry: CollectorRegistry, buckets: Sequence[float]) -> None:
        bounds = [float(b) for b in buckets]
        if bounds != sorted(bounds):
            raise ValueError("Buckets not in sorted order")
        if not bounds or bounds[-1] != INF:
            bounds.append(INF)
        self.bounds = tuple(bounds)
        self._le = tuple(str(floatToGoString(b)) for b in bounds)  # type: ignore[no-untyped-call]
        super().__init__(name, documentation, labelnames, registry)

    def _new(self) -> HistogramSeries:
        return HistogramSeries(self.bounds)

    def _metric(self) -> Metric:
        return Metric(self.name, self.documentation, "histogram")

    def _add(self, metric: Metric, values: tuple[str, ...], series: HistogramSeries) -> None:
        labels = self._labels(values)
        total = 0.0
        for le, count in zip(self._le, series.counts, strict=True):
            total += count
            metric.add_sample(f"{self.name}_bucket", {**labels, "le": le}, total)
        metric.add_sample(f"{self.name}_count", labels, total)
        metric.add_sample(f"{self.name}_sum", labels, series.sum)
        if _created():
            metric.add_sample(f"{self.name}_created", labels, series.created)
