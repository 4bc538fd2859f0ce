"""Backups into a PersistentVolumeClaim (``spec.volume``): the API server's rules on the
destination, the snapshot pod the operator plans, what it reads back from the pod's logs,
and the founding member's restore from a claim. The end to end run on real etcd is
``test_real.py::test_a_new_cluster_restored_from_a_backup_has_the_keys_of_the_snapshot``.

The CRD rules are CEL ``x-kubernetes-validations`` on the object that holds both fields,
as the apiextensions apiserver evaluates them (k8s.io/apiextensions-apiserver/pkg/apiserver/
schema/cel/validation.go): a rule on a field that is absent would not run."""

from __future__ import annotations

from typing import Any

import pytest

from operators.etcd import objects, snapshotpod
from operators.etcd.resource import (
    BackupVolume,
    EtcdBackup,
    EtcdBackupSpec,
    EtcdCluster,
    EtcdClusterSpec,
    TLSSpec,
)
from setpoint.client import Client, InvalidError
from setpoint.resources.models.meta_v1 import ObjectMeta
from setpoint.testing import SetpointCluster, present

API = "etcd.setpoint.dev/v1alpha1"
ONE_OF = "exactly one of directory"


def _backup(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "EtcdBackup", "metadata": {"name": "b"},
            "spec": {"clusterName": "e", **spec}}


@pytest.mark.parametrize("spec", [
    {},                                                          # neither
    {"directory": "/backups", "volume": {"claimName": "c"}},     # both
])
async def test_a_backup_needs_exactly_one_destination(
        setpoint_cluster: SetpointCluster, k8s: Client, spec: dict[str, Any]) -> None:
    await setpoint_cluster.install(EtcdBackup)
    with pytest.raises(InvalidError) as refused:
        await k8s.create(_backup(spec))
    assert ONE_OF in str(refused.value)
    assert "spec" in str(refused.value)


async def test_a_backup_policy_needs_exactly_one_destination_and_accepts_a_claim(
        setpoint_cluster: SetpointCluster, k8s: Client) -> None:
    await setpoint_cluster.install(EtcdCluster)
    with pytest.raises(InvalidError) as refused:
        await k8s.create({"apiVersion": API, "kind": "EtcdCluster", "metadata": {"name": "e"},
                          "spec": {"backup": {"schedule": "@daily"}}})
    assert ONE_OF in str(refused.value) and "spec.backup" in str(refused.value)
    await k8s.create({"apiVersion": API, "kind": "EtcdCluster", "metadata": {"name": "e"},
                      "spec": {"backup": {"schedule": "@daily",
                                          "volume": {"claimName": "backups"}}}})


@pytest.mark.parametrize("sub_path", ["../other", "a/../../b", "/abs", "a//b"])
async def test_a_sub_path_must_stay_inside_the_claim(
        setpoint_cluster: SetpointCluster, k8s: Client, sub_path: str) -> None:
    """As a volume mount's subPath (kubernetes pkg/apis/core/validation/validation.go,
    ``validateLocalDescendingPath``): relative, no ``..`` element."""
    await setpoint_cluster.install(EtcdBackup)
    with pytest.raises(InvalidError) as refused:
        await k8s.create(_backup({"volume": {"claimName": "c", "subPath": sub_path}}))
    assert "spec.volume.subPath" in str(refused.value)
    created = await k8s.create(_backup({"volume": {"claimName": "c", "subPath": "etcd/a..b"}}))
    assert created["spec"]["volume"]["subPath"] == "etcd/a..b"


def _cluster(tls: bool = False, version: str = "3.5.1") -> EtcdCluster:
    return EtcdCluster(metadata=ObjectMeta(name="e", namespace="ns", uid="u"),
                       spec=EtcdClusterSpec(size=3, version=version,
                                            tls=TLSSpec(enabled=True) if tls else None,
                                            node_selector={"pool": "etcd"}))


def _claim_backup() -> EtcdBackup:
    return EtcdBackup(metadata=ObjectMeta(name="b", namespace="ns"), spec=EtcdBackupSpec(
        cluster_name="e", volume=BackupVolume(claim_name="backups", sub_path="etcd")))


