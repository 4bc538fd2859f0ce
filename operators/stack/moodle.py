"""The Moodle controller and the objects it owns.

For a Moodle named ``m1`` on the MysqlCluster ``db``: the PVC ``m1-moodledata``, the
Deployment ``m1`` (the web pods, with the database's address and the credentials from
``db-credentials``), the Service ``m1`` on port 80 and, with a host, the Ingress ``m1``
(with TLS from the ClusterIssuer its spec names, through cert-manager's annotation).

Nothing is created before the database is Available: Moodle's installer fails on a missing
database. After a web pod restarts, the setup is verified again (the database's Service has
a ready endpoint, its credentials hold every key the pods read, the pods run the current
template), as the Moodle operator of KubePlus's seed talk had to re-check its installation
after restarts; the result is the SetupVerified condition and an event.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from operators.stack import mysql
from operators.stack.labels import labels, selector
from operators.stack.placement import pod_spec
from operators.stack.resources import Moodle, MysqlCluster
from setpoint.resources import canonical_resources
from setpoint.resources.models.apps_v1 import Deployment, DeploymentSpec
from setpoint.resources.models.core_v1 import (
    Container,
    ContainerPort,
    EnvVar,
    EnvVarSource,
    PersistentVolumeClaim,
    PersistentVolumeClaimSpec,
    PersistentVolumeClaimVolumeSource,
    Pod,
    PodTemplateSpec,
    Secret,
    SecretKeySelector,
    Service,
    ServicePort,
    ServiceSpec,
    Volume,
    VolumeMount,
    VolumeResourceRequirements,
)
from setpoint.resources.models.discovery_v1 import EndpointSlice
from setpoint.resources.models.meta_v1 import LabelSelector, ObjectMeta
from setpoint.resources.models.networking_v1 import (
    HTTPIngressPath,
    HTTPIngressRuleValue,
    Ingress,
    IngressBackend,
    IngressRule,
    IngressServiceBackend,
    IngressSpec,
    IngressTLS,
    ServiceBackendPort,
)
from setpoint.runtime import Context, Controller, Request, Result

HTTP_PORT = 8080
DATA_DIR = "/var/www/moodledata"
CLUSTER_ISSUER = "cert-manager.io/cluster-issuer"
MOODLE_LABEL = "stack.setpoint.dev/moodle"
"""On the web pods: which Moodle they serve (the pod watch maps them back by it)."""
CREDENTIAL_KEYS = ("database", "user", "password")


Obj = dict[str, Any]


class DatabaseReferences:
    """Which Moodles use which MysqlCluster, as their reconciles last saw it: a change of a
    MysqlCluster reaches the Moodles on it (a field index, as controller-runtime's
    ``IndexField`` gives its map functions)."""

    def __init__(self) -> None:
        self._users: dict[tuple[str, str], set[str]] = defaultdict(set)

    def __repr__(self) -> str:
        return f"DatabaseReferences({len(self._users)} databases)"

    def record(self, namespace: str, moodle: str, database: str) -> None:
        for users in self._users.values():
            users.discard(moodle)
        self._users[(namespace, database)].add(moodle)

    def moodles_on(self, namespace: str, database: str) -> list[Request]:
        return [Request(namespace, moodle) for moodle in
                sorted(self._users.get((namespace, database), ()))]

    def of_database(self, db: Obj) -> Iterable[Request]:
        """Map function: a MysqlCluster -> the Moodles on it."""
        metadata = db.get("metadata") or {}
        return self.moodles_on(str(metadata.get("namespace") or ""), str(metadata.get("name")))

    def of_endpoints(self, endpoints: Obj) -> Iterable[Request]:
        """Map function: an EndpointSlice of a database's Service (named like the
        MysqlCluster) -> the Moodles on it."""
        metadata = endpoints.get("metadata") or {}
        service = (metadata.get("labels") or {}).get("kubernetes.io/service-name")
        return self.moodles_on(str(metadata.get("namespace") or ""), str(service)) \
            if service else ()


references = DatabaseReferences()


def web_labels(moodle: Moodle) -> dict[str, str]:
    return {**labels(moodle, "moodle", "web"), MOODLE_LABEL: str(moodle.metadata.name)}


def data_claim(moodle: Moodle) -> PersistentVolumeClaim:
    return PersistentVolumeClaim(
        metadata=ObjectMeta(name=f"{moodle.metadata.name}-moodledata",
                            labels=labels(moodle, "moodle", "data")),
        spec=PersistentVolumeClaimSpec(
            access_modes=["ReadWriteOnce"],
            resources=VolumeResourceRequirements(requests={"storage": moodle.spec.storage})))


def _credential(db: MysqlCluster, name: str, key: str) -> EnvVar:
    return EnvVar(name=name, value_from=EnvVarSource(
        secret_key_ref=SecretKeySelector(name=mysql.credentials_name(db), key=key)))


def deployment(moodle: Moodle, db: MysqlCluster) -> Deployment:
    container = Container(
        name="moodle", image=moodle.spec.image,
        env=[EnvVar(name="MOODLE_DATABASE_TYPE", value="mariadb"),
             EnvVar(name="MOODLE_DATABASE_HOST", value=str(db.metadata.name)),
             EnvVar(name="MOODLE_DATABASE_PORT_NUMBER", value=str(mysql.PORT)),
             _credential(db, "MOODLE_DATABASE_NAME", "database"),
             _credential(db, "MOODLE_DATABASE_USER", "user"),
             _credential(db, "MOODLE_DATABASE_PASSWORD", "password")],
        ports=[ContainerPort(name="http", container_port=HTTP_PORT, protocol="TCP")],
        resources=canonical_resources(moodle.spec.resources),
        volume_mounts=[VolumeMount(name="moodledata", mount_path=DATA_DIR)])
    volume = Volume(name="moodledata", persistent_volume_claim=(
        PersistentVolumeClaimVolumeSource(claim_name=f"{moodle.metadata.name}-moodledata")))
    return Deployment(
        metadata=ObjectMeta(name=str(moodle.metadata.name), labels=web_labels(moodle)),
        spec=DeploymentSpec(
            replicas=moodle.spec.replicas,
            selector=LabelSelector(match_labels=selector(moodle, "moodle")),
            template=PodTemplateSpec(metadata=ObjectMeta(labels=web_labels(moodle)),
                                     spec=pod_spec(moodle.spec, container, [volume]))))


def service(moodle: Moodle) -> Service:
    return Service(
        metadata=ObjectMeta(name=str(moodle.metadata.name), labels=web_labels(moodle)),
        spec=ServiceSpec(selector=selector(moodle, "moodle"), ports=[
            ServicePort(name="http", port=80, protocol="TCP", target_port="http")]))


def ingress(moodle: Moodle, host: str) -> Ingress:
    name = str(moodle.metadata.name)
    annotations = ({CLUSTER_ISSUER: moodle.spec.cluster_issuer}
                   if moodle.spec.cluster_issuer else None)
    backend = IngressBackend(service=IngressServiceBackend(
        name=name, port=ServiceBackendPort(name="http")))
    return Ingress(
        metadata=ObjectMeta(name=name, labels=web_labels(moodle), annotations=annotations),
        spec=IngressSpec(
            rules=[IngressRule(host=host, http=HTTPIngressRuleValue(paths=[
                HTTPIngressPath(path="/", path_type="Prefix", backend=backend)]))],
            tls=[IngressTLS(hosts=[host], secret_name=f"{name}-tls")]
            if moodle.spec.cluster_issuer else None))


moodle_controller = (Controller.for_(Moodle, name="moodle")
                     .owns(Deployment, Service, Ingress, PersistentVolumeClaim)
                     .watches(MysqlCluster, map_func=references.of_database)
                     .watches(EndpointSlice, map_func=references.of_endpoints)
                     .watches(Pod, map_to_owner_by_label=MOODLE_LABEL))


@moodle_controller.reconcile
async def reconcile(ctx: Context[Moodle], moodle: Moodle) -> Result:
    if ctx.deleting:
        return Result()
    references.record(ctx.request.namespace, ctx.request.name, moodle.spec.mysql_cluster)
    status = moodle.status
    status.observed_generation = moodle.metadata.generation
    db = ctx.get(MysqlCluster, moodle.spec.mysql_cluster)
    if db is None or not db.status.is_true("Available"):
        reason, message = (("DatabaseMissing", f"MysqlCluster {moodle.spec.mysql_cluster} "
                            "does not exist") if db is None else
                           ("DatabaseNotReady", f"waiting for MysqlCluster {db.metadata.name} "
                            "to be Available"))
        ctx.set_condition("DatabaseReady", False, reason=reason, message=message, obj=moodle)
        ctx.set_condition("Available", False, reason=reason, message=message, obj=moodle)
        await ctx.update_status(moodle)
        return Result()  # the MysqlCluster's change wakes this Moodle
    ctx.set_condition("DatabaseReady", True, reason="DatabaseAvailable",
                      message=f"MysqlCluster {db.metadata.name} is Available", obj=moodle)

    await ctx.apply(data_claim(moodle))
    web = await ctx.apply(deployment(moodle, db))
    await ctx.apply(service(moodle))
    host = moodle.spec.host
    if host:
        await ctx.apply(ingress(moodle, host))
        status.url = f"{'https' if moodle.spec.cluster_issuer else 'http'}://{host}/"
    else:
        for stale in ctx.owned(Ingress):
            await ctx.delete(stale)
        status.url = f"http://{moodle.metadata.name}.{ctx.request.namespace}.svc/"

    ready = (web.status.ready_replicas or 0) if web.status is not None else 0
    status.ready_replicas = ready
    ctx.set_condition("Available", ready > 0, reason="WebReady" if ready else "WebNotReady",
                      message=f"{ready} of {moodle.spec.replicas} web pods ready", obj=moodle)
    pods = ctx.list(Pod, labels=selector(moodle, "moodle"))
    restarts = sum(cs.restart_count or 0 for p in pods if p.status is not None
                   for cs in p.status.container_statuses or ())
    if restarts != status.verified_restarts or ctx.get_condition("SetupVerified",
                                                                 moodle) is None:
        verify_setup(ctx, moodle, db, restarts)
    await ctx.update_status(moodle)
    return Result()


def verify_setup(ctx: Context[Moodle], moodle: Moodle, db: MysqlCluster, restarts: int) -> None:
    """Check what the web pods rely on, and record the verdict."""
    problems = []
    slices = ctx.list(EndpointSlice, labels={"kubernetes.io/service-name":
                                             str(db.metadata.name)})
    if not any((e.conditions is not None and e.conditions.ready) for s in slices
               for e in s.endpoints or ()):
        problems.append(f"Service {db.metadata.name} has no ready endpoint")
    secret = ctx.get(Secret, mysql.credentials_name(db))
    present = set((secret.data or {}) | (secret.string_data or {})) if secret else set()
    if missing := [k for k in CREDENTIAL_KEYS if k not in present]:
        problems.append(f"Secret {mysql.credentials_name(db)} lacks {', '.join(missing)}")
    if problems:
        ctx.set_condition("SetupVerified", False, reason="SetupBroken",
                          message="; ".join(problems), obj=moodle)
        ctx.events.warning("SetupBroken", "; ".join(problems), action="VerifySetup")
        return
    moodle.status.verified_restarts = restarts
    ctx.set_condition("SetupVerified", True, reason="Verified",
                      message=f"database reachable and credentials complete after "
                      f"{restarts} web pod restart(s)", obj=moodle)
    ctx.events.normal("SetupVerified", f"setup verified after {restarts} web pod restart(s)",
                      action="VerifySetup")
