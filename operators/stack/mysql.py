"""The MysqlCluster controller and the objects it owns.

For a MysqlCluster named ``db``: the Secret ``db-credentials`` (made once, with random
passwords: never rewritten, so the database and its clients keep agreeing), the StatefulSet
``db`` running the ``mariadb`` image with its data on a PVC at ``/var/lib/mysql``, its
governing headless Service ``db-pods`` and the Service ``db`` clients use on port 3306. The
image creates the database and the user from its environment on the first start
(``MARIADB_*``; on the embedded cluster's process runtime too).
"""

from __future__ import annotations

import secrets

from operators.stack.labels import labels, selector
from operators.stack.placement import pod_spec
from operators.stack.resources import MysqlCluster
from setpoint.resources import canonical_resources
from setpoint.resources.models.apps_v1 import StatefulSet, StatefulSetSpec
from setpoint.resources.models.core_v1 import (
    Container,
    ContainerPort,
    EnvVar,
    EnvVarSource,
    PersistentVolumeClaim,
    PersistentVolumeClaimSpec,
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
        name="mariadb", image=f"mariadb:{db.spec.version}",
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
                 .owns(StatefulSet, Service, Secret))


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
    ctx.set_condition("Available", ready > 0,
                      reason="ServerReady" if ready else "ServerNotReady",
                      message=f"MariaDB answers on {db.metadata.name}:{PORT}" if ready else
                      "waiting for the MariaDB pod to be ready", obj=db)
    current = server.status is not None and \
        server.status.observed_generation == server.metadata.generation and \
        server.status.updated_replicas == 1
    ctx.set_condition("Progressing", not (current and ready),
                      reason="Complete" if current and ready else "RollingOut",
                      message="the server runs the current spec" if current and ready else
                      f"StatefulSet {server.metadata.name} is rolling out", obj=db)
    await ctx.update_status(db)
    return Result()
