"""The floor of the operator benchmark: the least a Widget controller must do.

    python bench/floor_widget.py KUBECONFIG [--writes-only]

A Widget controller owns its ConfigMaps, so besides the Widgets it must watch them: a
ConfigMap deleted or edited behind its back has to be written again (what a controller's
``Owns`` watch is for, and what the Setpoint operator's ConfigMap informer costs the server
and the process). So the floor watches Widgets and ConfigMaps (all namespaces, as the
operator's informers do); for every new generation of a Widget, 16 concurrent workers
create the ConfigMap (or merge-patch its message) and merge-patch the status; a ConfigMap
event whose data differs from its owner's wanted data, or a deletion, queues the owner
again. No cache beyond the wanted data, no retries, no framework: the least any owning
controller must send and receive, over plain aiohttp.

``--writes-only`` leaves the ConfigMap watch out: the floor of the benchmark's first passes
(up to the twelfth), which receives about a third fewer watch events than any controller
that owns what it writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

CONCURRENCY = 16
WIDGETS = "/apis/bench.setpoint.dev/v1/widgets"
CONFIGMAPS = "/api/v1/configmaps"
MERGE = "application/merge-patch+json"
WIDGET_API = "bench.setpoint.dev/v1"


def wanted_data(widget: dict[str, Any]) -> dict[str, str]:
    spec = widget.get("spec") or {}
    return {"message": spec.get("message", ""), "size": str(spec.get("size", 1))}


def owner_of(config_map: dict[str, Any]) -> str | None:
    """The name of the Widget controlling ``config_map`` (None: not a Widget's)."""
    for ref in config_map["metadata"].get("ownerReferences") or ():
        if ref.get("controller") and ref.get("kind") == "Widget" \
                and ref.get("apiVersion") == WIDGET_API:
            return str(ref["name"])
    return None


async def main(kubeconfig: Path, writes_only: bool) -> None:
    config = yaml.safe_load(kubeconfig.read_text())
    server = config["clusters"][0]["cluster"]["server"]
    token = config["users"][0]["user"]["token"]
    queue: asyncio.Queue[tuple[dict[str, Any], bool]] = asyncio.Queue()
    handled: dict[str, int] = {}  # uid -> generation written
    widgets: dict[tuple[str, str], dict[str, Any]] = {}  # (namespace, name) -> last seen
    async with aiohttp.ClientSession(
            base_url=server, headers={"Authorization": f"Bearer {token}"},
            connector=aiohttp.TCPConnector(limit=64)) as session:

        async def write(method: str, path: str, body: Any, content_type: str) -> None:
            async with session.request(method, path, data=orjson.dumps(body),
                                       headers={"Content-Type": content_type}) as resp:
                await resp.read()
                if resp.status >= 300:
                    raise RuntimeError(f"{method} {path}: {resp.status}")

        async def worker() -> None:
            while True:
                widget, create = await queue.get()
                try:
                    await handle(widget, create)
                except (aiohttp.ClientError, RuntimeError) as exc:
                    print(f"floor: {exc}", file=sys.stderr)  # no retries: the run shows it

        async def handle(widget: dict[str, Any], create: bool) -> None:
            meta = widget["metadata"]
            ns, name, generation = meta["namespace"], meta["name"], meta["generation"]
            data = wanted_data(widget)
            cms = f"/api/v1/namespaces/{ns}/configmaps"
            if create:
                await write("POST", cms, {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": f"{name}-cfg", "ownerReferences": [{
                        "apiVersion": WIDGET_API, "kind": "Widget",
                        "name": name, "uid": meta["uid"], "controller": True,
                        "blockOwnerDeletion": True}]},
                    "data": data}, "application/json")
            else:
                await write("PATCH", f"{cms}/{name}-cfg", {"data": data}, MERGE)
            await write("PATCH", f"/apis/bench.setpoint.dev/v1/namespaces/{ns}/widgets/"
                        f"{name}/status", {"status": {"ready": True,
                                                      "observedGeneration": generation}},
                        MERGE)

        def on_widget(event_type: str, obj: dict[str, Any]) -> None:
            meta = obj["metadata"]
            key = (meta["namespace"], meta["name"])
            if event_type == "DELETED":
                widgets.pop(key, None)  # its ConfigMap goes with it (owner reference)
                return
            widgets[key] = obj
            uid, generation = meta["uid"], meta["generation"]
            if handled.get(uid, 0) < generation:
                handled[uid] = generation
                queue.put_nowait((obj, generation == 1))

        def on_config_map(event_type: str, obj: dict[str, Any]) -> None:
            owner = owner_of(obj)
            if owner is None:
                return
            widget = widgets.get((obj["metadata"]["namespace"], owner))
            if widget is None:
                return
            if event_type == "DELETED":
                queue.put_nowait((widget, True))  # written again
            elif (obj.get("data") or {}) != wanted_data(widget):
                queue.put_nowait((widget, False))  # edited behind its back: put back

        async def follow(path: str, on_event: Callable[[str, dict[str, Any]], None]) -> None:
            resource_version = ""
            while True:
                params = {"watch": "true", "allowWatchBookmarks": "true"}
                if resource_version:
                    params["resourceVersion"] = resource_version
                async with session.get(path, params=params,
                                       timeout=aiohttp.ClientTimeout(total=None)) as resp:
                    async for line in resp.content:
                        event = orjson.loads(line)
                        obj = event["object"]
                        resource_version = obj["metadata"]["resourceVersion"]
                        if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                            on_event(event["type"], obj)

        workers = [asyncio.create_task(worker()) for _ in range(CONCURRENCY)]
        watches: list[Awaitable[None]] = [follow(WIDGETS, on_widget)]
        if not writes_only:
            watches.append(follow(CONFIGMAPS, on_config_map))
        try:
            await asyncio.gather(*watches)
        finally:
            for task in workers:
                task.cancel()


def run() -> None:
    loop = asyncio.new_event_loop()
    task = loop.create_task(main(Path(sys.argv[1]), "--writes-only" in sys.argv[2:]))
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        loop.run_until_complete(task)


if __name__ == "__main__":
    run()
