"""The stack's custom resources: ``MysqlCluster`` and ``Moodle``
(``setpoint generate crds operators.stack.resources``).

::

    apiVersion: stack.setpoint.dev/v1
    kind: MysqlCluster
    metadata: {name: db}
    spec: {version: "11.4", database: moodle, user: moodle, storage: 1Gi}
    ---
    apiVersion: stack.setpoint.dev/v1
    kind: Moodle
    metadata: {name: m1}
    spec:
      mysqlCluster: db                 # the database it runs on, in the same namespace
      host: moodle.example.com         # its Ingress
      clusterIssuer: letsencrypt       # cert-manager issues the Ingress's certificate
      resources: {requests: {cpu: 250m, memory: 256Mi}, limits: {cpu: 500m, memory: 512Mi}}
      nodeSelector: {stack: moodle}

Both pass ``resources``, ``nodeSelector`` and ``tolerations`` down to every pod, so a stack
is placed as one unit (co-located on chosen nodes). Their CRDs carry KubePlus's annotations:
what each creates (``resource/composition``), the PVCs tied by label, the Moodle's database
by spec property, and the Ingress's ClusterIssuer by annotation.
"""

from __future__ import annotations

from pydantic import Field

from setpoint.resources import (
    ConditionedStatus,
    CustomResource,
    LabelRelationship,
    Model,
    PrinterColumn,
    Rule,
    SpecPropertyRelationship,
    rules,
)
from setpoint.resources.models.core_v1 import ResourceRequirements, Toleration

GROUP = "stack.setpoint.dev"
INSTANCE = "app.kubernetes.io/instance"
DEFAULT_MARIADB = "11.4"
DEFAULT_MOODLE_IMAGE = "moodlehq/moodle-php-apache:8.3"
_NAME_RULE = Rule("self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') "
                  "&& size(self.metadata.name) <= 40",
                  message="the name must be a DNS label of at most 40 characters (it names "
                  "a Service and a StatefulSet, and the pods' names add to it)")


class Placement(Model):
    """Where and how big every pod of the instance is: passed down unchanged."""

    resources: ResourceRequirements | None = Field(
        None, description="Requests and limits of every container.")
    node_selector: dict[str, str] | None = Field(
        None, description="Node labels every pod must match.")
    tolerations: list[Toleration] | None = Field(None, description="Tolerations of every pod.")


@rules(Rule("self.storage == oldSelf.storage",
            message="storage cannot change once the database exists (a StatefulSet's "
            "volume claim template is immutable): make a new MysqlCluster"))
class MysqlClusterSpec(Placement):
    """A MariaDB server with one database and one user for the application."""

    version: str = Field(DEFAULT_MARIADB, pattern=r"^[0-9]+(\.[0-9]+){0,2}$",
                         description="The MariaDB version: the tag of the `mariadb` image.")
    database: str = Field("app", pattern=r"^[A-Za-z0-9_]{1,64}$",
                          description="The database created for the application.")
    user: str = Field("app", pattern=r"^[A-Za-z0-9_]{1,32}$",
                      description="The application's user, with every privilege on the "
                      "database; its password is in the Secret `<name>-credentials`.")
    storage: str = Field("1Gi", description="The size of the data volume (a PVC).")


class DatabaseStatus(ConditionedStatus):
    """Conditions: Available (the server answers), Progressing (False with the reason
    ``UpgradeFailed`` when the server of a new version does not start)."""

    ready_replicas: int = Field(0, description="MariaDB pods that are ready.")
    current_version: str | None = Field(
        None, description="The version whose server last came up ready on the data.")
    service: str | None = Field(None, description="The Service clients connect to (3306).")
    secret: str | None = Field(None, description="The Secret with `user`, `password`, "
                               "`database` and `root-password`.")


class MysqlCluster(CustomResource, group=GROUP, version="v1", short_names=["mysql"],
                   printer_columns=[PrinterColumn("Version", "string", ".spec.version"),
                                    PrinterColumn("Ready", "integer", ".status.readyReplicas"),
                                    PrinterColumn("Service", "string", ".status.service"),
                                    PrinterColumn.age()],
                   rules=[_NAME_RULE],
                   composition=["StatefulSet", "Service", "Secret"],
                   relationships=[LabelRelationship("PersistentVolumeClaim", "metadata.name",
                                                    key=INSTANCE)]):
    """A MariaDB database for one application: clients use the Service named like it, with
    the credentials of the Secret its status names."""

    spec: MysqlClusterSpec = Field(default_factory=MysqlClusterSpec)
    status: DatabaseStatus = DatabaseStatus()


class MoodleSpec(Placement):
    """Moodle's web tier, on a MysqlCluster."""

    mysql_cluster: str = Field(..., min_length=1, description="The MysqlCluster (same "
                               "namespace) whose database Moodle uses.")
    replicas: int = Field(1, ge=1, description="Web pods.")
    image: str = Field(DEFAULT_MOODLE_IMAGE, min_length=1, description="The web image.")
    host: str | None = Field(None, description="The Ingress host; no Ingress without it.")
    cluster_issuer: str | None = Field(
        None, description="A cert-manager ClusterIssuer for the Ingress's TLS certificate "
        "(the `cert-manager.io/cluster-issuer` annotation).")
    storage: str = Field("1Gi", description="The size of the moodledata volume (a PVC).")


class MoodleStatus(ConditionedStatus):
    """Conditions: Available, DatabaseReady, SetupVerified."""

    ready_replicas: int = Field(0, description="Web pods that are ready.")
    url: str | None = Field(None, description="Where Moodle is served.")
    verified_restarts: int = Field(
        0, description="The web pods' restart count when the setup was last verified: a "
        "restart since then makes the operator verify again.")


class Moodle(CustomResource, group=GROUP, version="v1",
             printer_columns=[PrinterColumn("Database", "string", ".spec.mysqlCluster"),
                              PrinterColumn("Ready", "integer", ".status.readyReplicas"),
                              PrinterColumn("URL", "string", ".status.url"),
                              PrinterColumn.age()],
             rules=[_NAME_RULE],
             composition=["Deployment", "Service", "Ingress", "PersistentVolumeClaim"],
             relationships=[
                 SpecPropertyRelationship("spec.mysqlCluster", "MysqlCluster.metadata.name")]):
    """Moodle's web tier on the MysqlCluster its spec names."""

    spec: MoodleSpec
    status: MoodleStatus = MoodleStatus()
