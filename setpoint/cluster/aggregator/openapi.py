"""OpenAPI v3 of aggregated APIs: each remote APIService's ``/openapi/v3`` paths, proxied.

As kube-aggregator's v3 ``specProxier`` (pkg/controllers/openapiv3/aggregator/aggregator.go,
1.32): the root document of every remote APIService's backend (``GET /openapi/v3``) is
downloaded when the APIService changes and every minute, its paths join the server's own in
``/openapi/v3`` as the backend lists them (``serverRelativeURL`` and all), and a request for
one of those paths is proxied to that backend, which answers it (``handleGroupVersion``).
Paths this server serves itself keep their own answer. A backend without a v3 root
(``404``), whose v2 document the real aggregator converts, contributes nothing here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from setpoint.machinery.objects import Obj

log = logging.getLogger("setpoint.cluster.aggregator")

REFRESH_S = 60.0
FETCH_TIMEOUT_S = 5.0
AGGREGATOR_USER: Obj = {"username": "system:kube-aggregator", "groups": ["system:masters"]}

# (apiservice, path, accept, user) -> (status, content type, body)
Fetch = Callable[[Obj, str, str, Obj], Awaitable[tuple[int, str, bytes]]]


class SpecDownloads:
    """One document downloaded from every remote APIService's backend when the APIService
    changes and every minute (the openapi controllers' ``successfulUpdateDelay``); what a
    subclass keeps of it is its own (:meth:`_accept`)."""

    PATH = ""
    USER: Obj = AGGREGATOR_USER

    def __init__(self, fetch: Fetch, on_change: Callable[[], None]) -> None:
        self._fetch = fetch
        self._on_change = on_change
        self._apiservices: dict[str, Obj] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._timer: asyncio.TimerHandle | None = None

    def set_apiservice(self, apiservice: Obj) -> None:
        name = apiservice["metadata"]["name"]
        self._apiservices[name] = apiservice
        self._download(name)
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(REFRESH_S, self._refresh_all)

    def remove_apiservice(self, name: str) -> None:
        self._apiservices.pop(name, None)
        task = self._tasks.pop(name, None)
        if task is not None:
            task.cancel()
        if self._forget(name):
            self._on_change()

    def _refresh_all(self) -> None:
        self._timer = asyncio.get_running_loop().call_later(REFRESH_S, self._refresh_all)
        for name in list(self._apiservices):
            self._download(name)

    def _download(self, name: str) -> None:
        previous = self._tasks.get(name)
        if previous is not None and not previous.done():
            previous.cancel()  # the newer APIService is the one to ask
        self._tasks[name] = asyncio.get_running_loop().create_task(self._run(name))

    async def _run(self, name: str) -> None:
        apiservice = self._apiservices.get(name)
        if apiservice is None:
            return
        try:
            async with asyncio.timeout(FETCH_TIMEOUT_S):
                status, _, body = await self._fetch(apiservice, self.PATH,
                                                    "application/json", self.USER)
            document = orjson.loads(body) if status == 200 else None
        except Exception as exc:  # an unreachable backend keeps what it listed before
            log.info("%s of %s not downloaded: %s", self.PATH, name, exc)
            return
        if name in self._apiservices and self._accept(apiservice, status, document):
            self._on_change()

    def _accept(self, apiservice: Obj, status: int, document: Any) -> bool:
        """Keep what the download brought; whether that changed anything."""
        raise NotImplementedError

    def _forget(self, name: str) -> bool:
        """Drop what an APIService's backend gave; whether there was anything."""
        raise NotImplementedError

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for task in self._tasks.values():
            task.cancel()


class OpenAPIV3Proxier(SpecDownloads):
    """The v3 paths every remote APIService's backend lists, kept fresh in the background."""

    PATH = "/openapi/v3"

    def __init__(self, fetch: Fetch, on_change: Callable[[], None]) -> None:
        super().__init__(fetch, on_change)
        self._paths: dict[str, dict[str, Obj]] = {}  # APIService name -> its root's paths

    def __repr__(self) -> str:
        return f"OpenAPIV3Proxier({sorted(self._paths)})"

    def paths(self) -> dict[str, tuple[str, Obj]]:
        """path -> (the APIService name whose backend serves it, its index entry)."""
        out: dict[str, tuple[str, Obj]] = {}
        for name in sorted(self._paths):
            for path, entry in self._paths[name].items():
                out[path] = (name, entry)
        return out

    def _accept(self, apiservice: Obj, status: int, document: Any) -> bool:
        paths = document.get("paths") if isinstance(document, dict) else None
        if status == 404:
            paths = {}
        elif not isinstance(paths, dict):
            return False  # unavailable or unreadable now: keep the last good root
        kept = {str(k): v for k, v in paths.items() if isinstance(v, dict)}
        name = apiservice["metadata"]["name"]
        if self._paths.get(name) == kept:
            return False
        self._paths[name] = kept
        return True

    def _forget(self, name: str) -> bool:
        return bool(self._paths.pop(name, None))
