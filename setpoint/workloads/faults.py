"""Pod faults on demand, for tests and the CLI: asked for over the API, carried out by the
simulated kubelet.

Each helper writes an annotation on the pod (see
:mod:`setpoint.workloads.kubelet.annotations`) and, when ``wait`` is true, watches the pod
until the kubelet has carried it out, so they work from any client against any cluster that
runs Setpoint's kubelets.

    await faults.restart_container(client, "web-0", container="web")  # restartCount + 1
    await faults.fail_pod(client, "web-1", reason="Evicted")           # phase Failed
    await faults.delay_readiness(client, "web-2", "5s")
    await faults.pause_container(client, "web-3")                       # SIGSTOP: a hang
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

# not ``from ... import annotations``: the package's own ``from __future__ import
# annotations`` binds that name, so the submodule must be imported by its full path
import setpoint.workloads.kubelet.annotations as ann
from setpoint.client import Client, Kind, NotFoundError
from setpoint.machinery.objects import Obj

POD = Kind("v1", "Pod")
Check = Callable[[Obj], bool]


async def _annotate(client: Client, name: str, namespace: str,
                    values: Mapping[str, str | None]) -> Obj:
    return await client.patch(POD, name, {"metadata": {"annotations": dict(values)}},
                              namespace=namespace)


async def wait_for_pod(client: Client, name: str, namespace: str, check: Check,
                       timeout: float = 30.0) -> Obj:
    """The pod once ``check(pod)`` holds (read, then watched from there); raises
    ``TimeoutError`` after ``timeout`` seconds and ``NotFoundError`` if it is deleted."""
    async with asyncio.timeout(timeout):
        while True:
            pod = await client.get(POD, name, namespace=namespace)
            if check(pod):
                return pod
            rv = (pod.get("metadata") or {}).get("resourceVersion")
            async with client.watch(POD, namespace=namespace, name=name,
                                    resource_version=rv, timeout_seconds=60) as events:
                async for event_type, obj in events:
                    if event_type == "DELETED":
                        # the Status the apiserver answers a read of a deleted pod with
                        raise NotFoundError(404, "NotFound", f'pods "{name}" not found',
                                            name=name, kind="pods")
                    if event_type in ("ADDED", "MODIFIED") and check(obj):
                        return obj


def _statuses(pod: Obj) -> dict[str, Obj]:
    status = pod.get("status") or {}
    return {cs.get("name"): cs for cs in [*(status.get("initContainerStatuses") or ()),
                                          *(status.get("containerStatuses") or ())]}


def _terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


async def restart_container(client: Client, name: str, namespace: str = "default",
                            container: str | None = None, *, wait: bool = True,
                            timeout: float = 30.0) -> Obj:
    """Kill a container (all of them when ``container`` is None) and let the kubelet
    restart it: ``restartCount`` grows, ``lastState.terminated`` records the kill (exit code
    137), Ready drops and returns. With ``wait``, returns the pod once restarted (or
    terminal, when its restart policy forbids a restart)."""
    pod = await client.get(POD, name, namespace=namespace)
    before = _statuses(pod)
    names = [container] if container else [
        c.get("name") for c in (pod.get("spec") or {}).get("containers") or ()]
    if container and container not in before:
        raise ValueError(f"pod {namespace}/{name} has no container {container!r} with a status")
    pod = await _annotate(client, name, namespace, {ann.RESTART: container or "*"})
    if not wait:
        return pod

    def restarted(p: Obj) -> bool:
        if ann.RESTART in ((p.get("metadata") or {}).get("annotations") or {}):
            return False
        if _terminal(p):
            return True
        now = _statuses(p)
        return all(int((now.get(n) or {}).get("restartCount") or 0)
                   > int((before.get(n) or {}).get("restartCount") or 0)
                   and "running" in ((now.get(n) or {}).get("state") or {}) for n in names)

    return await wait_for_pod(client, name, namespace, restarted, timeout)


async def pause_container(client: Client, name: str, namespace: str = "default",
                          container: str | None = None, *, paused: bool = True) -> Obj:
    """Hang a container (all of them when ``container`` is None): on the process runtime
    its processes are stopped with SIGSTOP, so probes time out and clients wait, as with a
    real hang; ``paused=False`` continues them (SIGCONT). The simulated runtime has no
    process to stop and ignores it."""
    return await _annotate(client, name, namespace,
                           {ann.PAUSE: (container or "*") if paused else None})


async def fail_pod(client: Client, name: str, namespace: str = "default", *,
                   reason: str = "SimulatedFailure", message: str | None = None,
                   wait: bool = True, timeout: float = 30.0) -> Obj:
    """Fail the pod: its containers are killed and its phase becomes Failed with
    ``reason`` and ``message``. With ``wait``, returns the failed pod."""
    values: dict[str, str | None] = {ann.FAIL: reason or "SimulatedFailure"}
    if message:
        values[ann.FAIL_MESSAGE] = message
    pod = await _annotate(client, name, namespace, values)
    if not wait:
        return pod
    return await wait_for_pod(client, name, namespace, _terminal, timeout)


async def delay_readiness(client: Client, name: str, namespace: str = "default",
                          delay: float | str = "5s") -> Obj:
    """Make the pod's containers report ready only ``delay`` after they (re)start
    (seconds or a duration such as ``"2s"``). A container that started less than
    ``delay`` ago reports not ready until then."""
    text = f"{delay}s" if isinstance(delay, int | float) else str(delay)
    ann.parse_duration(text)  # reject a bad duration here rather than in the kubelet
    return await _annotate(client, name, namespace, {ann.READY_AFTER: text})


async def set_ready(client: Client, name: str, namespace: str = "default",
                    ready: bool = True) -> Obj:
    """``ready=False``: the pod's containers report not ready (a failing readiness
    probe) until called again with ``ready=True``."""
    return await _annotate(client, name, namespace, {ann.READY: None if ready else "false"})


async def set_usage(client: Client, name: str, namespace: str = "default", *,
                    cpu: str | None = None, memory: str | None = None) -> Obj:
    """Set the pod's simulated resource usage (``"250m"``, ``"128Mi"``), as
    ``kubectl top`` and PodMetrics report it; None leaves a value as it is."""
    values = {k: v for k, v in ((ann.USAGE_CPU, cpu), (ann.USAGE_MEMORY, memory)) if v}
    return await _annotate(client, name, namespace, values) if values else \
        await client.get(POD, name, namespace=namespace)
