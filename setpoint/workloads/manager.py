"""One Manager that runs the embedded cluster's nodes, scheduler, kubelets and controllers.

Every part is an ordinary client of the API server over HTTP, built with the SDK's runtime,
exactly as kube-scheduler, kube-controller-manager and kubelets are clients of a real one.
Each area module offers ``install(manager, settings)``, which adds its controllers and
background runnables to the manager.
"""

from __future__ import annotations

import importlib

from setpoint.client import Client
from setpoint.runtime import Manager, ManagerSettings
from setpoint.workloads.settings import WorkloadSettings

# area module -> the setting that turns it on
AREAS: tuple[tuple[str, str], ...] = (
    ("setpoint.workloads.nodes", "kubelet"),
    ("setpoint.workloads.scheduler", "scheduler"),
    ("setpoint.workloads.kubelet", "kubelet"),
    ("setpoint.workloads.controllers.deployment", "controllers"),
    ("setpoint.workloads.controllers.replicaset", "controllers"),
    ("setpoint.workloads.controllers.replicationcontroller", "controllers"),
    ("setpoint.workloads.controllers.statefulset", "controllers"),
    ("setpoint.workloads.controllers.daemonset", "controllers"),
    ("setpoint.workloads.controllers.job", "controllers"),
    ("setpoint.workloads.controllers.cronjob", "controllers"),
    ("setpoint.workloads.controllers.ttlafterfinished", "controllers"),
    ("setpoint.workloads.controllers.endpoints", "controllers"),
    ("setpoint.workloads.controllers.endpointslicemirroring", "controllers"),
    ("setpoint.workloads.controllers.volumes", "controllers"),
    ("setpoint.workloads.controllers.ephemeral", "controllers"),
    ("setpoint.workloads.controllers.disruption", "controllers"),
    ("setpoint.workloads.controllers.horizontal", "controllers"),
    ("setpoint.workloads.serviceproxy", "kubelet"),
    ("setpoint.workloads.clusterdns", "kubelet"),
)


PROCESS_RUNTIME_AREAS = frozenset({"setpoint.workloads.serviceproxy",
                                   "setpoint.workloads.clusterdns"})
"""Areas that install nothing unless the kubelets run real processes (their modules load
the process runtime and a DNS library: not imported for the simulated runtime)."""


def enabled_areas(settings: WorkloadSettings) -> list[str]:
    """The area modules these settings install, in order."""
    return [name for name, switch in AREAS if getattr(settings, switch)
            and (settings.runtime == "process" or name not in PROCESS_RUNTIME_AREAS)]


def build_manager(client: Client, settings: WorkloadSettings | None = None) -> Manager:
    """A manager with every enabled area installed (start it with ``await m.start()``)."""
    settings = settings or WorkloadSettings()
    manager = new_manager(client)
    install_areas(manager, settings, enabled_areas(settings))
    return manager


def new_manager(client: Client) -> Manager:
    """The workloads' manager with no area installed yet."""
    return Manager(client=client, settings=ManagerSettings(
        name="kube-controller-manager", max_concurrent_reconciles=16, record_events=True))


def install_areas(manager: Manager, settings: WorkloadSettings, areas: list[str]) -> None:
    """Install the area modules ``areas`` (names of :data:`AREAS`), in order, into
    ``manager``, started or not."""
    for module_name in areas:
        importlib.import_module(module_name).install(manager, settings)
