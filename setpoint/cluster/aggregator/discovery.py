"""Discovery of aggregated APIs: each remote APIService's resources, fetched and cached.

As kube-aggregator's ``discoveryManager`` (pkg/apiserver/handler_discovery.go, 1.32): the
backend is asked, through the proxy and as ``system:kube-aggregator`` in
``system:masters``, for its aggregated discovery (``GET /apis``, apidiscovery v2 or v2beta1);
when it does not answer with one, for the legacy ``/apis/<group>/<version>`` (as
``system:kube-aggregator``), converted to the aggregated form. A failure leaves the version
listed without resources, ``freshness: Stale``. An APIService is fetched again when it
changes and every minute.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import orjson

from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.aggregator.apiservices import GroupOrder

log = logging.getLogger("setpoint.cluster.aggregator")

REFRESH_S = 60.0  # wait.PollUntil(1*time.Minute, ...) marks every APIService dirty
FETCH_TIMEOUT_S = 5.0  # http.TimeoutHandler(info.handler, 5*time.Second, ...)
MAX_DISCOVERY_BYTES = 8 * 1024 * 1024
ACCEPT_AGGREGATED = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                     "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList")
AGGREGATOR_USER: Obj = {"username": "system:kube-aggregator", "groups": ["system:masters"]}
LEGACY_USER: Obj = {"username": "system:kube-aggregator", "groups": []}

# (path, accept, user) -> (status, content type, body); raises on transport failure
Fetch = Callable[[Obj, str, str, Obj], Awaitable[tuple[int, str, bytes]]]


class DiscoveryFailed(Exception):
    pass


def _is_aggregated(content_type: str) -> bool:
    params = dict(p.strip().partition("=")[::2] for p in content_type.split(";")[1:])
    return params.get("g") == "apidiscovery.k8s.io" and params.get("v") in ("v2", "v2beta1") \
        and params.get("as") == "APIGroupDiscoveryList"


def convert_resource_list(resource_list: Obj) -> list[Obj]:
    """``ConvertGroupVersionIntoToDiscovery``: an APIResourceList's resources as
    APIResourceDiscovery entries, subresources under their parent."""
    out: dict[str, Obj] = {}
    subresources: list[tuple[str, Obj]] = []
    for resource in resource_list.get("resources") or []:
        name = str(resource.get("name", ""))
        kind = {"group": resource.get("group", ""), "version": resource.get("version", ""),
                "kind": resource.get("kind", "")}
        if "/" in name:
            parent, _, subresource = name.partition("/")
            subresources.append((parent, {"subresource": subresource, "responseKind": kind,
                                          "verbs": list(resource.get("verbs") or [])}))
            continue
        entry: Obj = {"resource": name, "responseKind": kind,
                      "scope": "Namespaced" if resource.get("namespaced") else "Cluster",
                      "singularResource": resource.get("singularName", ""),
                      "verbs": list(resource.get("verbs") or [])}
        for key in ("shortNames", "categories"):
            if resource.get(key):
                entry[key] = list(resource[key])
        out[name] = entry
    for parent, sub in subresources:
        if parent in out:
            out[parent].setdefault("subresources", []).append(sub)
    return list(out.values())


@dataclass
class _Entry:
    """One APIService's discovery as served, and its refresh."""

    version: Obj  # the APIVersionDiscovery served for this APIService
    task: asyncio.Task[None] | None = None
    dirty: bool = field(default=False)


