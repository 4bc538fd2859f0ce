"""The Alertmanager controller. Each reconcile:

1. reads the configuration from the user's Secret (``configSecret``, default
   ``alertmanager-<name>``; without one, a configuration that drops every alert);
2. validates it (:func:`operators.monitoring.validation.alertmanager_errors`); an invalid
   one is not written: the replicas keep the last good one and ``Reconciled`` says why;
3. writes it to the generated Secret the pods mount (their reloader POSTs ``/-/reload``),
   then the headless Service and the StatefulSet;
4. asks a ready replica for the gossip cluster (``/api/v2/status``) and writes the peers
   Alertmanager itself reports into the status; polls again after :data:`POLL_SECONDS`.
"""

from __future__ import annotations

import base64
import binascii

from operators.monitoring import alertmanager_objects as objects
from operators.monitoring import podparts, serverapi
from operators.monitoring.known import Known
from operators.monitoring.promconfig import digest
from operators.monitoring.resources.alertmanager import Alertmanager, Peer
from operators.monitoring.validation import alertmanager_errors
from setpoint.resources.models.apps_v1 import StatefulSet
from setpoint.resources.models.core_v1 import Pod, Secret, Service
from setpoint.runtime import Context, Controller, Result

POLL_SECONDS = 10.0
known = Known()

alertmanager = (Controller.for_(Alertmanager, name="alertmanager")
                .owns(StatefulSet, Service, Secret)
                .watches(Secret, map_func=known.in_namespace)
                .reads(Pod))


def configuration(ctx: Context[Alertmanager], am: Alertmanager) -> tuple[str | None, str]:
    """(the configuration text or None, where it came from / why there is none)."""
    name = objects.user_secret_name(am)
    secret = ctx.get(Secret, name)
    if secret is None:
        if am.spec.config_secret:
            return None, f"Secret {name} does not exist"
        return objects.DEFAULT_CONFIG, "the default configuration (no Secret " \
            f"{name})"
    raw = (secret.data or {}).get(objects.CONFIG_KEY)
    if raw is None:
        return None, f"Secret {name} has no key {objects.CONFIG_KEY}"
    try:
        return base64.b64decode(raw).decode(), f"Secret {name}"
    except (binascii.Error, UnicodeDecodeError):
        return None, f"Secret {name}: {objects.CONFIG_KEY} is not UTF-8 text"


@alertmanager.reconcile
async def reconcile(ctx: Context[Alertmanager], am: Alertmanager) -> Result:
    namespace, name = str(am.metadata.namespace), str(am.metadata.name)
    known.add(namespace, name)
    if ctx.deleting:
        known.discard(namespace, name)
        return Result()
    text, source = configuration(ctx, am)
    problem = source if text is None else await alertmanager_errors(text)
    am.status.observed_generation = am.metadata.generation
    if text is None or problem is not None:
        ctx.set_condition("Reconciled", False, reason="InvalidConfiguration",
                          message=f"not rolled out: {problem}", obj=am)
        await ctx.update_status(am)
        return Result(requeue_after=POLL_SECONDS)
    key = digest(text)
    await ctx.apply(objects.generated_secret(am, text))
    await ctx.apply(objects.service(am))
    statefulset = await ctx.apply(objects.statefulset(am))
    ctx.set_condition("Reconciled", True, reason="ConfigurationAccepted",
                      message=f"configuration {key} from {source}", obj=am)
    await record_status(ctx, am, statefulset, key)
    return Result(requeue_after=POLL_SECONDS)


async def record_status(ctx: Context[Alertmanager], am: Alertmanager,
                        statefulset: StatefulSet, key: str) -> None:
    status = am.status
    status.configuration_hash = key
    status.selector = podparts.selector_string(objects.selector(am))
    sts = statefulset.status
    status.replicas = (sts.replicas or 0) if sts else 0
    status.available_replicas = (sts.available_replicas or sts.ready_replicas or 0) \
        if sts else 0
    pods = podparts.ready_ips(ctx.list(Pod, labels=objects.selector(am)))
    for ip in pods[:1]:
        cluster = await serverapi.alertmanager_cluster(f"{ip}:{objects.PORT}")
        if cluster is not None:
            status.cluster_status = str(cluster.get("status"))
            status.peers = sorted((Peer(name=str(p.get("name")), address=str(p.get("address")))
                                   for p in cluster.get("peers") or ()),
                                  key=lambda p: p.address)
    wanted = am.spec.replicas
    peers = len(status.peers or ())
    if wanted == 0:
        ctx.set_condition("Available", False, reason="ScaledToZero", message="", obj=am)
    elif not pods:
        ctx.set_condition("Available", False, reason="NoReplicaReady",
                          message=f"none of the {wanted} Alertmanager pods is ready", obj=am)
    elif wanted > 1 and peers < wanted:
        ctx.set_condition("Available", True, reason="ClusterForming",
                          message=f"{len(pods)}/{wanted} ready; the cluster reports "
                          f"{peers} peer(s)", obj=am)
    else:
        ctx.set_condition("Available", True, reason="ClusterReady",
                          message=f"{len(pods)}/{wanted} ready, {peers} peer(s)", obj=am)
    await ctx.update_status(am)
