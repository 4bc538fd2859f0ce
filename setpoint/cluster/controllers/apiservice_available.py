"""The APIService ``Available`` condition, as kube-aggregator's status controllers set it.

A local APIService (no ``spec.service``) is always ``Available`` (reason ``Local``,
pkg/controllers/status/local/local_available_controller.go). A remote one is checked as
pkg/controllers/status/remote/remote_available_controller.go (1.32) checks it: its Service
exists (else ``ServiceNotFound``); for a ClusterIP Service, the port is declared
(``ServicePortError``), the Endpoints exist (``EndpointsNotFound``) and have an address with
the port's name (``MissingEndpoints``); then a GET of ``/apis/<group>/<version>`` on the
backend, five attempts at once, TLS unverified but with the front-proxy certificate, as
``system:kube-aggregator`` in ``system:masters``, 5 s each: one 2xx answer is ``Passed``,
none is ``FailedDiscoveryCheck`` with the last error. An APIService is checked again when it,
its Service or its Endpoints change, after a failure, and every 30 s.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import TYPE_CHECKING

from setpoint.cluster.aggregator.apiservices import APISERVICES, group_version
from setpoint.cluster.aggregator.proxy import ProxyTransport, forwarded_headers, go_error_text
from setpoint.cluster.aggregator.resolver import (
    ENDPOINTS,
    SERVICES,
    ResolveError,
    ServiceRef,
    service_ref,
)
from setpoint.cluster.controllers.queue import WorkQueue
from setpoint.cluster.registry.options import WriteOptions
from setpoint.cluster.serializer.decode import Decoded
from setpoint.cluster.storage import Event
from setpoint.machinery.errors import StatusError
from setpoint.machinery.metatime import meta_time
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry.rest import REST
    from setpoint.cluster.registry.types import ResourceType
    from setpoint.cluster.storage import Informer

log = logging.getLogger("setpoint.cluster.controllers")

RESYNC_S = 30.0  # the APIService informer's resync period
ATTEMPTS = 5
CHECK_TIMEOUT_S = 5.0  # the discovery client's Timeout
CHECK_USER: Obj = {"username": "system:kube-aggregator", "groups": ["system:masters"]}
_INSECURE: Obj = {"spec": {"insecureSkipTLSVerify": True}}


def set_condition(apiservice: Obj, status: str, reason: str, message: str) -> Obj:
    """``SetAPIServiceCondition``: the transition time moves only when the status does."""
    new = copy.deepcopy(apiservice)
    conditions = new.setdefault("status", {}).setdefault("conditions", [])
    for condition in conditions:
        if condition.get("type") == "Available":
            if condition.get("status") != status:
                condition["status"], condition["lastTransitionTime"] = status, meta_time()
            condition["reason"], condition["message"] = reason, message
            return new
    conditions.append({"type": "Available", "status": status, "lastTransitionTime": meta_time(),
                       "reason": reason, "message": message})
    return new


class APIServiceAvailable:
    """Keeps every APIService's ``Available`` condition (``apiservice-available``)."""

    def __init__(self, store: Informer, rest: REST, rt: ResourceType,
                 transport: ProxyTransport) -> None:
        self._store = store
        self._rest = rest
        self._rt = rt
        self._transport = transport
        self._checks: dict[str, asyncio.Task[None]] = {}
        # APIService name -> its Service's (namespace, name): a Service or Endpoints write
        # finds the APIServices it concerns without reading them all
        self._backends: dict[str, tuple[str, str]] = {}
        self._recheck: set[str] = set()
        self.queue: WorkQueue[str] = WorkQueue("apiservice-available", self._sync)
        store.add_listener(self._on_event, (APISERVICES, SERVICES, ENDPOINTS))

    def start(self) -> None:
        for apiservice in self._store.list(APISERVICES):
            self._remember(apiservice)
            self.queue.add(apiservice["metadata"]["name"])

    def _remember(self, apiservice: Obj) -> None:
        name, ref = apiservice["metadata"]["name"], service_ref(apiservice)
        if ref is None:
            self._backends.pop(name, None)
        else:
            self._backends[name] = (ref.namespace, ref.name)

    def shutdown(self) -> None:
        self.queue.shutdown()
        for task in self._checks.values():
            task.cancel()

    def _on_event(self, event: Event) -> None:
        if event.resource == APISERVICES:
            if event.type == "DELETED":
                self._backends.pop(event.name, None)
            else:
                self._remember(event.obj)
                self.queue.add(event.name)
        elif event.resource in (SERVICES, ENDPOINTS) and self._backends:
            # getAPIServicesFor: the APIServices whose backend this Service is
            for name, backend in self._backends.items():
                if backend == (event.namespace, event.name):
                    self.queue.add(name)

    def _sync(self, name: str) -> float | None:
        live = self._store.get(APISERVICES, "", name)
        if live is None:
            return None
        ref = service_ref(live)
        if ref is None:
            self._write(live, "True", "Local", "Local APIServices are always available")
            return None
        failed = self._static_checks(ref)
        if failed is not None:
            self._write(live, "False", *failed)
            return RESYNC_S
        if name in self._checks:
            self._recheck.add(name)
        else:
            self._checks[name] = asyncio.get_running_loop().create_task(self._check(name, ref))
        return RESYNC_S

    def _static_checks(self, ref: ServiceRef) -> tuple[str, str] | None:
        where = f'service/{ref.name} in "{ref.namespace}"'
        service = self._store.get(SERVICES, ref.namespace, ref.name)
        if service is None:
            return "ServiceNotFound", f"{where} is not present"
        if ((service.get("spec") or {}).get("type") or "ClusterIP") != "ClusterIP":
            return None
        port = next((p for p in (service.get("spec") or {}).get("ports") or []
                     if p.get("port") == ref.port), None)
        if port is None:
            return "ServicePortError", f"{where} is not listening on port {ref.port}"
        endpoints = self._store.get(ENDPOINTS, ref.namespace, ref.name)
        if endpoints is None:
            return "EndpointsNotFound", f"cannot find endpoints for {where}"
        port_name = port.get("name") or ""
        for subset in endpoints.get("subsets") or []:
            if subset.get("addresses") and any((p.get("name") or "") == port_name
                                               for p in subset.get("ports") or []):
                return None
        return "MissingEndpoints", (f"endpoints for {where} have no addresses with port name "
                                    f'"{port_name}"')

    async def _check(self, name: str, ref: ServiceRef) -> None:
        try:
            while True:
                self._recheck.discard(name)
                live = self._store.get(APISERVICES, "", name)
                if live is None or service_ref(live) != ref:
                    return
                error = await self._discovery_check(live, ref)
                live = self._store.get(APISERVICES, "", name)
                if live is None or service_ref(live) != ref:
                    return
                if error is None:
                    self._write(live, "True", "Passed", "all checks passed")
                else:
                    self._write(live, "False", "FailedDiscoveryCheck", error)
                if name not in self._recheck:
                    return
        finally:
            self._checks.pop(name, None)

    async def _discovery_check(self, apiservice: Obj, ref: ServiceRef) -> str | None:
        group, version = group_version(apiservice)
        path = f"/apis/{group}/{version}"
        results = [asyncio.ensure_future(self._attempt(ref, path)) for _ in range(ATTEMPTS)]
        last: str | None = None
        try:
            for next_done in asyncio.as_completed(results):
                last = await next_done
                if last is None:
                    return None
        finally:
            for task in results:
                task.cancel()
        return last

    async def _attempt(self, ref: ServiceRef, path: str) -> str | None:
        try:
            target = self._transport.resolve(ref)
        except ResolveError as exc:
            return str(exc)
        url = f"https://{target.address}{path}"
        try:
            async with asyncio.timeout(CHECK_TIMEOUT_S):
                resp = await self._transport.send(
                    _INSECURE, target, "GET", path, "", forwarded_headers([], CHECK_USER), b"",
                    long_running=False)
                async with resp:
                    if not 200 <= resp.status < 300:
                        return (f"failing or missing response from {url}: "
                                f"bad status from {url}: {resp.status}")
        except TimeoutError:
            return (f'failing or missing response from {url}: Get "{url}": context deadline '
                    "exceeded (Client.Timeout exceeded while awaiting headers)")
        except Exception as exc:  # any transport failure is the check's answer
            return (f'failing or missing response from {url}: Get "{url}": '
                    f"{go_error_text(exc, target.address)}")
        return None

    def _write(self, live: Obj, status: str, reason: str, message: str) -> None:
        new = set_condition(live, status, reason, message)
        if new.get("status") == live.get("status"):
            return  # updateAPIServiceStatus: no write when nothing changed
        try:
            self._rest.update(self._rt, None, live["metadata"]["name"], Decoded(new),
                              WriteOptions(field_manager="kube-apiserver",
                                           field_validation="Ignore"), "status")
        except StatusError as err:
            if err.code != 409 and err.code != 404:
                raise
            self.queue.add(live["metadata"]["name"])  # it moved on: look again
