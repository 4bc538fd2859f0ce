"""The objects a ``Prometheus`` named ``p`` owns (the prometheus-operator's names):

- ``Secret prometheus-p``: the configuration, key ``prometheus.yaml``;
- ``ConfigMap prometheus-p-rulefiles-<n>``: the rule files;
- ``StatefulSet prometheus-p``: the servers, each with a ``config-reloader`` beside it
  (:func:`operators.monitoring.podparts.reloader`); the pod template never names the
  configuration, so a new configuration never restarts a pod;
- ``Service prometheus-p``: headless, port ``web`` (9090), governing the StatefulSet and
  selected by ServiceMonitors that look for ``app.kubernetes.io/name: prometheus``.
"""

from __future__ import annotations

import base64

from operators.monitoring import podparts
from operators.monitoring.promconfig import CONFIG_DIR, CONFIG_KEY, RULES_DIR
from operators.monitoring.resources.prometheus import DEFAULT_IMAGE, Prometheus
from operators.monitoring.storage import Storage
from setpoint.resources import canonical_resources
from setpoint.resources.models.apps_v1 import StatefulSet, StatefulSetSpec
from setpoint.resources.models.core_v1 import (
    ConfigMap,
    ConfigMapVolumeSource,
    Container,
    ContainerPort,
    EmptyDirVolumeSource,
    EnvVar,
    PersistentVolumeClaim,
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

APP = "prometheus"
PORT = 9090
DATA_DIR = "/prometheus"
DATA_VOLUME = "prometheus-db"


def name_of(prometheus: Prometheus) -> str:
    return f"prometheus-{prometheus.metadata.name}"


def labels(prometheus: Prometheus) -> dict[str, str]:
    return podparts.labels(APP, str(prometheus.metadata.name))


def selector(prometheus: Prometheus) -> dict[str, str]:
    return podparts.selector(APP, str(prometheus.metadata.name))


def rule_config_map_name(prometheus: Prometheus, index: int) -> str:
    return f"{name_of(prometheus)}-rulefiles-{index}"


def config_secret(prometheus: Prometheus, text: str) -> Secret:
    return Secret(metadata=ObjectMeta(name=name_of(prometheus), labels=labels(prometheus)),
                  type="Opaque",
                  data={CONFIG_KEY: base64.b64encode(text.encode()).decode()})


def rule_config_map(prometheus: Prometheus, index: int, files: dict[str, str]) -> ConfigMap:
    return ConfigMap(metadata=ObjectMeta(name=rule_config_map_name(prometheus, index),
                                         labels=labels(prometheus)), data=files)


def service(prometheus: Prometheus) -> Service:
    return Service(
        metadata=ObjectMeta(name=name_of(prometheus),
                            labels={**labels(prometheus), "operated-prometheus": "true"}),
        spec=ServiceSpec(cluster_ip="None", selector=selector(prometheus),
                         ports=[ServicePort(name="web", port=PORT, protocol="TCP",
                                            target_port="web")]))


def args(prometheus: Prometheus, storage: Storage) -> list[str]:
    out = [f"--config.file={CONFIG_DIR}/{CONFIG_KEY}", f"--storage.tsdb.path={DATA_DIR}",
           f"--storage.tsdb.retention.time={storage.retention}",
           "--web.enable-lifecycle", f"--web.listen-address=0.0.0.0:{PORT}",
           "--web.route-prefix=/"]
    if storage.retention_size:
        out.append(f"--storage.tsdb.retention.size={storage.retention_size}")
    alert = prometheus.spec.rules.alert if prometheus.spec.rules else None
    for flag, value in (("for-outage-tolerance", alert and alert.for_outage_tolerance),
                        ("for-grace-period", alert and alert.for_grace_period),
                        ("resend-delay", alert and alert.resend_delay)):
        if value:
            out.append(f"--rules.alert.{flag}={value}")
    return out


def statefulset(prometheus: Prometheus, storage: Storage, rule_config_maps: list[str]
                ) -> StatefulSet:
    spec = prometheus.spec
    mounts = [VolumeMount(name="config", mount_path=CONFIG_DIR, read_only=True)]
    mounts += [VolumeMount(name=cm, mount_path=f"{RULES_DIR}/{cm}", read_only=True)
               for cm in rule_config_maps]
    volumes = [Volume(name="config", secret=SecretVolumeSource(secret_name=name_of(
        prometheus)))]
    volumes += [Volume(name=cm, config_map=ConfigMapVolumeSource(name=cm))
                for cm in rule_config_maps]
    claims = None
    if spec.storage is not None and spec.storage.volume_claim_template is not None:
        claims = [PersistentVolumeClaim(metadata=ObjectMeta(name=DATA_VOLUME),
                                        spec=spec.storage.volume_claim_template.spec)]
    else:
        empty = (spec.storage.empty_dir if spec.storage is not None else None) or \
            EmptyDirVolumeSource(size_limit=storage.empty_dir_size_limit)
        volumes.append(Volume(name=DATA_VOLUME, empty_dir=empty))
    env = [EnvVar(name="GOMEMLIMIT", value=str(storage.gomemlimit))] \
        if storage.gomemlimit else None
    server = Container(
        name="prometheus", image=spec.image or f"{DEFAULT_IMAGE}:{spec.version}",
        args=args(prometheus, storage), env=env,
        ports=[ContainerPort(name="web", container_port=PORT, protocol="TCP")],
        resources=canonical_resources(spec.resources),
        volume_mounts=[*mounts, VolumeMount(name=DATA_VOLUME, mount_path=DATA_DIR)],
        readiness_probe=podparts.http_probe("/-/ready", period=5),
        liveness_probe=podparts.http_probe("/-/healthy", period=10, failures=6))
    watched = [f"{CONFIG_DIR}/{CONFIG_KEY}"] + [f"{RULES_DIR}/{cm}/*.yaml"
                                                 for cm in rule_config_maps]
    reloader = podparts.reloader(PORT, watched, mounts)
    return StatefulSet(
        metadata=ObjectMeta(name=name_of(prometheus), labels=labels(prometheus)),
        spec=StatefulSetSpec(
            replicas=spec.replicas, service_name=name_of(prometheus),
            pod_management_policy="Parallel",
            selector=LabelSelector(match_labels=selector(prometheus)),
            volume_claim_templates=claims,
            template=PodTemplateSpec(
                metadata=ObjectMeta(labels=labels(prometheus)),
                spec=PodSpec(containers=[server, reloader], volumes=volumes,
                             node_selector=spec.node_selector))))
