"""The Available, Progressing and Degraded conditions of a Memcached, from what runs.

- Available: clients get answers: at least one backend is in the configuration and at
  least one proxy is available.
- Progressing: the world is moving towards the spec: backends starting, updating or
  going away, or the proxies rolling out a new configuration.
- Degraded: something needs a person: the first pod problem found (Unschedulable with the
  scheduler's message, ImagePullBackOff, CrashLoopBackOff …), proxies first when they
  have one, since without a proxy nothing is served.

Each is a (status, reason, message) triple; reasons are CamelCase words to act on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from operators.memcached.pods import BackendPods, Problem
from operators.memcached.resource import Memcached
from setpoint.resources.models.apps_v1 import Deployment, StatefulSet


@dataclass(frozen=True)
class Verdict:
    status: bool
    reason: str
    message: str


def proxy_available(deployment: Deployment | None) -> int:
    status = deployment.status if deployment is not None else None
    return (status.available_replicas or 0) if status is not None else 0


def proxy_rolled_out(deployment: Deployment | None, replicas: int) -> bool:
    """``kubectl rollout status``: the controller saw the latest spec, every pod runs the
    current template and is available, and no pod of an older template is left."""
    if deployment is None or deployment.status is None:
        return False
    status = deployment.status
    return ((status.observed_generation or 0) >= (deployment.metadata.generation or 0)
            and (status.updated_replicas or 0) == replicas
            and (status.replicas or 0) == replicas
            and (status.available_replicas or 0) == replicas)


def backends_rolled_out(statefulset: StatefulSet | None, replicas: int) -> bool:
    if statefulset is None or statefulset.status is None:
        return False
    status = statefulset.status
    current = status.update_revision is None or status.current_revision == status.update_revision
    return ((status.observed_generation or 0) >= (statefulset.metadata.generation or 0)
            and (status.replicas or 0) == replicas
            and (status.ready_replicas or 0) == replicas and current)


def available(mc: Memcached, backends: BackendPods, deployment: Deployment | None) -> Verdict:
    proxies = proxy_available(deployment)
    if not backends.ready:
        return Verdict(False, "NoBackendReady",
                       f"none of the {mc.spec.replicas} memcached pods is ready")
    if proxies == 0:
        return Verdict(False, "ProxyUnavailable", "no mcrouter pod is available yet")
    return Verdict(True, "BackendsAndProxyReady",
                   f"{backends.ready_count}/{mc.spec.replicas} memcached pods behind "
                   f"{proxies} mcrouter pod(s)")


def progressing(mc: Memcached, backends: BackendPods, statefulset: StatefulSet | None,
                deployment: Deployment | None, configuration: str) -> Verdict:
    wanted = mc.spec.replicas
    if backends.existing < wanted:
        return Verdict(True, "CreatingBackends",
                       f"{backends.existing}/{wanted} memcached pods exist")
    if backends.ready_count < wanted:
        return Verdict(True, "WaitingForBackends",
                       f"{backends.ready_count}/{wanted} memcached pods are ready")
    if not backends_rolled_out(statefulset, wanted):
        return Verdict(True, "UpdatingBackends",
                       f"StatefulSet {statefulset.metadata.name if statefulset else ''} "
                       "is rolling out its pods")
    if not proxy_rolled_out(deployment, mc.spec.proxy.replicas):
        return Verdict(True, "RollingOutProxy",
                       f"mcrouter pods are moving to configuration {configuration}")
    return Verdict(False, "Complete",
                   f"{wanted} memcached pods ready; mcrouter runs configuration "
                   f"{configuration}")


def degraded(backends: BackendPods, proxy_problems: Sequence[Problem]) -> Verdict:
    problems = [*proxy_problems, *backends.problems]
    if not problems:
        return Verdict(False, "AsExpected", "")
    first = problems[0]
    more = f" (and {len(problems) - 1} more pod(s) with problems)" if len(problems) > 1 else ""
    return Verdict(True, first.reason, first.message + more)
