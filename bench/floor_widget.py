"""The floor of the operator benchmark: the Widget operator's writes and nothing else.

    python bench/floor_widget.py KUBECONFIG

One watch of Widgets; for every new generation, 16 concurrent workers create the ConfigMap
(or merge-patch its message) and merge-patch the status. No cache, no retries, no
framework: the least any operator must send and receive, over plain aiohttp.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

CONCURRENCY = 16
WIDGETS = "/apis/bench.setpoint.dev/v1/widgets"
MERGE = "application/merge-patch+json"


async def main(kubeconfig: Path) -> None:
    config = yaml.safe_load(kubeconfig.read_text())
    server = config["clusters"][0]["cluster"]["server"]
    token = config["users"][0]["user"]["token"]
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    handled: dict[str, int] = {}  # uid -> generation written
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
                widget = await queue.get()
                try:
                    await handle(widget)
                except (aiohttp.ClientError, RuntimeError) as exc:
                    print(f"floor: {exc}", file=sys.stderr)  # no retries: the run shows it

        async def handle(widget: dict[str, Any]) -> None:
            meta = widget["metadata"]
            ns, name, generation = meta["namespace"], meta["name"], meta["generation"]
            data = {"message": widget["spec"].get("message", ""),
                    "size": str(widget["spec"].get("size", 1))}
            cms = f"/api/v1/namespaces/{ns}/configmaps"
            if generation == 1:
                await write("POST", cms, {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": f"{name}-cfg", "ownerReferences": [{
                        "apiVersion": "bench.setpoint.dev/v1", "kind": "Widget",
                        "name": name, "uid": meta["uid"], "controller": True,
                        "blockOwnerDeletion": True}]},
                    "data": data}, "application/json")
            else:
                await write("PATCH", f"{cms}/{name}-cfg", {"data": data}, MERGE)
            await write("PATCH", f"/apis/bench.setpoint.dev/v1/namespaces/{ns}/widgets/"
                        f"{name}/status", {"status": {"ready": True,
                                                      "observedGeneration": generation}},
                        MERGE)

        workers = [asyncio.create_task(worker()) for _ in range(CONCURRENCY)]
        resource_version = ""
        try:
            while True:
                params = {"watch": "true", "allowWatchBookmarks": "true"}
                if resource_version:
                    params["resourceVersion"] = resource_version
                async with session.get(WIDGETS, params=params,
                                       timeout=aiohttp.ClientTimeout(total=None)) as resp:
                    async for line in resp.content:
                        event = orjson.loads(line)
                        obj = event["object"]
                        resource_version = obj["metadata"]["resourceVersion"]
                        if event["type"] not in ("ADDED", "MODIFIED"):
                            continue
                        uid, generation = obj["metadata"]["uid"], obj["metadata"]["generation"]
                        if handled.get(uid, 0) < generation:
                            handled[uid] = generation
                            queue.put_nowait(obj)
        finally:
            for task in workers:
                task.cancel()


def run() -> None:
    loop = asyncio.new_event_loop()
    task = loop.create_task(main(Path(sys.argv[1])))
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        loop.run_until_complete(task)


if __name__ == "__main__":
    run()
