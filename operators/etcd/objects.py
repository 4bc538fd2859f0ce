"""The objects an EtcdCluster owns, as functions of its spec and of the membership.

For an EtcdCluster ``e`` in namespace ``ns``, member ``e-<i>`` is:

- the ``PersistentVolumeClaim e-<i>``: its data directory, which outlives its pod; the
  annotation ``etcd.setpoint.dev/member-id`` names the etcd member whose data it holds, so
  a claim made anew (its data lost) is told apart from the member's own;
- the ``Pod e-<i>`` (hostname ``e-<i>``, subdomain ``e``): etcd, its peer URL the stable
  DNS name ``http://e-<i>.e.ns.svc.cluster.local:2380``, so a recreated pod (with a new
  address) keeps its identity.

Two Services: ``e`` (headless, publishing not-ready addresses: the peers' DNS names exist
before the members are ready, as etcd needs to join) and ``e-client`` (port 2379, and
``metrics`` 2381 for each member's ``/metrics``).

No StatefulSet: the operator adds and removes members one at a time through etcd's own
membership API, and a StatefulSet's controller would start and stop pods on its own
schedule. The namespace and the owner reference are added by ``ctx.apply``.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from operators.etcd.resource import GROUP, INSTANCE_LABEL, EtcdCluster
from setpoint.machinery.quantity import canonical
from setpoint.resources import canonical_resources
from setpoint.resources.models.core_v1 import (
    Container,
    ContainerPort,
    HostPathVolumeSource,
    HTTPGetAction,
    PersistentVolumeClaim,
    PersistentVolumeClaimSpec,
    PersistentVolumeClaimVolumeSource,
    Pod,
    PodSpec,
    Probe,
    Service,
    ServicePort,
    ServiceSpec,
    Volume,
    VolumeMount,
    VolumeResourceRequirements,
)
from setpoint.resources.models.meta_v1 import ObjectMeta

INSTANCE = INSTANCE_LABEL
NAME = "app.kubernetes.io/name"
MANAGED_BY = "app.kubernetes.io/managed-by"
OPERATOR = "etcd-operator"
MEMBER = f"{GROUP}/member"
MEMBER_ID = f"{GROUP}/member-id"
"""On a claim: the hex id of the member whose data it holds (``BOOTSTRAP`` before the
founding member's id is known)."""
BOOTSTRAP = "bootstrap"
FORCE_NEW_CLUSTER = f"{GROUP}/force-new-cluster"
"""On a claim: its member's next pod starts with ``--force-new-cluster`` (quorum-loss
recovery from this member's data)."""
VERSION = f"{GROUP}/version"
SERVICE = f"{GROUP}/service"
"""On the two Services: ``peer`` or ``client`` (a ServiceMonitor selects the client one, so
each member is scraped once)."""
CLIENT_SCHEME = f"{GROUP}/client-scheme"
"""On a pod: ``https`` when its member serves clients over TLS."""

CLIENT_PORT = 2379
PEER_PORT = 2380
METRICS_PORT = 2381
"""The client Service's ``metrics`` port: each member's ``/metrics``, on its client port
(plain http), or on its plain-http ``--listen-metrics-urls`` port of the same number when
clients must present a certificate (``tlssecrets.py``)."""
CLUSTER_DOMAIN = "cluster.local"
DATA_MOUNT = "/var/lib/etcd"
DATA_DIR = f"{DATA_MOUNT}/data"
BACKUP_MOUNT = "/var/lib/etcd-backup"


@dataclass(frozen=True)
class SnapshotFile:
    """A Complete EtcdBackup's snapshot as a restoring member's pod reaches it: a file on
    the node (a backup into a directory, mounted by hostPath) or inside a claim."""

    path: str
    """Absolute on the node, or relative to the claim's root."""
    claim_name: str | None = None

    def __str__(self) -> str:
        return f"{self.path} in PersistentVolumeClaim {self.claim_name}" \
            if self.claim_name is not None else self.path


def member_name(cluster: EtcdCluster, ordinal: int) -> str:
    return f"{cluster.metadata.name}-{ordinal}"


def ordinal_of(name: str, cluster: EtcdCluster) -> int | None:
    """The ordinal in a member's name, or None for a name not of this cluster."""
    prefix, _, suffix = name.rpartition("-")
    if prefix != cluster.metadata.name or not suffix.isdigit():
        return None
    return int(suffix)


def peer_service_name(cluster: EtcdCluster) -> str:
    return str(cluster.metadata.name)


def client_service_name(cluster: EtcdCluster) -> str:
    return f"{cluster.metadata.name}-client"


def scheme(cluster: EtcdCluster) -> str:
    """``https`` for clients and peers of a TLS cluster (``tlssecrets.py``)."""
    return "https" if cluster.spec.tls is not None and cluster.spec.tls.enabled else "http"


def peer_url(cluster: EtcdCluster, ordinal: int) -> str:
    """The member's stable peer URL: its DNS name under the headless Service."""
    host = (f"{member_name(cluster, ordinal)}.{peer_service_name(cluster)}."
            f"{cluster.metadata.namespace}.svc.{CLUSTER_DOMAIN}")
    return f"{scheme(cluster)}://{host}:{PEER_PORT}"


def client_url(pod: Pod) -> str | None:
    """Where the operator reaches a member: its pod's address (known only once it runs)."""
    ip = pod.status.pod_ip if pod.status is not None else None
    used = (pod.metadata.annotations or {}).get(CLIENT_SCHEME, "http")
    return f"{used}://{ip}:{CLIENT_PORT}" if ip else None


def selector(cluster: EtcdCluster) -> dict[str, str]:
    return {NAME: "etcd", INSTANCE: str(cluster.metadata.name)}


def selector_string(cluster: EtcdCluster) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(selector(cluster).items()))


