"""The operator's own metrics (``operators/etcd/metrics.py``), read from its collector."""

from __future__ import annotations

from typing import Any, cast

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from operators.etcd.metrics import EtcdOperatorCollector
from operators.etcd.resource import EtcdCluster
from setpoint.runtime import Cache


class ListedCache:
    """The part of the manager's cache the collector reads: the clusters it lists."""

    def __init__(self, clusters: list[EtcdCluster]) -> None:
        self.clusters = clusters

    def list(self, kind: type[Any]) -> list[Any]:
        return list(self.clusters) if kind is EtcdCluster else []


def cluster(uid: str) -> EtcdCluster:
    return EtcdCluster.model_validate({
        "metadata": {"name": "e", "namespace": "default", "uid": uid},
        "spec": {"size": 1, "version": "3.5.1"}})


def samples(collector: EtcdOperatorCollector) -> dict[str, float]:
    registry = CollectorRegistry()
    registry.register(collector)
    text = generate_latest(registry).decode()
    return {sample.name: sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples if sample.labels.get("cluster") == "e"}


def test_a_cluster_made_again_under_a_deleted_ones_name_starts_its_counters_at_zero() -> None:
    """Counters belong to the cluster instance (its uid), not to its name: a new "e" must
    not report the backups and leader changes of a deleted "e"."""
    collector = EtcdOperatorCollector()
    old, new = cluster("uid-old"), cluster("uid-new")
    collector.backup_taken(old)
    collector.backup_failed(old)
    collector.observe(cast(Cache, ListedCache([old])), old, previous_leader=None)
    assert samples(collector)["etcd_operator_backups_failed_total"] == 1

    collector.observe(cast(Cache, ListedCache([new])), new, previous_leader=None)
    seen = samples(collector)
    assert seen["etcd_operator_cluster_leader_changes_seen_total"] == 0
    assert "etcd_operator_backups_failed_total" not in seen
    assert "etcd_operator_backups_taken_total" not in seen
    collector.backup_taken(new)
    assert samples(collector)["etcd_operator_backups_taken_total"] == 1