class DiscoveryManager:
    """The APIVersionDiscovery of every remote APIService, kept fresh in the background."""

    def __init__(self, fetch: Fetch, on_change: Callable[[], None]) -> None:
        self._fetch = fetch
        self._on_change = on_change
        self._entries: dict[str, _Entry] = {}
        self._apiservices: dict[str, Obj] = {}
        self._timer: asyncio.TimerHandle | None = None

    def __repr__(self) -> str:
        return f"DiscoveryManager({sorted(self._entries)})"

    def version(self, name: str) -> Obj | None:
        entry = self._entries.get(name)
        return entry.version if entry is not None else None

    def set_apiservice(self, apiservice: Obj) -> None:
        """``AddAPIService``: (re)fetch this APIService's discovery soon."""
        name = apiservice["metadata"]["name"]
        self._apiservices[name] = apiservice
        entry = self._entries.get(name)
        if entry is None:
            version = (apiservice.get("spec") or {}).get("version", "")
            entry = self._entries[name] = _Entry(
                {"version": version, "resources": [], "freshness": "Stale"})
        self._sync(name, entry)
        if self._timer is None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(REFRESH_S, self._refresh_all)

    def remove_apiservice(self, name: str) -> None:
        self._apiservices.pop(name, None)
        entry = self._entries.pop(name, None)
        if entry is not None and entry.task is not None:
            entry.task.cancel()
        self._on_change()

    def _refresh_all(self) -> None:
        self._timer = asyncio.get_running_loop().call_later(REFRESH_S, self._refresh_all)
        for name, entry in list(self._entries.items()):
            self._sync(name, entry)

    def _sync(self, name: str, entry: _Entry) -> None:
        if entry.task is not None and not entry.task.done():
            entry.dirty = True  # fetched again once the fetch under way ends
            return
        entry.task = asyncio.get_running_loop().create_task(self._run(name, entry))

    async def _run(self, name: str, entry: _Entry) -> None:
        while True:
            entry.dirty = False
            apiservice = self._apiservices.get(name)
            if apiservice is None:
                return
            version = await self._fetch_version(apiservice)
            if self._entries.get(name) is not entry:
                return
            if version != entry.version:
                entry.version = version
                self._on_change()
            if not entry.dirty:
                return

    async def _fetch_version(self, apiservice: Obj) -> Obj:
        spec = apiservice.get("spec") or {}
        group, version = str(spec.get("group", "")), str(spec.get("version", ""))
        try:
            async with asyncio.timeout(FETCH_TIMEOUT_S):
                resources = await self._resources(apiservice, group, version)
        except Exception as exc:  # any failure makes the entry Stale
            log.info("discovery of %s failed: %s", apiservice["metadata"]["name"], exc)
            return {"version": version, "resources": [], "freshness": "Stale"}
        if resources is None:  # the backend did not list this group-version
            return {"version": version, "resources": [], "freshness": "Current"}
        return {**resources, "version": version, "freshness": "Current"}

    async def _resources(self, apiservice: Obj, group: str, version: str) -> Obj | None:
        status, content_type, body = await self._fetch(apiservice, "/apis", ACCEPT_AGGREGATED,
                                                       AGGREGATOR_USER)
        if status == 503:
            raise DiscoveryFailed(f"service returned non-success response code: {status}")
        if status == 200 and _is_aggregated(content_type):
            for item in orjson.loads(body).get("items") or []:
                if (item.get("metadata") or {}).get("name") == group:
                    for entry in item.get("versions") or []:
                        if entry.get("version") == version:
                            return {"resources": entry.get("resources") or []}
            return None
        path = f"/apis/{group}/{version}"
        status, _, body = await self._fetch(apiservice, path, "application/json", LEGACY_USER)
        if status != 200:
            raise DiscoveryFailed(f"failed to download legacy discovery for {path}: {status}")
        return {"resources": convert_resource_list(orjson.loads(body))}

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for entry in self._entries.values():
            if entry.task is not None:
                entry.task.cancel()


# -- the documents, with the remote APIServices merged in ----------------------------------
# handler_apis.go lists every APIService's group, available or not, in
# SortedByGroupAndVersion order (``GroupOrder``): the groups served here and the remote ones
# are ordered together by their APIServices' priorities.

def _remote_groups(apiservices: list[Obj]) -> list[list[Obj]]:
    from setpoint.cluster.aggregator.apiservices import sorted_by_group_and_version

    return sorted_by_group_and_version(apiservices)


def _versions(members: list[Obj]) -> list[Obj]:
    group = members[0]["spec"]["group"]
    return [{"groupVersion": f"{group}/{m['spec']['version']}",
             "version": m["spec"]["version"]} for m in members]


def _ordered_group(group: Obj, order: GroupOrder) -> Obj:
    by_version = {v["version"]: v for v in group.get("versions") or []}
    versions = [by_version[v] for v in order.versions(group["name"], by_version)]
    return {**group, "versions": versions, "preferredVersion": versions[0]}