def labels(cluster: EtcdCluster, member: str | None = None) -> dict[str, str]:
    out = {**selector(cluster), MANAGED_BY: OPERATOR}
    if member is not None:
        out[MEMBER] = member
    return out


def image(cluster: EtcdCluster, version: str | None = None) -> str:
    return f"{cluster.spec.repository}:v{version or cluster.spec.version}"


def version_of_image(ref: str) -> str | None:
    """``quay.io/coreos/etcd:v3.5.1`` -> ``3.5.1``."""
    _, _, tag = ref.rpartition(":")
    return tag.lstrip("v") or None


def peer_service(cluster: EtcdCluster) -> Service:
    """Gives each member pod its DNS name (``<pod>.<service>``), ready or not: a joining
    member must be reachable by its peers before it can become ready."""
    return Service(
        metadata=ObjectMeta(name=peer_service_name(cluster),
                            labels={**labels(cluster), SERVICE: "peer"}),
        spec=ServiceSpec(cluster_ip="None", selector=selector(cluster),
                         publish_not_ready_addresses=True,
                         ports=[ServicePort(name="peer", port=PEER_PORT, protocol="TCP"),
                                ServicePort(name="client", port=CLIENT_PORT, protocol="TCP")]))


def client_service(cluster: EtcdCluster) -> Service:
    """What clients use: ``<name>-client:2379``, spread over the ready members; and
    ``metrics`` (2381), what a ServiceMonitor scrapes each member's ``/metrics`` on."""
    metrics = "metrics" if scheme(cluster) == "https" else "client"
    return Service(
        metadata=ObjectMeta(name=client_service_name(cluster),
                            labels={**labels(cluster), SERVICE: "client"}),
        spec=ServiceSpec(selector=selector(cluster),
                         ports=[ServicePort(name="client", port=CLIENT_PORT, protocol="TCP",
                                            target_port="client"),
                                ServicePort(name="metrics", port=METRICS_PORT, protocol="TCP",
                                            target_port=metrics)]))


def claim(cluster: EtcdCluster, ordinal: int, member_id: str) -> PersistentVolumeClaim:
    """A member's data volume, recording whose data it holds."""
    name = member_name(cluster, ordinal)
    return PersistentVolumeClaim(
        metadata=ObjectMeta(name=name, labels=labels(cluster, name),
                            annotations={MEMBER_ID: member_id}),
        spec=PersistentVolumeClaimSpec(
            access_modes=["ReadWriteOnce"],
            storage_class_name=cluster.spec.storage.storage_class_name,
            resources=VolumeResourceRequirements(
                requests={"storage": canonical(cluster.spec.storage.size)})))


