"""The objects an ``Alertmanager`` named ``a`` owns (the prometheus-operator's names):

- ``Secret alertmanager-a-generated``: the validated configuration (from the user's
  Secret, key ``alertmanager.yaml``), the only one the pods mount;
- ``Service alertmanager-a``: headless, ports ``web`` (9093) and the gossip mesh
  ``tcp-mesh``/``udp-mesh`` (9094), publishing not-ready addresses so that replicas find
  each other while they start;
- ``StatefulSet alertmanager-a``: the replicas, each started with ``--cluster.peer`` for
  every replica (``alertmanager-a-<i>.alertmanager-a.<ns>.svc:9094``, itself included,
  as the prometheus-operator does), and a ``config-reloader``.
"""

from __future__ import annotations

import base64

from operators.monitoring import podparts
from operators.monitoring.resources.alertmanager import DEFAULT_IMAGE, Alertmanager
from setpoint.resources import canonical_resources
from setpoint.resources.models.apps_v1 import StatefulSet, StatefulSetSpec
from setpoint.resources.models.core_v1 import (
    Container,
    ContainerPort,
    EmptyDirVolumeSource,
    PodSpec,
    PodTemplateSpec,
    Secret,
    SecretVolumeSource,
    Service,
    ServicePort,
    ServiceSpec,
    Volume,
    VolumeMount,
)
from setpoint.resources.models.meta_v1 import LabelSelector, ObjectMeta

APP = "alertmanager"
PORT = 9093
MESH_PORT = 9094
CONFIG_KEY = "alertmanager.yaml"
CONFIG_DIR = "/etc/alertmanager/config_out"
DEFAULT_CONFIG = """\
route:
  receiver: "null"
receivers:
- name: "null"
"""
"""Used without a Secret: alerts are accepted, grouped and dropped (the
prometheus-operator's default)."""


def name_of(am: Alertmanager) -> str:
    return f"alertmanager-{am.metadata.name}"


def user_secret_name(am: Alertmanager) -> str:
    return am.spec.config_secret or name_of(am)


def generated_secret_name(am: Alertmanager) -> str:
    return f"{name_of(am)}-generated"


def labels(am: Alertmanager) -> dict[str, str]:
    return podparts.labels(APP, str(am.metadata.name))


def selector(am: Alertmanager) -> dict[str, str]:
    return podparts.selector(APP, str(am.metadata.name))


def peers(am: Alertmanager) -> list[str]:
    service, ns = name_of(am), am.metadata.namespace
    return [f"{service}-{i}.{service}.{ns}.svc:{MESH_PORT}" for i in range(am.spec.replicas)]


def generated_secret(am: Alertmanager, text: str) -> Secret:
    return Secret(metadata=ObjectMeta(name=generated_secret_name(am), labels=labels(am)),
                  type="Opaque", data={CONFIG_KEY: base64.b64encode(text.encode()).decode()})


def service(am: Alertmanager) -> Service:
    return Service(
        metadata=ObjectMeta(name=name_of(am),
                            labels={**labels(am), "operated-alertmanager": "true"}),
        spec=ServiceSpec(
            cluster_ip="None", selector=selector(am), publish_not_ready_addresses=True,
            ports=[ServicePort(name="web", port=PORT, protocol="TCP", target_port="web"),
                   ServicePort(name="tcp-mesh", port=MESH_PORT, protocol="TCP",
                               target_port="mesh-tcp"),
                   ServicePort(name="udp-mesh", port=MESH_PORT, protocol="UDP",
                               target_port="mesh-udp")]))


def statefulset(am: Alertmanager) -> StatefulSet:
    spec = am.spec
    mounts = [VolumeMount(name="config", mount_path=CONFIG_DIR, read_only=True)]
    args = [f"--config.file={CONFIG_DIR}/{CONFIG_KEY}", "--storage.path=/alertmanager",
            f"--data.retention={spec.retention}", f"--web.listen-address=0.0.0.0:{PORT}"]
    if spec.replicas > 1:
        args += [f"--cluster.listen-address=0.0.0.0:{MESH_PORT}",
                 "--cluster.reconnect-timeout=5m",
                 *(f"--cluster.peer={peer}" for peer in peers(am))]
    else:
        args.append("--cluster.listen-address=")  # one replica: no gossip
    server = Container(
        name="alertmanager", image=spec.image or f"{DEFAULT_IMAGE}:{spec.version}",
        args=args,
        ports=[ContainerPort(name="web", container_port=PORT, protocol="TCP"),
               ContainerPort(name="mesh-tcp", container_port=MESH_PORT, protocol="TCP"),
               ContainerPort(name="mesh-udp", container_port=MESH_PORT, protocol="UDP")],
        resources=canonical_resources(spec.resources),
        volume_mounts=[*mounts, VolumeMount(name="alertmanager-db",
                                            mount_path="/alertmanager")],
        readiness_probe=podparts.http_probe("/-/ready", period=5),
        liveness_probe=podparts.http_probe("/-/healthy", period=10, failures=6))
    volumes = [Volume(name="config", secret=SecretVolumeSource(
        secret_name=generated_secret_name(am))),
        Volume(name="alertmanager-db", empty_dir=EmptyDirVolumeSource())]
    reloader = podparts.reloader(PORT, [f"{CONFIG_DIR}/{CONFIG_KEY}"], mounts)
    return StatefulSet(
        metadata=ObjectMeta(name=name_of(am), labels=labels(am)),
        spec=StatefulSetSpec(
            replicas=spec.replicas, service_name=name_of(am),
            pod_management_policy="Parallel",
            selector=LabelSelector(match_labels=selector(am)),
            template=PodTemplateSpec(
                metadata=ObjectMeta(labels=labels(am)),
                spec=PodSpec(containers=[server, reloader], volumes=volumes,
                             node_selector=spec.node_selector))))
