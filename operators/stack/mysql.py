"""The MysqlCluster controller and the objects it owns.

For a MysqlCluster named ``db``: the Secret ``db-credentials`` (made once, with random
passwords: never rewritten, so the database and its clients keep agreeing), the StatefulSet
``db`` running the ``mariadb`` image with its data on a PVC at ``/var/lib/mysql``, its
governing headless Service ``db-pods`` and the Service ``db`` clients use on port 3306. The
image creates the database and the user from its environment on the first start
(``MARIADB_*``; on the embedded cluster's process runtime too).

A version change rolls the StatefulSet (the pod made again on the same claim). A new
version whose server does not start is reported (``Progressing`` False, reason
``UpgradeFailed``, naming the version the data last ran and how to go back) and nothing of
the data is touched; set back, the pod stuck on the failed version is deleted so the old
one runs again (:mod:`.rollout`).
"""

from __future__ import annotations

import secrets

from operators.stack import rollout
from operators.stack.labels import INSTANCE, labels, selector
from operators.stack.placement import pod_spec
from operators.stack.resources import MysqlCluster
from setpoint.client import ApiError, TransportError
from setpoint.resources import canonical_resources
from setpoint.resources.models.apps_v1 import StatefulSet, StatefulSetSpec
from setpoint.resources.models.core_v1 import (
    Container,
    ContainerPort,
    EnvVar,
    EnvVarSource,
    PersistentVolumeClaim,
    PersistentVolumeClaimSpec,
    Pod,
    PodTemplateSpec,
    Probe,
    Secret,
    SecretKeySelector,
    Service,
    ServicePort,
    ServiceSpec,
    TCPSocketAction,
    VolumeMount,
    VolumeResourceRequirements,
)
from setpoint.resources.models.meta_v1 import LabelSelector, ObjectMeta
from setpoint.runtime import Context, Controller, Result

PORT = 3306
DATA_DIR = "/var/lib/mysql"
CONTAINER = "mariadb"


def credentials_name(db: MysqlCluster) -> str:
    return f"{db.metadata.name}-credentials"


def credentials(db: MysqlCluster) -> Secret:
    """New credentials: used only when the Secret does not exist yet."""
    return Secret(
        metadata=ObjectMeta(name=credentials_name(db), labels=labels(db, "mariadb", "database")),
        type="Opaque",
        string_data={"database": db.spec.database, "user": db.spec.user,
                     "password": secrets.token_urlsafe(18),
                     "root-password": secrets.token_urlsafe(18)})


def _from_secret(db: MysqlCluster, name: str, key: str) -> EnvVar:
    return EnvVar(name=name, value_from=EnvVarSource(
        secret_key_ref=SecretKeySelector(name=credentials_name(db), key=key)))


def statefulset(db: MysqlCluster) -> StatefulSet:
    container = Container(
        name=CONTAINER, image=f"mariadb:{db.spec.version}",
        env=[_from_secret(db, "MARIADB_ROOT_PASSWORD", "root-password"),
             EnvVar(name="MARIADB_DATABASE", value=db.spec.database),
             EnvVar(name="MARIADB_USER", value=db.spec.user),
             _from_secret(db, "MARIADB_PASSWORD", "password")],
        ports=[ContainerPort(name="mysql", container_port=PORT, protocol="TCP")],
        resources=canonical_resources(db.spec.resources),
        volume_mounts=[VolumeMount(name="data", mount_path=DATA_DIR)],
        readiness_probe=Probe(tcp_socket=TCPSocketAction(port="mysql"), period_seconds=2),
        liveness_probe=Probe(tcp_socket=TCPSocketAction(port="mysql"), period_seconds=10,
                             initial_delay_seconds=30))
    claim = PersistentVolumeClaim(
        metadata=ObjectMeta(name="data", labels=labels(db, "mariadb", "database")),
        spec=PersistentVolumeClaimSpec(
            access_modes=["ReadWriteOnce"],
            resources=VolumeResourceRequirements(requests={"storage": db.spec.storage})))
    return StatefulSet(
        metadata=ObjectMeta(name=str(db.metadata.name), labels=labels(db, "mariadb",
                                                                      "database")),
        spec=StatefulSetSpec(
            replicas=1, service_name=f"{db.metadata.name}-pods",
            selector=LabelSelector(match_labels=selector(db, "mariadb")),
            template=PodTemplateSpec(metadata=ObjectMeta(labels=labels(db, "mariadb",
                                                                       "database")),
                                     spec=pod_spec(db.spec, container)),
            volume_claim_templates=[claim]))


def services(db: MysqlCluster) -> list[Service]:
    """The governing headless Service of the pods, and the one clients use."""
    ports = [ServicePort(name="mysql", port=PORT, protocol="TCP", target_port="mysql")]
    return [
        Service(metadata=ObjectMeta(name=f"{db.metadata.name}-pods",
                                    labels=labels(db, "mariadb", "database")),
                spec=ServiceSpec(cluster_ip="None", selector=selector(db, "mariadb"),
                                 ports=ports)),
        Service(metadata=ObjectMeta(name=str(db.metadata.name),
                                    labels=labels(db, "mariadb", "database")),
                spec=ServiceSpec(selector=selector(db, "mariadb"), ports=ports)),
    ]


