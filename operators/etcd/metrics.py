"""The etcd operator's own Prometheus metrics, served on the manager's ``metrics`` port
(``setpoint.runtime.metrics_registry``, controller-runtime's ``metrics.Registry``), each
labelled ``namespace`` and ``cluster``:

- ``etcd_operator_cluster_size``: members in the etcd membership (``status.size``);
- ``etcd_operator_cluster_desired_size``: ``spec.size``;
- ``etcd_operator_cluster_members_healthy``: voting members that answer
  (``status.readyMembers``);
- ``etcd_operator_cluster_available``: 1 while a quorum answers (condition Available);
- ``etcd_operator_cluster_leader_changes_seen_total``: leader changes the operator saw
  between two of its readings (each member's own ``etcd_server_leader_changes_seen_total``
  counts every election it took part in);
- ``etcd_operator_backups_taken_total``, ``etcd_operator_backups_failed_total``: snapshots
  written whole, and snapshot attempts that failed (every member's stream cut, or the file
  not writable);
- ``etcd_operator_last_backup_timestamp_seconds``: when the newest Complete EtcdBackup of
  the cluster completed.

The gauges are read from the manager's cache when Prometheus scrapes (as kube-state-metrics
reads objects), so a deleted cluster's series go with it; the counters are kept in this
process, as every Prometheus counter is (a restarted operator starts them at 0, which
``rate`` and ``increase`` allow for).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import datetime

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from operators.etcd.resource import EtcdBackup, EtcdCluster
from setpoint.runtime import Cache, NotWatchedError, metrics_registry

PREFIX = "etcd_operator"
LABELS = ["namespace", "cluster"]
Key = tuple[str, str]


def key_of(cluster: EtcdCluster) -> Key:
    return str(cluster.metadata.namespace), str(cluster.metadata.name)


Instance = tuple[str, str, str]
"""A cluster's namespace, name and uid."""


def instance_of(cluster: EtcdCluster) -> Instance:
    return (*key_of(cluster), str(cluster.metadata.uid))


class EtcdOperatorCollector(Collector):
    """What :mod:`operators.etcd.controller` and :mod:`operators.etcd.backup` report, and
    the clusters in the cache of the manager that reconciled last."""

    def __init__(self) -> None:
        self.cache: Cache | None = None
        # by cluster *instance*: a cluster made again under a deleted one's name starts its
        # counters at zero (a counter reset, as when a new process starts), rather than
        # inheriting what happened to its namesake
        self.leader_changes: Counter[Instance] = Counter()
        self.backups_taken: Counter[Instance] = Counter()
        self.backups_failed: Counter[Instance] = Counter()

    def __repr__(self) -> str:
        return "EtcdOperatorCollector()"

    def observe(self, cache: Cache, cluster: EtcdCluster, previous_leader: str | None) -> None:
        """A reconcile of ``cluster`` saw its leader, and ``previous_leader`` before."""
        self.cache = cache
        key = instance_of(cluster)
        leader = cluster.status.leader
        self.leader_changes[key] += 0  # the series exists from the first reading on
        if previous_leader is not None and leader is not None and leader != previous_leader:
            self.leader_changes[key] += 1

    def backup_taken(self, cluster: EtcdCluster) -> None:
        self.backups_taken[instance_of(cluster)] += 1
        self.backups_failed[instance_of(cluster)] += 0

    def backup_failed(self, cluster: EtcdCluster) -> None:
        self.backups_failed[instance_of(cluster)] += 1
        self.backups_taken[instance_of(cluster)] += 0

    def _listed(self) -> tuple[list[EtcdCluster], list[EtcdBackup]]:
        if self.cache is None:
            return [], []
        try:
            return self.cache.list(EtcdCluster), self.cache.list(EtcdBackup)
        except NotWatchedError:  # a manager without the etcd controllers
            return [], []

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        clusters, backups = self._listed()
        gauges = {name: GaugeMetricFamily(f"{PREFIX}_{name}", text, labels=LABELS)
                  for name, text in (
                      ("cluster_size", "Members in the etcd membership."),
                      ("cluster_desired_size", "The EtcdCluster's spec.size."),
                      ("cluster_members_healthy", "Voting members that answer."),
                      ("cluster_available", "1 while a quorum of the members answers."))}
        live: set[Key] = set()
        live_instances: set[Instance] = set()
        for cluster in clusters:
            key = key_of(cluster)
            live.add(key)
            live_instances.add(instance_of(cluster))
            status = cluster.status
            for name, value in (("cluster_size", status.size),
                                ("cluster_desired_size", cluster.spec.size),
                                ("cluster_members_healthy", status.ready_members),
                                ("cluster_available", int(status.is_true("Available")))):
                gauges[name].add_metric(list(key), value)
        yield from gauges.values()
        last = GaugeMetricFamily(f"{PREFIX}_last_backup_timestamp_seconds",
                                 "When the newest Complete EtcdBackup of the cluster "
                                 "completed (Unix time).", labels=LABELS)
        newest: dict[Key, float] = {}
        for backup in backups:
            done = backup.status.get_condition("Complete")
            if backup.status.phase != "Complete" or done is None:
                continue
            key = (str(backup.metadata.namespace), backup.spec.cluster_name)
            when = _timestamp(done.last_transition_time)
            if key in live and when is not None:
                newest[key] = max(newest.get(key, when), when)
        for key, when in sorted(newest.items()):
            last.add_metric(list(key), when)
        yield last
        for name, text, counts in (
                ("cluster_leader_changes_seen", "Leader changes the operator saw.",
                 self.leader_changes),
                ("backups_taken", "Snapshots written whole.", self.backups_taken),
                ("backups_failed", "Snapshot attempts that failed.", self.backups_failed)):
            family = CounterMetricFamily(f"{PREFIX}_{name}", text, labels=LABELS)
            for instance, count in sorted(counts.items()):
                if instance in live_instances:
                    family.add_metric(list(instance[:2]), count)
            yield family


def _timestamp(value: object) -> float | None:
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, str):
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    return None


collector = EtcdOperatorCollector()
metrics_registry.register(collector)