def merge_group_list(group_list: Obj, apiservices: list[Obj], order: GroupOrder) -> Obj:
    """/apis: the local APIGroupList with the remote APIServices' groups, in order."""
    groups = [dict(g) for g in group_list.get("groups") or []]
    by_name = {g["name"]: g for g in groups}
    for members in _remote_groups(apiservices):
        name = members[0]["spec"]["group"]
        local = by_name.get(name)
        if local is None:
            versions = _versions(members)
            groups.append({"name": name, "versions": versions,
                           "preferredVersion": versions[0]})
            continue
        known = {v["version"] for v in local["versions"]}
        local["versions"] = [*local["versions"],
                             *(v for v in _versions(members) if v["version"] not in known)]
    groups = [_ordered_group(g, order) for g in groups]
    groups.sort(key=lambda g: order.group_key(g["name"], (v["version"] for v in g["versions"])))
    return {**group_list, "groups": groups}


def merge_group(group_doc: Obj | None, group: str, apiservices: list[Obj],
                order: GroupOrder) -> Obj | None:
    """/apis/<group>: ``apiGroupHandler`` answers from the group's APIServices."""
    members = [a for a in apiservices if a["spec"].get("group") == group]
    if not members:
        return None if group_doc is None else {
            **group_doc, **_ordered_group(group_doc, order)}
    merged = merge_group_list({"groups": [group_doc] if group_doc else []}, members, order)
    return {"kind": "APIGroup", "apiVersion": "v1", **merged["groups"][0]}


def merge_aggregated(document: Obj, apiservices: list[Obj],
                     version_of: Callable[[str], Obj | None], order: GroupOrder) -> Obj:
    """/apis as apidiscovery: each remote APIService's version entry in its group, the
    groups and versions in order."""
    items = [dict(item) for item in document.get("items") or []]
    by_name = {(item.get("metadata") or {}).get("name"): item for item in items}
    for members in _remote_groups(apiservices):
        name = members[0]["spec"]["group"]
        entries = []
        for member in members:
            entry = version_of(member["metadata"]["name"])
            entries.append(entry if entry is not None else {
                "version": member["spec"]["version"], "resources": [], "freshness": "Stale"})
        item = by_name.get(name)
        if item is None:
            items.append({"metadata": {"name": name, "creationTimestamp": None},
                          "versions": entries})
            continue
        remote = {e["version"] for e in entries}
        item["versions"] = [*entries, *(v for v in item.get("versions") or []
                                        if v.get("version") not in remote)]
    for item in items:
        group = str((item.get("metadata") or {}).get("name") or "")
        item["versions"] = sorted(item.get("versions") or [],
                                  key=lambda v: order.version_key(group, str(v["version"])))
    items.sort(key=lambda i: order.group_key(str((i.get("metadata") or {}).get("name") or ""),
                                             (str(v["version"]) for v in i["versions"])))
    return {**document, "items": items}


def withdraw_groups(group_list: Obj, withdrawn: set[tuple[str, str]]) -> Obj:
    """/apis without the group-versions whose APIService was deleted (a group left with
    none is not listed)."""
    if not withdrawn:
        return group_list
    groups = []
    for group in group_list.get("groups") or []:
        versions = [v for v in group["versions"]
                    if (group["name"], v["version"]) not in withdrawn]
        if versions:  # (in order: the first is the preferred one)
            groups.append({**group, "versions": versions, "preferredVersion": versions[0]})
    return {**group_list, "groups": groups}


def withdraw_aggregated(document: Obj, withdrawn: set[tuple[str, str]]) -> Obj:
    """Aggregated /apis without the withdrawn group-versions (``RemoveGroupVersion``)."""
    if not withdrawn:
        return document
    items = []
    for item in document.get("items") or []:
        name = (item.get("metadata") or {}).get("name") or ""
        versions = [v for v in item.get("versions") or []
                    if (name, v.get("version")) not in withdrawn]
        if versions:
            items.append({**item, "versions": versions})
    return {**document, "items": items}
