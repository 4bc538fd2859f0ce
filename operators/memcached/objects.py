"""The objects a Memcached owns, as functions of its spec (and of the proxy configuration).

For a Memcached named ``m``:

- ``StatefulSet m-memcached`` and its headless ``Service m-memcached``: the backends, pods
  ``m-memcached-0`` … with stable names and ordinals (the order of the proxy's pools);
- ``ConfigMap m-mcrouter-<hash>``: one immutable configuration per content;
- ``Deployment m-mcrouter``: the proxies, mounting the current configuration, so a new
  configuration is a new pod template and rolls the proxies;
- ``Service m``: what clients use, ``m:11211``, in front of the proxies.

The namespace and the owner reference are added by ``ctx.apply``.
"""

from __future__ import annotations

from operators.memcached.mcrouter import MEMCACHED_PORT, digest
from operators.memcached.resource import Memcached
from setpoint.machinery.quantity import Quantity, QuantityError
from setpoint.resources import canonical_resources
from setpoint.resources.models.apps_v1 import (
    Deployment,
    DeploymentSpec,
    DeploymentStrategy,
    RollingUpdateDeployment,
    StatefulSet,
    StatefulSetSpec,
)
from setpoint.resources.models.core_v1 import (
    ConfigMap,
    ConfigMapVolumeSource,
    Container,
    ContainerPort,
    PodSpec,
    PodTemplateSpec,
    Probe,
    ResourceRequirements,
    Service,
    ServicePort,
    ServiceSpec,
    TCPSocketAction,
    Volume,
    VolumeMount,
)
from setpoint.resources.models.meta_v1 import LabelSelector, ObjectMeta

GROUP = "cache.setpoint.dev"
INSTANCE = "app.kubernetes.io/instance"
NAME = "app.kubernetes.io/name"
COMPONENT = "app.kubernetes.io/component"
MANAGED_BY = "app.kubernetes.io/managed-by"
OPERATOR = "memcached-operator"
CONFIG_ANNOTATION = f"{GROUP}/configuration"

PROXY_PORT = 5000
CONFIG_DIR = "/etc/mcrouter"
CONFIG_KEY = "config.json"
DEFAULT_CACHE_MB = 64
"""memcached's own default cache size, used when no memory limit is set."""


def backend_name(mc: Memcached) -> str:
    return f"{mc.metadata.name}-memcached"


def proxy_name(mc: Memcached) -> str:
    return f"{mc.metadata.name}-mcrouter"


def config_name(mc: Memcached, text: str) -> str:
    """The ConfigMap name of a rendered configuration: changes exactly when it does."""
    return f"{proxy_name(mc)}-{digest(text)}"


def labels(mc: Memcached, name: str, component: str) -> dict[str, str]:
    return {NAME: name, INSTANCE: str(mc.metadata.name), COMPONENT: component,
            MANAGED_BY: OPERATOR}


def backend_selector(mc: Memcached) -> dict[str, str]:
    return {NAME: "memcached", INSTANCE: str(mc.metadata.name)}


def proxy_selector(mc: Memcached) -> dict[str, str]:
    return {NAME: "mcrouter", INSTANCE: str(mc.metadata.name)}


def config_selector(mc: Memcached) -> dict[str, str]:
    return {NAME: "mcrouter", INSTANCE: str(mc.metadata.name), COMPONENT: "proxy-config"}


def selector_string(selector: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))


def cache_megabytes(resources: ResourceRequirements | None) -> int:
    """memcached's ``--memory-limit``: 85% of the container's memory limit (the rest is
    connection buffers and the process itself), or memcached's default without a limit."""
    limit = (resources.limits or {}).get("memory") if resources is not None else None
    if limit is None:
        return DEFAULT_CACHE_MB
    try:
        mib = Quantity.from_json(limit).value() // (1024 * 1024)
    except QuantityError:
        return DEFAULT_CACHE_MB
    return max(16, int(mib * 0.85))


def _pod_spec(mc: Memcached, container: Container, volumes: list[Volume] | None = None
              ) -> PodSpec:
    # scheduling intent reaches every pod: the stack is placed as one unit
    return PodSpec(containers=[container], node_selector=mc.spec.node_selector,
                   tolerations=mc.spec.tolerations, volumes=volumes)


def _tcp_probe(port: str, *, period: int) -> Probe:
    return Probe(tcp_socket=TCPSocketAction(port=port), period_seconds=period)


