"""The pod that takes an EtcdBackup's snapshot into a PersistentVolumeClaim (``spec.volume``).

The operator cannot write into a claim; a pod that mounts it can, as the etcd-io
operator's and CronJob-based backups do. ``Pod <backup>-snapshot``, owned by the EtcdBackup
(garbage-collected with it, deleted by the operator once read), runs to completion
(``restartPolicy: Never``; a failed pod is deleted and a new one tried, as a Job's
controller does):

1. init container ``snapshot``, the cluster's etcd image: ``etcdctl snapshot save`` from
   one member (a snapshot is of one member: etcdctl refuses several endpoints), dialled by
   its stable DNS name so a TLS member's certificate names it, with the client certificate
   Secret ``<cluster>-client-tls`` mounted. etcdctl writes ``<file>.part`` (0600) and
   renames it into place only once the stream ended whole (etcd
   ``client/v3/snapshot/v3_snapshot.go``, ``SaveWithVersion``; 3.4:
   ``clientv3/snapshot/v3_snapshot.go``, ``Save``), so a reader never sees half a snapshot;
2. init container ``status``, the same image: ``snapshot status -w json`` (``etcdutl`` from
   3.5, ``etcdctl`` on 3.4) prints the revision the snapshot holds, read from the file;
3. container ``checksum``, a busybox image (etcd's 3.5 images have no shell): the file's
   sha256 and size.

The results are read from the containers' logs (``pods/log``), as a Job's results are;
``terminationMessagePath`` is not used because the process runtime does not write
termination messages.
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass
from typing import Any

from operators.etcd import objects, tlssecrets
from operators.etcd.resource import GROUP, EtcdBackup, EtcdCluster
from setpoint.resources.models.core_v1 import (
    Container,
    EnvVar,
    PersistentVolumeClaimVolumeSource,
    Pod,
    PodSpec,
    SecretVolumeSource,
    Volume,
    VolumeMount,
)
from setpoint.resources.models.meta_v1 import ObjectMeta

CHECKSUM_IMAGE = "docker.io/library/busybox:1.36"
"""Computes the sha256 and size (any image with ``sh``, ``sha256sum`` and ``wc``)."""
BACKUP = f"{GROUP}/backup"
"""On a snapshot pod: the EtcdBackup's name."""
MEMBER = f"{GROUP}/member"
"""On a snapshot pod: the member it takes the snapshot from."""
ETCD_VERSION = f"{GROUP}/etcd-version"
"""On a snapshot pod: that member's etcd version when the pod was made."""
STATUS_CONTAINER = "status"
CHECKSUM_CONTAINER = "checksum"
_CHECKSUM = re.compile(r"sha256=([0-9a-f]{64}) size=\s*([0-9]+)")


def pod_name(backup: EtcdBackup) -> str:
    return f"{str(backup.metadata.name)[:244]}-snapshot"


def _mount(backup: EtcdBackup, read_only: bool = False) -> VolumeMount:
    """The claim's subPath at the backup mount: the kubelet creates a missing subPath
    directory (etcdctl would not create the file's parent)."""
    assert backup.spec.volume is not None
    return VolumeMount(name="backup", mount_path=objects.BACKUP_MOUNT,
                       sub_path=backup.spec.volume.sub_path, read_only=read_only or None)


def _file_in_pod(backup: EtcdBackup) -> str:
    return f"{objects.BACKUP_MOUNT}/{backup.metadata.namespace}-{backup.metadata.name}.db"


def file_in_claim(backup: EtcdBackup) -> str:
    """Where the snapshot is, relative to the claim's root."""
    assert backup.spec.volume is not None
    name = f"{backup.metadata.namespace}-{backup.metadata.name}.db"
    return posixpath.join(backup.spec.volume.sub_path or "", name)


def member_endpoint(cluster: EtcdCluster, member: str) -> str:
    """The member's client URL by its DNS name under the headless Service: stable, and a
    name its certificate carries (an address is not)."""
    return (f"{objects.scheme(cluster)}://{member}.{objects.peer_service_name(cluster)}."
            f"{cluster.metadata.namespace}.svc.{objects.CLUSTER_DOMAIN}:{objects.CLIENT_PORT}")


