"""The process runtime: real programs for known images, each pod on its own loopback address.

``WorkloadSettings(runtime="process")`` (``setpoint cluster up --runtime process``) selects
it. Settings in ``WorkloadSettings.extra``:

=====================================  ==========================================================
``kubelet.root-dir``                   where pods' directories, logs and volumes live (default: a
                                       fresh temporary directory, removed at stop)
``kubelet.image-catalog``              a YAML/JSON file of extra image entries (see ``catalog``)
``kubelet.volume-resync``              how often ConfigMap/Secret volumes are refreshed (``1s``)
``kubelet.container-log-max-size``     a container log's size before it is rotated, as the
                                       kubelet's ``containerLogMaxSize`` (``10Mi``; negative: never)
``kubelet.container-log-max-files``    log files kept per container, the current one included
                                       (``containerLogMaxFiles``, 5)
=====================================  ==========================================================

See docs/process-runtime.md for the catalog, the limits and how to add an image.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from setpoint.client import ApiError, Kind, NotFoundError
from setpoint.machinery.quantity import parse_quantity
from setpoint.workloads.kubelet.annotations import parse_duration
from setpoint.workloads.kubelet.process.catalog import ImageCatalog, ImageEntry, LaunchContext
from setpoint.workloads.kubelet.process.logs import LogRotatePolicy
from setpoint.workloads.kubelet.process.runtime import ProcessRuntime
from setpoint.workloads.kubelet.process.server import KubeletServer
from setpoint.workloads.loopbacknet import LoopbackNetwork

if TYPE_CHECKING:
    from setpoint.runtime import Manager
    from setpoint.workloads.settings import WorkloadSettings

__all__ = ["ImageCatalog", "ImageEntry", "KubeletServer", "LaunchContext", "ProcessRuntime",
           "attach", "from_settings"]

log = logging.getLogger("setpoint.workloads.kubelet.process")
NODE = Kind("v1", "Node")
PV = Kind("v1", "PersistentVolume")
RUNTIME_VERSION = "setpoint-process://1.0"


def from_settings(settings: WorkloadSettings) -> ProcessRuntime:
    extra = settings.extra
    root = extra.get("kubelet.root-dir")
    catalog = ImageCatalog()
    if extra.get("kubelet.image-catalog"):
        catalog.load(Path(extra["kubelet.image-catalog"]))
    policy = LogRotatePolicy(
        max_size=parse_quantity(extra.get("kubelet.container-log-max-size", "10Mi")).value(),
        max_files=int(extra.get("kubelet.container-log-max-files", "5")))
    return ProcessRuntime(Path(root) if root else None, catalog, log_policy=policy)


def attach(manager: Manager, runtime: ProcessRuntime, settings: WorkloadSettings) -> None:
    """Give the runtime its API reads and add its background work to ``manager``: volume
    refreshes, each node's kubelet endpoint, volume directories of deleted PVs, and the
    cleanup of every process when the manager stops."""
    client = manager.client

    async def fetch(kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return await client.get(Kind("v1", kind), name, namespace=namespace)
        except NotFoundError:
            return None

    async def request_token(namespace: str, account: str, source: Mapping[str, Any]) -> str:
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"audiences": [source["audience"]] if source.get("audience") else [],
                         "expirationSeconds": int(source.get("expirationSeconds") or 3607)}}
        answer = await client.request(
            "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
            body=body)
        return str(((answer or {}).get("status") or {}).get("token") or "")

    runtime.bind(fetch, request_token, client.config.server)
    runtime.cluster_dns = LoopbackNetwork(settings.loopback_network).cluster_dns
    resync = parse_duration(settings.extra.get("kubelet.volume-resync", "1s"))
    servers: dict[str, KubeletServer] = {}

    async def run(_: Manager) -> None:
        try:
            while True:
                await asyncio.sleep(resync)
                with contextlib.suppress(ApiError, OSError):
                    await runtime.refresh_volumes()
                    await _serve_nodes(manager, runtime, servers)
                    await _reclaim(manager, runtime)
        finally:
            for server in servers.values():
                await server.stop()
            await runtime.close()

    manager.add_runnable(run)


async def _serve_nodes(manager: Manager, runtime: ProcessRuntime,
                       servers: dict[str, KubeletServer]) -> None:
    """Start the endpoint of each node that has none, and report its port on the node."""
    for node in list(manager.cache.store_for(NODE, create=True)):
        name = str(node["metadata"]["name"])
        if name in servers:
            continue
        address = next((a.get("address") for a in (node.get("status") or {}).get(
            "addresses") or () if a.get("type") == "InternalIP"), None)
        if not address or not str(address).startswith("127."):
            continue  # nothing listens beyond loopback
        server = KubeletServer(runtime, name, str(address))
        try:
            port = await server.start()
        except OSError as exc:
            log.warning("kubelet endpoint of node %s not served: %s", name, exc)
            continue
        servers[name] = server
        # the runtime is reported too: the API server proxies streams only to real ones
        await manager.client.patch_status(NODE, name, {"status": {
            "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
            "nodeInfo": {"containerRuntimeVersion": RUNTIME_VERSION}}})
        runtime.node_served(name)


async def _reclaim(manager: Manager, runtime: ProcessRuntime) -> None:
    """Remove the directory of each PersistentVolume that no longer exists (a claim's
    volume deleted by its ``Delete`` reclaim policy takes its data with it)."""
    root = runtime.root / "volumes"
    if not root.is_dir():
        return
    present = list(root.iterdir())  # before the list: a directory made after it is kept
    alive = {str(pv["metadata"]["name"]) for pv in await _list_volumes(manager)}
    for directory in present:
        if directory.name not in alive:
            shutil.rmtree(directory, ignore_errors=True)


async def _list_volumes(manager: Manager) -> list[dict[str, Any]]:
    return list((await manager.client.list(PV)).items)