def headless_service(mc: Memcached) -> Service:
    """The StatefulSet's governing Service: a DNS name per backend pod, no virtual IP."""
    return Service(
        metadata=ObjectMeta(name=backend_name(mc), labels=labels(mc, "memcached", "cache")),
        spec=ServiceSpec(cluster_ip="None", selector=backend_selector(mc),
                         publish_not_ready_addresses=True,
                         ports=[ServicePort(name="memcache", port=MEMCACHED_PORT, protocol="TCP",
                                            target_port="memcache")]))


def statefulset(mc: Memcached) -> StatefulSet:
    """The memcached pods: ``replicas`` of them, started in parallel (a cache needs no
    ordered start), each with the spec's resources, node selector and tolerations."""
    container = Container(
        name="memcached", image=f"memcached:{mc.spec.version}",
        args=[f"--port={MEMCACHED_PORT}",
              f"--memory-limit={cache_megabytes(mc.spec.resources)}"],
        ports=[ContainerPort(name="memcache", container_port=MEMCACHED_PORT,
                             protocol="TCP")],
        resources=canonical_resources(mc.spec.resources),
        readiness_probe=_tcp_probe("memcache", period=5),
        liveness_probe=_tcp_probe("memcache", period=10))
    return StatefulSet(
        metadata=ObjectMeta(name=backend_name(mc), labels=labels(mc, "memcached", "cache")),
        spec=StatefulSetSpec(
            replicas=mc.spec.replicas, service_name=backend_name(mc),
            pod_management_policy="Parallel",
            selector=LabelSelector(match_labels=backend_selector(mc)),
            template=PodTemplateSpec(
                metadata=ObjectMeta(labels=labels(mc, "memcached", "cache")),
                spec=_pod_spec(mc, container))))


def config_map(mc: Memcached, text: str) -> ConfigMap:
    """One mcrouter configuration, immutable: a change is a new ConfigMap."""
    return ConfigMap(
        metadata=ObjectMeta(name=config_name(mc, text),
                            labels=labels(mc, "mcrouter", "proxy-config")),
        data={CONFIG_KEY: text}, immutable=True)


def proxy_deployment(mc: Memcached, configuration: str) -> Deployment:
    """The mcrouter pods, reading the ConfigMap ``configuration``; a surge-only rollout
    keeps every proxy serving while a new configuration rolls out."""
    container = Container(
        name="mcrouter", image=mc.spec.proxy.image, command=["mcrouter"],
        args=[f"--port={PROXY_PORT}", f"--config-file={CONFIG_DIR}/{CONFIG_KEY}"],
        ports=[ContainerPort(name="mcrouter", container_port=PROXY_PORT, protocol="TCP")],
        resources=canonical_resources(mc.spec.resources),
        volume_mounts=[VolumeMount(name="config", mount_path=CONFIG_DIR, read_only=True)],
        readiness_probe=_tcp_probe("mcrouter",
                                   period=mc.spec.proxy.readiness_period_seconds),
        liveness_probe=_tcp_probe("mcrouter", period=10))
    volume = Volume(name="config", config_map=ConfigMapVolumeSource(name=configuration))
    return Deployment(
        metadata=ObjectMeta(name=proxy_name(mc), labels=labels(mc, "mcrouter", "proxy")),
        spec=DeploymentSpec(
            replicas=mc.spec.proxy.replicas,
            selector=LabelSelector(match_labels=proxy_selector(mc)),
            strategy=DeploymentStrategy(type="RollingUpdate", rolling_update=(
                RollingUpdateDeployment(max_surge=1, max_unavailable=0))),
            template=PodTemplateSpec(
                metadata=ObjectMeta(labels=labels(mc, "mcrouter", "proxy"),
                                    annotations={CONFIG_ANNOTATION: configuration}),
                spec=_pod_spec(mc, container, [volume]))))


def proxy_service(mc: Memcached) -> Service:
    """What clients connect to: ``<name>:11211``, spread over the proxies."""
    return Service(
        metadata=ObjectMeta(name=str(mc.metadata.name), labels=labels(mc, "mcrouter", "proxy")),
        spec=ServiceSpec(selector=proxy_selector(mc),
                         ports=[ServicePort(name="memcache", port=MEMCACHED_PORT, protocol="TCP",
                                            target_port="mcrouter")]))
