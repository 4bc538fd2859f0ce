"""The ``EtcdCluster`` custom resource (``setpoint generate crds operators.etcd.resource``).

::

    apiVersion: etcd.setpoint.dev/v1alpha1
    kind: EtcdCluster
    metadata: {name: config-store}
    spec:
      size: 3                     # 1, 3, 5 or 7
      version: "3.5.1"            # 3.4.x or 3.5.x; upgrades one minor version at a time
      storage: {size: 1Gi}
      resources: {requests: {cpu: 100m, memory: 256Mi}}

The API server refuses what an etcd expert would refuse: an even size (it tolerates no
more failures than one member fewer, and needs a larger quorum), a version outside 3.4 and
3.5, and a version change that goes down a minor version or skips one (etcd supports
upgrading one minor version at a time, and no minor downgrade before 3.6).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from operators.etcd.certificates import DURATION_PATTERN
from setpoint.resources import (
    ConditionedStatus,
    CustomResource,
    LabelRelationship,
    Model,
    PrinterColumn,
    Rule,
    Scale,
    SpecPropertyRelationship,
    rules,
)
from setpoint.resources.models.core_v1 import ResourceRequirements, Toleration

GROUP = "etcd.setpoint.dev"
DEFAULT_VERSION = "3.5.1"
DEFAULT_REPOSITORY = "quay.io/coreos/etcd"
"""Where the etcd project publishes its images (``quay.io/coreos/etcd:v3.5.1``)."""
SIZES = (1, 3, 5, 7)
INSTANCE_LABEL = "app.kubernetes.io/instance"
"""The label on every member pod and claim naming its EtcdCluster (``objects.INSTANCE``)."""
SCHEDULE_PATTERN = (r"^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)"
                    r"|[^ ]+( +[^ ]+){4})$")
"""A cron expression's shape: five fields or a macro (robfig/cron's standard parser, the
one CronJob uses); what each field may say is checked by croniter (a condition)."""

# the minor version of a "3.M.P" string, in CEL (the pattern below guarantees the shape)
_MINOR = "int({}.split('.')[1])"

Size = Annotated[int, Rule(
    "self in [1, 3, 5, 7]",
    message="size must be 1, 3, 5 or 7: an even number of members tolerates no more "
            "failures than one member fewer, and needs a larger quorum")]

Version = Annotated[str, Rule(
    f"{_MINOR.format('self')} >= {_MINOR.format('oldSelf')}",
    message="downgrading etcd to an older minor version is not supported"), Rule(
    f"{_MINOR.format('self')} <= {_MINOR.format('oldSelf')} + 1",
    message="etcd upgrades one minor version at a time: upgrade to the next minor "
            "version first")]

Phase = Literal["Creating", "Running", "Scaling", "Recovering", "Upgrading",
                "QuorumLost"]


class StorageSpec(Model):
    """The PersistentVolumeClaim each member keeps its data on."""

    size: str = Field("1Gi", description="The claim's requested storage (a quantity).")
    storage_class_name: str | None = Field(
        None, description="The claim's StorageClass; the cluster's default when unset.")


class RestoreSpec(Model):
    """Seed a new cluster from a snapshot: its founding member starts on the data of a
    completed EtcdBackup (``etcdutl snapshot restore``, ``etcdctl`` for 3.4)."""

    backup_name: str = Field(min_length=1, description="A Complete EtcdBackup in the same "
                             "namespace; its file must be readable on the founding member's "
                             "node (mounted read-only from the same path).")


class TLSSpec(Model):
    """TLS for client and peer traffic, with certificates the operator issues and renews
    (``tlssecrets.py``): a CA per cluster, a certificate per member, a client certificate in
    the Secret ``<name>-client-tls``; clients must present a certificate."""

    enabled: bool = Field(
        False, description="Serve clients and peers over https, with client certificates "
        "(chosen when the cluster is made).")
    duration: str = Field("8760h", pattern=DURATION_PATTERN, max_length=16,
                          description="How long a member or client certificate is valid "
                          "(a duration: 8760h).")
    renew_before: str = Field("720h", pattern=DURATION_PATTERN, max_length=16,
                              description="A certificate this close to expiry is issued "
                              "again and its member restarted, one member at a time.")


ONE_DESTINATION = Rule(
    "has(self.directory) != has(self.volume)",
    message="exactly one of directory (a directory where the operator runs, for the "
    "embedded cluster) and volume (a PersistentVolumeClaim: {claimName, subPath}) says "
    "where the snapshot is written")
"""Where a snapshot goes: a directory beside the operator or a claim, never both or
neither (a rule on the object holding both fields, so it sees either one missing)."""


SubPath = Annotated[str, Rule(
    "!self.split('/').exists(part, part == '..')",
    message="subPath must stay inside the claim: a relative path without '..'")]
"""As a volume mount's subPath must be (kubernetes pkg/apis/core/validation/validation.go,
``validateLocalDescendingPath``): relative, and no ``..`` element."""


class BackupVolume(Model):
    """A PersistentVolumeClaim snapshots are written to by a pod that mounts it."""

    claim_name: str = Field(
        min_length=1, max_length=253, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
        description="A PersistentVolumeClaim in the backup's namespace. A restore mounts it "
        "read-only into the founding member's pod: ReadWriteMany or ReadOnlyMany, or "
        "ReadWriteOnce where the pods share a node.")
    sub_path: SubPath | None = Field(
        None, max_length=1024, pattern=r"^[^/]+(/[^/]+)*$",
        description="A relative directory inside the claim (no '..'); its root when unset.")


@rules(ONE_DESTINATION)
class BackupPolicy(Model):
    """Scheduled backups (:mod:`operators.etcd.schedule`): an EtcdBackup at each time of
    ``schedule``, and one before every upgrade; the ``keep`` newest complete ones stay."""

    schedule: str = Field(
        pattern=SCHEDULE_PATTERN, max_length=100,
        description="When to take a backup, a cron expression of five fields (minute hour "
        "day-of-month month day-of-week) or a macro such as @daily, in UTC.")
    keep: int = Field(5, ge=1, le=1000, description="How many complete backups the "
                      "operator keeps; older ones are deleted with their files.")
    directory: str | None = Field(
        None, pattern=r"^/", description="The backups' directory where the operator runs "
        "(see EtcdBackup's spec.directory); exactly one of directory and volume.")
    volume: BackupVolume | None = Field(
        None, description="The PersistentVolumeClaim the backups are written to (see "
        "EtcdBackup's spec.volume); exactly one of directory and volume.")


TLS_ON = "(has({0}.tls) && has({0}.tls.enabled) && {0}.tls.enabled)"
"""Whether a spec (``self`` or ``oldSelf``) asks for TLS, in CEL: ``tls`` absent, or present
with ``enabled`` false or unset, is plain http."""


@rules(Rule(
    f"{TLS_ON.format('self')} == {TLS_ON.format('oldSelf')}",
    message="TLS is chosen when the cluster is made: spec.tls.enabled cannot be switched on "
    "or off (nor spec.tls added or removed with it) on an existing cluster; every member's "
    "peer and client URLs would change at once. Make a new cluster with the wanted TLS "
    "setting and restore a backup into it (EtcdBackup, then EtcdRestore)",
    field_path=".tls"))
class EtcdClusterSpec(Model):
    """What an etcd cluster should look like."""

    size: Size = Field(3, description="Number of voting members: 1, 3, 5 or 7.")
    version: Version = Field(
        DEFAULT_VERSION, pattern=r"^3\.[45]\.(0|[1-9][0-9]{0,2})$", max_length=8,
        description="The etcd version, 3.4.x or 3.5.x. A change upgrades the members one at "
        "a time, the leader last; downgrades and skipped minor versions are refused.")
    repository: str = Field(DEFAULT_REPOSITORY, min_length=1,
                            description="The image repository; the tag is `v<version>`.")
    storage: StorageSpec = Field(default_factory=StorageSpec,
                                 description="Each member's data volume.")
    resources: ResourceRequirements | None = Field(
        None, description="Requests and limits of every etcd container.")
    node_selector: dict[str, str] | None = Field(
        None, description="Node labels every member pod must match.")
    tolerations: list[Toleration] | None = Field(
        None, description="Tolerations of every member pod.")
    restore: RestoreSpec | None = Field(
        None, description="Seed the new cluster from a backup (read only when the "
        "founding member is made).")
    tls: TLSSpec | None = Field(None, description="TLS for client and peer traffic.")
    backup: BackupPolicy | None = Field(
        None, description="Scheduled backups, and a backup before every upgrade.")


class MemberStatus(Model):
    """One member as etcd and its pod report it."""

    name: str = Field(description="The member's name (its pod's and its claim's).")
    id: str | None = Field(None, description="The member id, in hex as etcdctl prints it.")
    peer_url: str | None = Field(None, description="The URL other members reach it on.")
    version: str | None = Field(None, description="The etcd version it runs.")
    healthy: bool = Field(False, description="It answered a status request.")
    learner: bool = Field(False, description="A learner (not yet voting).")
    leader: bool = Field(False, description="The current raft leader.")


class RecoveryStatus(Model):
    """A recovery from a lost quorum: where the data came from and what was lost."""

    time: str = Field(description="When the recovery began (RFC 3339).")
    source: Literal["Survivor", "Backup", "Empty"] = Field(
        description="The newest surviving member, the latest complete EtcdBackup, or "
        "nothing: started empty with the accept-data-loss annotation.")
    member: str | None = Field(None, description="Survivor: the member recovered from.")
    backup_name: str | None = Field(None, description="Backup: the EtcdBackup restored.")
    revision: int = Field(description="The source's revision.")
    last_observed_revision: int | None = Field(
        None, description="The highest revision the operator had seen before the loss.")
    revisions_lost: int | None = Field(
        None, description="Revisions the operator had seen that the source does not have "
        "(writes lost for good).")
    members_lost: int | None = Field(None, description="Voting members whose data was lost.")


class EtcdClusterStatus(ConditionedStatus):
    """What the operator last saw and did (conditions: Available, Progressing, Degraded,
    UpgradeInProgress)."""

    phase: Phase | None = Field(None, description="Where the cluster is in its lifecycle "
                                "(see the operator's README for the state diagram).")
    size: int = Field(0, description="Members in the etcd membership (for the scale "
                      "subresource).")
    ready_members: int = Field(0, description="Voting members that answer.")
    current_version: str | None = Field(None, description="The lowest version any member "
                                        "runs (the cluster version).")
    members: list[MemberStatus] | None = Field(None, description="Every member, by name.")
    leader: str | None = Field(None, description="The name of the leader.")
    step: str | None = Field(None, description="The membership change in progress, resumed "
                             "after an operator restart.")
    selector: str | None = Field(None, description="The member pods' label selector.")
    last_schedule_time: str | None = Field(
        None, description="The last time of spec.backup.schedule a backup was made for.")
    revision: int | None = Field(None, description="The highest revision a member "
                                 "reported (what a recovery is measured against).")
    recovery: RecoveryStatus | None = Field(None, description="The last recovery from a "
                                            "quorum loss and what it could not recover.")


class EtcdCluster(CustomResource, group=GROUP, version="v1alpha1", short_names=["etcd"],
                  categories=["all"],
                  printer_columns=[
                      PrinterColumn("Size", "integer", ".spec.size"),
                      PrinterColumn("Ready", "integer", ".status.readyMembers"),
                      PrinterColumn("Version", "string", ".status.currentVersion"),
                      PrinterColumn("Phase", "string", ".status.phase"),
                      PrinterColumn("Leader", "string", ".status.leader", priority=1),
                      PrinterColumn.age(),
                  ],
                  scale=Scale(".spec.size", ".status.size", ".status.selector"),
                  # KubePlus's relationship annotations (setpoint.resources.relationships):
                  # what an instance owns, and its members found by their instance label
                  composition=["Pod", "PersistentVolumeClaim", "Service", "Secret",
                               "EtcdBackup"],
                  relationships=[LabelRelationship(kind, "metadata.name", key=INSTANCE_LABEL)
                                 for kind in ("Pod", "PersistentVolumeClaim")],
                  rules=[Rule("self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') "
                              "&& size(self.metadata.name) <= 40",
                              message="the name must be a DNS label of at most 40 characters "
                              "(it names the Services, and the members' names add to it)")]):
    """An etcd cluster: members ``<name>-0`` … on their own claims, peers found through the
    headless Service ``<name>``, clients served by the Service ``<name>-client:2379``."""

    spec: EtcdClusterSpec = Field(default_factory=EtcdClusterSpec)
    status: EtcdClusterStatus = EtcdClusterStatus()


@rules(ONE_DESTINATION)
class EtcdBackupSpec(Model):
    """A one-off snapshot of an EtcdCluster in the same namespace, into a directory where the
    operator runs or into a PersistentVolumeClaim."""

    cluster_name: str = Field(min_length=1, description="The EtcdCluster to snapshot.")
    directory: str | None = Field(
        None, pattern=r"^/", description="An absolute directory where the operator runs "
        "(the embedded cluster's machine, or a volume mounted into the operator's pod): the "
        "snapshot is written there as `<namespace>-<backup name>.db`, mode 0600.")
    volume: BackupVolume | None = Field(
        None, description="A PersistentVolumeClaim: a pod with the cluster's etcd image "
        "mounts it and runs `etcdctl snapshot save` against a healthy member, writing "
        "`<subPath>/<namespace>-<backup name>.db`.")


class EtcdBackupStatus(ConditionedStatus):
    """The snapshot taken (condition: Complete)."""

    phase: Literal["Pending", "Complete", "Failed"] | None = Field(None)
    path: str | None = Field(None, description="The snapshot file (with spec.volume: its "
                             "path inside the claim).")
    member: str | None = Field(None, description="The member the snapshot was taken from.")
    revision: int | None = Field(None, description="The member's revision just before the "
                                 "snapshot (the snapshot holds at least this).")
    size: int | None = Field(None, description="The snapshot's size in bytes.")
    sha256: str | None = Field(None, description="The snapshot's sha256 checksum.")
    etcd_version: str | None = Field(None, description="The member's etcd version.")
    failures: int | None = Field(None, description="spec.volume: snapshot pods that failed "
                                 "(the backup fails after 6, as a Job's backoffLimit).")
    last_failure_time: str | None = Field(None, description="When the last one failed; the "
                                          "next waits 10 s doubled per failure (RFC 3339).")


class EtcdBackup(CustomResource, group=GROUP, version="v1alpha1", categories=["all"],
                 printer_columns=[
                     PrinterColumn("Cluster", "string", ".spec.clusterName"),
                     PrinterColumn("Phase", "string", ".status.phase"),
                     PrinterColumn("Revision", "integer", ".status.revision"),
                     PrinterColumn("Size", "integer", ".status.size"),
                     PrinterColumn.age(),
                 ],
                 rules=[Rule("self.spec == oldSelf.spec",
                             message="an EtcdBackup is one snapshot: its spec cannot change")],
                 # a backup into a claim runs its snapshot (and, pruned, its cleanup) pod
                 composition=["Pod"],
                 relationships=[SpecPropertyRelationship("spec.clusterName",
                                                         "EtcdCluster.metadata.name")]):
    """A snapshot of an etcd cluster's keyspace, taken once (etcd's Maintenance.Snapshot)."""

    spec: EtcdBackupSpec
    status: EtcdBackupStatus = EtcdBackupStatus()


class EtcdRestoreSpec(Model):
    """A new EtcdCluster seeded from a Complete EtcdBackup in the same namespace."""

    backup_name: str = Field(min_length=1, description="The Complete EtcdBackup to restore.")
    cluster_name: str = Field(
        min_length=1, max_length=40, pattern=r"^[a-z]([-a-z0-9]*[a-z0-9])?$",
        description="The EtcdCluster to create; it must not exist yet.")
    size: Size = Field(3, description="Its number of voting members.")
    version: str | None = Field(
        None, pattern=r"^3\.[45]\.(0|[1-9][0-9]{0,2})$", max_length=8,
        description="Its etcd version; the backup's when unset.")


class EtcdRestoreStatus(ConditionedStatus):
    """The restore's progress (condition: Restored)."""

    phase: Literal["Pending", "Restoring", "Complete", "Failed"] | None = Field(None)
    cluster_name: str | None = Field(None, description="The EtcdCluster made.")
    cluster_uid: str | None = Field(None, description="Its uid (a namesake is not it).")
    revision: int | None = Field(None, description="The backup's revision.")


class EtcdRestore(CustomResource, group=GROUP, version="v1alpha1", categories=["all"],
                  printer_columns=[
                      PrinterColumn("Backup", "string", ".spec.backupName"),
                      PrinterColumn("Cluster", "string", ".spec.clusterName"),
                      PrinterColumn("Phase", "string", ".status.phase"),
                      PrinterColumn.age(),
                  ],
                  rules=[Rule("self.spec == oldSelf.spec",
                              message="an EtcdRestore is done once: its spec cannot change")],
                  composition=["EtcdCluster"],
                  relationships=[SpecPropertyRelationship("spec.backupName",
                                                          "EtcdBackup.metadata.name")]):
    """Restores an EtcdBackup into a new EtcdCluster (its ``spec.restore``); the cluster
    outlives the EtcdRestore."""

    spec: EtcdRestoreSpec
    status: EtcdRestoreStatus = EtcdRestoreStatus()