def test_the_snapshot_pod_saves_from_one_member_by_name_into_the_claim() -> None:
    """etcdctl takes the snapshot of one member (it refuses several endpoints), dialled by
    the DNS name its certificate carries, with the client certificate of a TLS cluster;
    the claim's subPath is mounted (created by the kubelet), read-only where only read;
    the pod runs once and never carries the member pods' labels (it is no member)."""
    pod = snapshotpod.snapshot_pod(_claim_backup(), _cluster(tls=True), "e-1", "3.5.1")
    spec = present(pod.spec)
    assert spec.restart_policy == "Never" and spec.node_selector == {"pool": "etcd"}
    assert not set(objects.selector(_cluster())) & set(pod.metadata.labels or {})
    save, status = present(spec.init_containers)
    assert save.image == "quay.io/coreos/etcd:v3.5.1" and save.command == ["etcdctl"]
    assert present(save.args) == [
        "--endpoints=https://e-1.e.ns.svc.cluster.local:2379",
        "--cacert=/etc/etcd/tls/ca.crt", "--cert=/etc/etcd/tls/tls.crt",
        "--key=/etc/etcd/tls/tls.key", "snapshot", "save", "/var/lib/etcd-backup/ns-b.db"]
    assert status.command == ["etcdutl"]
    assert present(status.args)[:3] == ["snapshot", "status", "/var/lib/etcd-backup/ns-b.db"]
    mounts = {(c.name, m.name): m for c in (save, status, *(spec.containers or ()))
              for m in c.volume_mounts or ()}
    assert {m.sub_path for k, m in mounts.items() if k[1] == "backup"} == {"etcd"}
    assert not mounts["snapshot", "backup"].read_only
    assert mounts["status", "backup"].read_only and mounts["checksum", "backup"].read_only
    volumes = {v.name: v for v in spec.volumes or ()}
    assert present(volumes["backup"].persistent_volume_claim).claim_name == "backups"
    assert present(volumes["tls"].secret).secret_name == "e-client-tls"
    assert snapshotpod.file_in_claim(_claim_backup()) == "etcd/ns-b.db"
    # 3.4 has no etcdutl; plain http has no certificates
    plain = snapshotpod.snapshot_pod(_claim_backup(), _cluster(version="3.4.23"), "e-0", None)
    save34, status34 = present(present(plain.spec).init_containers)
    assert status34.command == ["etcdctl"]
    assert present(save34.args)[0] == "--endpoints=http://e-0.e.ns.svc.cluster.local:2379"
    assert not any(a.startswith("--cert") for a in present(save34.args))


def test_the_results_are_read_from_the_logs() -> None:
    digest = "ab" * 32
    taken = snapshotpod.parse_results({"hash": 1, "revision": 42, "totalKey": 9,
                                       "totalSize": 20480}, f"sha256={digest} size=20512\n")
    assert (taken.revision, taken.size, taken.sha256) == (42, 20512, digest)
    noisy = 'Deprecated: use `etcdutl snapshot status` instead.\n{"revision":7}\n'
    assert snapshotpod.parse_results(noisy, f"sha256={digest} size= 1").revision == 7
    with pytest.raises(ValueError, match="no JSON object"):
        snapshotpod.parse_results("Error: snapshot file has wrong CRC", "")
    with pytest.raises(ValueError, match="no checksum"):
        snapshotpod.parse_results({"revision": 1}, "sha256sum: not found")


def test_a_founding_member_restores_from_a_claim_mounted_read_only() -> None:
    cluster = _cluster()
    pod = objects.member_pod(cluster, 0, {"e-0": objects.peer_url(cluster, 0)}, "new",
                             restore_from=objects.SnapshotFile("etcd/ns-b.db", "backups"))
    spec = present(pod.spec)
    (restore,) = present(spec.init_containers)
    assert present(restore.args)[:3] == ["snapshot", "restore",
                                         "/var/lib/etcd-backup/etcd/ns-b.db"]
    volume = {v.name: v for v in spec.volumes or ()}["backup"]
    claim = present(volume.persistent_volume_claim)
    assert (claim.claim_name, claim.read_only, volume.host_path) == ("backups", True, None)