def snapshot_pod(backup: EtcdBackup, cluster: EtcdCluster, member: str,
                 member_version: str | None) -> Pod:
    """The pod writing ``backup``'s snapshot of ``member`` into its claim."""
    assert backup.spec.volume is not None
    path = _file_in_pod(backup)
    version = cluster.spec.version
    tls = tlssecrets.enabled(cluster)
    client_flags = [f"--cacert={tlssecrets.TLS_MOUNT}/ca.crt",
                    f"--cert={tlssecrets.TLS_MOUNT}/tls.crt",
                    f"--key={tlssecrets.TLS_MOUNT}/tls.key"] if tls else []
    writable, read_only = _mount(backup), _mount(backup, read_only=True)
    tls_mounts = [VolumeMount(name="tls", mount_path=tlssecrets.TLS_MOUNT, read_only=True)] \
        if tls else []
    status_tool = "etcdctl" if version.startswith("3.4.") else "etcdutl"
    volumes = [Volume(name="backup", persistent_volume_claim=PersistentVolumeClaimVolumeSource(
        claim_name=backup.spec.volume.claim_name))]
    if tls:
        volumes.append(Volume(name="tls", secret=SecretVolumeSource(
            secret_name=tlssecrets.client_secret_name(cluster),
            default_mode=tlssecrets.SECRET_MODE)))
    annotations = {MEMBER: member}
    if member_version:
        annotations[ETCD_VERSION] = member_version
    return Pod(
        metadata=ObjectMeta(
            name=pod_name(backup), annotations=annotations,
            labels={BACKUP: str(backup.metadata.name), objects.MANAGED_BY: objects.OPERATOR}),
        spec=PodSpec(
            restart_policy="Never", node_selector=cluster.spec.node_selector,
            tolerations=cluster.spec.tolerations, volumes=volumes,
            init_containers=[
                Container(name="snapshot", image=objects.image(cluster), command=["etcdctl"],
                          args=[f"--endpoints={member_endpoint(cluster, member)}",
                                *client_flags, "snapshot", "save", path],
                          env=[EnvVar(name="ETCDCTL_API", value="3")],
                          volume_mounts=[writable, *tls_mounts]),
                Container(name=STATUS_CONTAINER, image=objects.image(cluster),
                          command=[status_tool], args=["snapshot", "status", path,
                                                       "--write-out=json"],
                          env=[EnvVar(name="ETCDCTL_API", value="3")],
                          volume_mounts=[read_only])],
            containers=[Container(
                name=CHECKSUM_CONTAINER, image=CHECKSUM_IMAGE, command=["sh", "-c"],
                # $$( is the kubelet's escape of $( (pkg/kubelet/container/helpers.go,
                # ExpandContainerCommandAndArgs): a shell substitution, not a variable
                args=['set -e; sum=$$(sha256sum < "$1"); size=$$(wc -c < "$1"); '
                      'echo "sha256=${sum%% *} size=$size"', "checksum", path],
                volume_mounts=[read_only])]))


@dataclass(frozen=True)
class Taken:
    """What a finished snapshot pod reports."""

    revision: int
    size: int
    sha256: str


def _status_answer(log: Any) -> dict[str, Any]:
    """``snapshot status -w json``'s object: the log is that JSON alone (decoded already by
    the client) or has other lines (a deprecation notice) around it."""
    if isinstance(log, dict):
        return log
    for line in reversed(str(log or "").splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                found = json.loads(line)
            except ValueError:
                continue
            if isinstance(found, dict):
                return found
    raise ValueError(f"no JSON object in the {STATUS_CONTAINER} container's log: {log!r}")


def parse_results(status_log: Any, checksum_log: Any) -> Taken:
    """The revision, size and sha256 from the two containers' logs (ValueError when they do
    not say them)."""
    answer = _status_answer(status_log)
    revision = answer.get("revision")
    if not isinstance(revision, int):
        raise ValueError(f"snapshot status gave no revision: {answer!r}")
    found = _CHECKSUM.search(str(checksum_log or ""))
    if found is None:
        raise ValueError(f"no checksum in the {CHECKSUM_CONTAINER} container's log: "
                         f"{checksum_log!r}")
    return Taken(revision=revision, size=int(found.group(2)), sha256=found.group(1))


def prune_pod_name(backup: EtcdBackup) -> str:
    return f"{str(backup.metadata.name)[:247]}-prune"


def prune_pod(backup: EtcdBackup) -> Pod:
    """The pod deleting a pruned backup's file (and a partial one a killed ``etcdctl``
    left) from its claim."""
    assert backup.spec.volume is not None
    path = _file_in_pod(backup)
    return Pod(
        metadata=ObjectMeta(
            name=prune_pod_name(backup),
            labels={BACKUP: str(backup.metadata.name), objects.MANAGED_BY: objects.OPERATOR}),
        spec=PodSpec(restart_policy="Never", volumes=[Volume(
            name="backup", persistent_volume_claim=PersistentVolumeClaimVolumeSource(
                claim_name=backup.spec.volume.claim_name))],
            containers=[Container(
                name="prune", image=CHECKSUM_IMAGE, command=["rm", "-f", path, f"{path}.part"],
                volume_mounts=[_mount(backup)])]))