mysql_cluster = (Controller.for_(MysqlCluster, name="mysqlcluster")
                 .owns(StatefulSet, Service, Secret)
                 # the server's pod is the StatefulSet's: its start failing shows only there
                 .watches(Pod, map_to_owner_by_label=INSTANCE)
                 .permits({"apiGroups": [""], "resources": ["pods"], "verbs": ["delete"]},
                          {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]}))


def server_pod_name(db: MysqlCluster) -> str:
    return f"{db.metadata.name}-0"


@mysql_cluster.reconcile
async def reconcile(ctx: Context[MysqlCluster], db: MysqlCluster) -> Result:
    if ctx.deleting:
        return Result()  # the garbage collector removes what it owns
    await ctx.create_or_update(credentials(db))
    for service in services(db):
        await ctx.apply(service)
    server = await ctx.apply(statefulset(db))
    ready = (server.status.ready_replicas or 0) if server.status is not None else 0
    status = db.status
    status.observed_generation = db.metadata.generation
    status.ready_replicas = ready
    status.service = str(db.metadata.name)
    status.secret = credentials_name(db)
    pod = ctx.get(Pod, server_pod_name(db))
    running = rollout.server_version(pod, CONTAINER) if pod is not None else None
    if pod is not None and rollout.is_ready(pod) and running is not None:
        status.current_version = running
    ctx.set_condition("Available", ready > 0,
                      reason="ServerReady" if ready else "ServerNotReady",
                      message=f"MariaDB answers on {db.metadata.name}:{PORT}" if ready else
                      "waiting for the MariaDB pod to be ready", obj=db)
    failure = rollout.start_failure(pod, CONTAINER) if pod is not None else None
    current = server.status is not None and \
        server.status.observed_generation == server.metadata.generation and \
        server.status.updated_replicas == 1
    if pod is not None and failure is not None:
        await _report_failure(ctx, db, server, pod, running, failure)
    else:
        ctx.set_condition("Progressing", not (current and ready),
                          reason="Complete" if current and ready else "RollingOut",
                          message="the server runs the current spec" if current and ready
                          else f"StatefulSet {server.metadata.name} is rolling out", obj=db)
    await ctx.update_status(db)
    return Result()


async def _report_failure(ctx: Context[MysqlCluster], db: MysqlCluster, server: StatefulSet,
                          pod: Pod, running: str | None, failure: str) -> None:
    """The server of ``running`` does not start: say so with what to do, and, once the
    spec has moved away from that pod's revision, delete the pod (the forced rollback)."""
    name = str(pod.metadata.name)
    if rollout.stuck_on_an_old_revision(server, pod):
        ctx.events.normal("RollingBack", f"pod {name} ({running}) does not start and is no "
                          f"longer wanted: deleted, so the StatefulSet makes it again with "
                          f"{db.spec.version}", action="ForcedRollback")
        await ctx.delete(pod)
        ctx.set_condition("Progressing", True, reason="RollingBack",
                          message=f"replacing pod {name}, stuck on {running}, with "
                          f"{db.spec.version}", obj=db)
        return
    last = await _last_log_line(ctx, pod)
    kept = db.status.current_version
    claim = f"data-{name}"
    if kept is not None and kept != running:
        reason = "UpgradeFailed"
        message = (f"MariaDB {running} does not start in pod {name} ({failure}"
                   f"{': ' + last if last else ''}); the data, last run by {kept}, is kept "
                   f"in PersistentVolumeClaim {claim}: set spec.version back to {kept} to "
                   "run it again")
    else:
        reason = "ServerFailing"
        message = (f"MariaDB {running} does not start in pod {name} ({failure}"
                   f"{': ' + last if last else ''}); its data is in PersistentVolumeClaim "
                   f"{claim}")
    ctx.events.warning(reason, message, action="Rollout")
    ctx.set_condition("Progressing", False, reason=reason, message=message, obj=db)


async def _last_log_line(ctx: Context[MysqlCluster], pod: Pod) -> str:
    """The server's last error line, from the log of its last instance (the one that
    ended: the kubelet serves it while the container waits to start again)."""
    try:
        log = await ctx.client.request(
            "GET", f"/api/v1/namespaces/{pod.metadata.namespace}/pods/{pod.metadata.name}"
            "/log", params={"container": CONTAINER, "tailLines": 3})
    except (ApiError, TransportError):  # the report stands without it
        return ""
    lines = [line for line in str(log).splitlines() if "[ERROR]" in line and
             "Aborting" not in line] or str(log).strip().splitlines()[-1:]
    return lines[-1].split("[ERROR]", 1)[-1].strip()[:200] if lines else ""
