"""The ``Memcached`` custom resource (``setpoint generate crds operators.memcached.resource``).

::

    apiVersion: cache.setpoint.dev/v1
    kind: Memcached
    metadata: {name: sessions}
    spec:
      replicas: 4
      version: "1.6.29"
      topology: sharded
      replicasPerShard: 2          # 2 shards of 2 replicas each
      resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {cpu: 100m, memory: 128Mi}}
      proxy: {replicas: 2}
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from setpoint.resources import (
    ConditionedStatus,
    CustomResource,
    Model,
    PrinterColumn,
    Rule,
    Scale,
    rules,
)
from setpoint.resources.models.core_v1 import ResourceRequirements, Toleration

DEFAULT_VERSION = "1.6.29"
"""The memcached image tag used when the spec names none (``memcached:<version>``)."""

DEFAULT_PROXY_IMAGE = "jphalip/mcrouter:0.36.0"
"""mcrouter's image as the Helm ``stable/mcrouter`` chart publishes it; any image with an
``mcrouter`` binary on the PATH will do (the official Dockerfile builds one)."""

Topology = Literal["sharded", "replicated"]


class ProxySpec(Model):
    """The mcrouter proxy in front of the memcached pods."""

    replicas: int = Field(1, ge=1, description="Number of mcrouter pods.")
    image: str = Field(DEFAULT_PROXY_IMAGE, min_length=1,
                       description="The mcrouter image (it must have `mcrouter` on its PATH).")
    readiness_period_seconds: int = Field(
        5, ge=1, description="How often the kubelet probes each mcrouter pod's port for "
        "readiness: a configuration rollout replaces a pod only after its successor's "
        "first passing probe, so a shorter period rolls a new configuration out faster.")


@rules(Rule("self.topology == 'sharded' || self.replicasPerShard == 1",
            message="replicasPerShard applies only to the sharded topology"))
class MemcachedSpec(Model):
    """What a memcached pool should look like."""

    replicas: int = Field(3, ge=1, description="Number of memcached pods.")
    version: str = Field(DEFAULT_VERSION, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$",
                         description="The memcached version: the tag of the `memcached` image.")
    topology: Topology = Field(
        "sharded", description="`sharded`: every key lives on one pod, chosen by consistent "
        "hashing. `replicated`: every pod holds every key; writes go to all, reads to one.")
    replicas_per_shard: int = Field(
        1, ge=1, description="With the sharded topology, pods per shard: each shard is a "
        "replicated group of this many consecutive pods (the last shard may have fewer).")
    resources: ResourceRequirements | None = Field(
        None, description="Requests and limits of every container (memcached and mcrouter); "
        "requests equal to limits give the pods the Guaranteed QoS class. The memory limit "
        "also sizes memcached's cache.")
    node_selector: dict[str, str] | None = Field(
        None, description="Node labels every pod (memcached and mcrouter) must match.")
    tolerations: list[Toleration] | None = Field(
        None, description="Tolerations of every pod (memcached and mcrouter).")
    proxy: ProxySpec = Field(default_factory=ProxySpec,
                             description="The mcrouter proxy Deployment.")

    def shard_count(self) -> int:
        """How many shards ``replicas`` pods make (1 for the replicated topology)."""
        if self.topology == "replicated":
            return 1
        return -(-self.replicas // self.replicas_per_shard)


class MemcachedStatus(ConditionedStatus):
    """What the operator last saw and did (conditions: Available, Progressing, Degraded)."""

    replicas: int = Field(0, description="memcached pods that exist and are wanted.")
    ready_replicas: int = Field(0, description="memcached pods that are ready.")
    selector: str | None = Field(None, description="The label selector of the memcached pods "
                                 "(for the scale subresource).")
    backends: list[str] | None = Field(None, description="The `host:port` of every backend "
                                       "in the current proxy configuration, in pool order.")
    configuration: str | None = Field(None, description="The ConfigMap holding the current "
                                      "mcrouter configuration.")
    previous_configuration: str | None = Field(
        None, description="The configuration before the current one (kept for rollbacks).")
    proxy_ready_replicas: int = Field(0, description="mcrouter pods that are ready.")


class Memcached(CustomResource, group="cache.setpoint.dev", version="v1", short_names=["mc"],
                categories=["all"],
                printer_columns=[
                    PrinterColumn("Replicas", "integer", ".spec.replicas"),
                    PrinterColumn("Ready", "integer", ".status.readyReplicas"),
                    PrinterColumn("Topology", "string", ".spec.topology"),
                    PrinterColumn("Per Shard", "integer", ".spec.replicasPerShard",
                                  priority=1),
                    PrinterColumn("Configuration", "string", ".status.configuration",
                                  priority=1),
                    PrinterColumn.age(),
                ],
                scale=Scale(".spec.replicas", ".status.replicas", ".status.selector"),
                rules=[Rule("self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') "
                            "&& size(self.metadata.name) <= 40",
                            message="the name must be a DNS label of at most 40 characters "
                            "(it names a Service, and the pods' names add to it)")]):
    """A memcached pool behind an mcrouter proxy: clients talk to the Service named like the
    Memcached on port 11211, and never change when backends come and go."""

    spec: MemcachedSpec = Field(default_factory=MemcachedSpec)
    status: MemcachedStatus = MemcachedStatus()
