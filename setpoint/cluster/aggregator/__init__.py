"""The API aggregator (kube-aggregator): APIServices route their group-versions to backends.

``Aggregator`` follows the stored APIServices: a remote one (``spec.service`` set) has every
request under ``/apis/<group>/<version>`` proxied to its backend (``proxy.py``, the HTTP side
in ``setpoint.cluster.endpoints.aggregated``), its group listed in ``/apis`` and its
resources in aggregated discovery (``discovery.py``). ``resolver.py`` finds a backend,
``frontproxy.py`` keeps the proxy's client certificate, ``apiservices.py`` orders them.
Local APIServices (no ``spec.service``, registered by ``controllers/autoregister.py`` with the
priorities of ``priorities.py``) are served by this server; every APIService's priorities
order the groups and versions of discovery (``GroupOrder``).

handler_apis.go lists ``/apis`` from the APIServices that exist, and the discovery manager
drops a deleted one's group-version from aggregated discovery, while the delegate goes on
serving its resources and ``/apis/<group>``. A group-version served here is listed from the
start (autoregister registers it within moments); one whose local APIService was deleted is
*withdrawn* from both lists until an APIService for it exists again. That is durable only
for an ``onstart`` (or unmanaged) one, which autoregister does not recreate before the next
start (checkAPIService 2B "once"); a ``true`` one (a CRD version) it recreates at once (2C),
so that is not tracked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from setpoint.cluster.aggregator.apiservices import (
    APISERVICES,
    GroupOrder,
    group_version,
    is_remote,
    priority_of,
)
from setpoint.cluster.aggregator.discovery import MAX_DISCOVERY_BYTES, DiscoveryManager
from setpoint.cluster.aggregator.openapi import OpenAPIV3Proxier
from setpoint.cluster.aggregator.openapi_v2 import OpenAPIV2Aggregator
from setpoint.cluster.aggregator.priorities import AUTOMANAGED_LABEL, MANAGE_CONTINUOUSLY
from setpoint.cluster.aggregator.proxy import ProxyTransport, forwarded_headers
from setpoint.cluster.aggregator.resolver import service_ref
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.aggregator.frontproxy import FrontProxy
    from setpoint.cluster.storage import Event, Informer

__all__ = ["Aggregator"]


class Aggregator:
    """The remote APIServices by group-version, their transport and their discovery."""

    def __init__(self, store: Informer, front_proxy: FrontProxy | None) -> None:
        self._store = store
        self.transport = ProxyTransport(store, front_proxy)
        self.discovery = DiscoveryManager(self._fetch, self._changed)
        self.openapi_v3 = OpenAPIV3Proxier(self._fetch, self._changed)
        self.openapi_v2 = OpenAPIV2Aggregator(self._fetch)
        self._remote: dict[tuple[str, str], Obj] = {}
        self.withdrawn: set[tuple[str, str]] = set()  # deleted local group-versions
        self._priorities: dict[str, tuple[str, str, int, int]] = {}  # every APIService's
        self.order = GroupOrder(self._priorities)
        self.generation = 0  # moves whenever what discovery shows of them changes

    def __repr__(self) -> str:
        return f"Aggregator(remote={sorted(self._remote)})"

    def start(self) -> None:
        """Follow the APIServices (must run on the server's loop)."""
        self._store.add_listener(self._on_event, (APISERVICES,))
        for apiservice in self._store.list(APISERVICES):
            self._priorities[apiservice["metadata"]["name"]] = priority_of(apiservice)
            self._set(apiservice)

    def _changed(self) -> None:
        self.generation += 1

    def _on_event(self, event: Event) -> None:
        if event.resource != APISERVICES:
            return
        self._track_priority(event)
        self._track_withdrawn(event)
        if event.type == "DELETED":
            self._forget(event.obj)
        else:
            if event.prev is not None and is_remote(event.prev) and (
                    group_version(event.prev) != group_version(event.obj)
                    or not is_remote(event.obj)):
                self._forget(event.prev)
            self._set(event.obj)

    def _track_priority(self, event: Event) -> None:
        """Discovery's order moves with any APIService's group, version or priorities."""
        if event.type == "DELETED":
            if self._priorities.pop(event.name, None) is not None:
                self._changed()
            return
        priority = priority_of(event.obj)
        if self._priorities.get(event.name) != priority:
            self._priorities[event.name] = priority
            self._changed()

    def _track_withdrawn(self, event: Event) -> None:
        gv = group_version(event.obj)
        if event.type != "DELETED":
            if gv in self.withdrawn:
                self.withdrawn.discard(gv)
                self._changed()
            return
        labels = (event.obj.get("metadata") or {}).get("labels") or {}
        if not is_remote(event.obj) and labels.get(AUTOMANAGED_LABEL) != MANAGE_CONTINUOUSLY:
            self.withdrawn.add(gv)
            self._changed()

    def _set(self, apiservice: Obj) -> None:
        if not is_remote(apiservice):
            return
        self._remote[group_version(apiservice)] = apiservice
        self._changed()
        self.discovery.set_apiservice(apiservice)
        self.openapi_v3.set_apiservice(apiservice)
        self.openapi_v2.set_apiservice(apiservice)

    def _forget(self, apiservice: Obj) -> None:
        gv = group_version(apiservice)
        if self._remote.get(gv, {}).get("metadata", {}).get("uid") == \
                apiservice["metadata"].get("uid"):
            del self._remote[gv]
        self._changed()
        self.discovery.remove_apiservice(apiservice["metadata"]["name"])
        self.openapi_v3.remove_apiservice(apiservice["metadata"]["name"])
        self.openapi_v2.remove_apiservice(apiservice["metadata"]["name"])

    def remote(self, group: str, version: str) -> Obj | None:
        """The remote APIService serving ``group/version``, or None."""
        return self._remote.get((group, version))

    def remote_apiservices(self) -> list[Obj]:
        return list(self._remote.values())

    def serves_group(self, group: str) -> bool:
        return any(g == group for g, _ in self._remote)

    async def _fetch(self, apiservice: Obj, path: str, accept: str,
                     user: Obj) -> tuple[int, str, bytes]:
        """A GET through the proxy's rules (503 while the APIService is unavailable)."""
        from setpoint.cluster.aggregator.apiservices import is_available

        live = self._remote.get(group_version(apiservice), apiservice)
        ref = service_ref(live)
        if ref is None or not is_available(live):
            return 503, "text/plain", b"service unavailable\n"
        target = self.transport.resolve(ref)
        headers = forwarded_headers([("Accept", accept)], user)
        async with await self.transport.send(live, target, "GET", path, "", headers, b"",
                                             long_running=False) as resp:
            body = bytearray()
            async for chunk in resp.content.iter_any():
                body += chunk
                if len(body) > MAX_DISCOVERY_BYTES:
                    raise ValueError(f"discovery larger than {MAX_DISCOVERY_BYTES} bytes")
            return resp.status, resp.headers.get("Content-Type", ""), bytes(body)

    async def stop(self) -> None:
        self.discovery.stop()
        self.openapi_v3.stop()
        self.openapi_v2.stop()
        await self.transport.close()