def member_pod(cluster: EtcdCluster, ordinal: int, initial_cluster: dict[str, str],
               state: str, version: str | None = None, *,
               force_new_cluster: bool = False,
               restore_from: SnapshotFile | None = None) -> Pod:
    """The pod of member ``ordinal``. ``initial_cluster`` (name -> peer URL) and ``state``
    (``new`` for the founding member, ``existing`` for one joining) matter only on the
    member's first start: etcd ignores them once its data directory exists, so a pod made
    again for a member with data restarts that member as it was. ``force_new_cluster``
    makes the member drop every other member and lead alone on its data (etcd's
    disaster-recovery path when a quorum is lost for good). ``restore_from`` (a snapshot
    file, for the founding member of a restored cluster) adds an init container that
    restores it into the empty data directory as a one-member cluster of this member
    (etcd's disaster-recovery guide: ``snapshot restore`` with the member's name, peer URL,
    initial cluster and token); the snapshot's directory (hostPath) or claim is mounted
    read-only."""
    name = member_name(cluster, ordinal)
    token = f"{cluster.metadata.name}-{cluster.metadata.uid}"
    url = scheme(cluster)
    args = [
        f"--name={name}",
        f"--data-dir={DATA_DIR}",
        f"--listen-peer-urls={url}://0.0.0.0:{PEER_PORT}",
        f"--listen-client-urls={url}://0.0.0.0:{CLIENT_PORT}",
        f"--initial-advertise-peer-urls={peer_url(cluster, ordinal)}",
        f"--advertise-client-urls={url}://{name}.{peer_service_name(cluster)}."
        f"{cluster.metadata.namespace}.svc.{CLUSTER_DOMAIN}:{CLIENT_PORT}",
        "--initial-cluster=" + ",".join(f"{n}={u}" for n, u in sorted(initial_cluster.items())),
        f"--initial-cluster-state={state}",
        f"--initial-cluster-token={token}",
    ]
    if force_new_cluster:
        args.append("--force-new-cluster")
    volumes = [Volume(name="data", persistent_volume_claim=(
        PersistentVolumeClaimVolumeSource(claim_name=name)))]
    init: list[Container] = []
    if restore_from is not None:
        init.append(_restore_container(cluster, ordinal, initial_cluster, token,
                                       restore_from, version))
        if restore_from.claim_name is not None:
            volumes.append(Volume(name="backup", persistent_volume_claim=(
                PersistentVolumeClaimVolumeSource(claim_name=restore_from.claim_name,
                                                  read_only=True))))
        else:
            volumes.append(Volume(name="backup", host_path=HostPathVolumeSource(
                path=posixpath.dirname(restore_from.path), type="Directory")))
    container = Container(
        name="etcd", image=image(cluster, version), command=["/usr/local/bin/etcd"], args=args,
        ports=[ContainerPort(name="client", container_port=CLIENT_PORT, protocol="TCP"),
               ContainerPort(name="peer", container_port=PEER_PORT, protocol="TCP")],
        resources=canonical_resources(cluster.spec.resources),
        volume_mounts=[VolumeMount(name="data", mount_path=DATA_MOUNT)],
        readiness_probe=Probe(http_get=HTTPGetAction(path="/health", port="client"),
                              period_seconds=2, failure_threshold=3))
    return Pod(
        metadata=ObjectMeta(name=name, labels=labels(cluster, name),
                            annotations={VERSION: version or cluster.spec.version,
                                         CLIENT_SCHEME: url}),
        spec=PodSpec(
            hostname=name, subdomain=peer_service_name(cluster), restart_policy="Always",
            init_containers=init or None, containers=[container],
            node_selector=cluster.spec.node_selector, tolerations=cluster.spec.tolerations,
            volumes=volumes))


def _restore_container(cluster: EtcdCluster, ordinal: int, initial_cluster: dict[str, str],
                       token: str, snapshot: SnapshotFile, version: str | None) -> Container:
    """``snapshot restore`` into the member's data directory: ``etcdutl`` from 3.5 on
    (``etcdctl snapshot restore`` is deprecated there), ``etcdctl`` on 3.4."""
    release = version or cluster.spec.version
    tool = "etcdctl" if release.startswith("3.4.") else "etcdutl"
    # a claim is mounted whole (the file keeps its path inside it), a directory as itself
    inside = snapshot.path if snapshot.claim_name is not None \
        else posixpath.basename(snapshot.path)
    return Container(
        name="restore", image=image(cluster, version), command=[tool],
        args=["snapshot", "restore", f"{BACKUP_MOUNT}/{inside}",
              f"--name={member_name(cluster, ordinal)}", f"--data-dir={DATA_DIR}",
              f"--initial-advertise-peer-urls={peer_url(cluster, ordinal)}",
              "--initial-cluster=" + ",".join(f"{n}={u}" for n, u in
                                              sorted(initial_cluster.items())),
              f"--initial-cluster-token={token}"],
        volume_mounts=[VolumeMount(name="data", mount_path=DATA_MOUNT),
                       VolumeMount(name="backup", mount_path=BACKUP_MOUNT, read_only=True)])
