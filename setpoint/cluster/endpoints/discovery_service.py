"""Discovery documents served from a cache that follows the registry's generation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import orjson

from setpoint.cluster.aggregator import Aggregator
from setpoint.cluster.aggregator import discovery as aggregated
from setpoint.cluster.aggregator.apiservices import GroupOrder
from setpoint.cluster.endpoints import discovery
from setpoint.cluster.endpoints.healthz import ENDPOINTS, check_names
from setpoint.cluster.endpoints.openidmetadata import JWKS_PATH, OPENID_CONFIG_PATH
from setpoint.cluster.registry import Registry
from setpoint.machinery import gojson

R = TypeVar("R")
_NO_APISERVICES = GroupOrder({})


class DiscoveryService:
    """/version, /api, /apis and aggregated discovery, recomputed when types change or
    what the aggregator knows of remote APIServices does."""

    def __init__(self, registry: Registry, aggregator: Aggregator | None = None,
                 external_address: Callable[[], str] = lambda: "127.0.0.1:6443") -> None:
        self._registry = registry
        self._external_address = external_address
        self._aggregator = aggregator
        self._cache: dict[tuple[Any, ...], Any] = {}
        self._generation: tuple[int, int] = (-1, -1)

    def _remote(self) -> list[dict[str, Any]]:
        return self._aggregator.remote_apiservices() if self._aggregator is not None else []

    def _order(self) -> GroupOrder:
        return self._aggregator.order if self._aggregator is not None else _NO_APISERVICES

    def _cached(self, key: tuple[Any, ...], make: Callable[[], R]) -> R:
        generation = (self._registry.generation,
                      self._aggregator.generation if self._aggregator is not None else 0)
        if self._generation != generation:
            self._cache.clear()
            self._generation = generation
        if key not in self._cache:
            self._cache[key] = make()
        # a key is only ever filled by the one ``make`` that asks for it
        return cast(R, self._cache[key])

    def root_paths(self) -> dict[str, Any]:
        """``/``: routes/index.go ``IndexLister``, the listed paths of every server in the
        chain (aggregator, kube-apiserver, apiextensions), deduplicated and sorted: the
        go-restful web services' roots, the healthz endpoints and each of their checks, the
        OpenAPI and issuer discovery routes, a path per group and group-version (the
        aggregator's handlers, remote APIServices included)."""
        paths = {"/api", "/api/v1", "/apis", "/apis/", "/metrics", "/openapi/v2", "/openapi/v3",
                 "/openapi/v3/", "/version", OPENID_CONFIG_PATH, JWKS_PATH}
        for endpoint in ENDPOINTS:
            paths.add(f"/{endpoint}")
            paths.update(f"/{endpoint}/{name}" for name in check_names(endpoint))
        for group, versions in self._registry.groups().items():
            if group:
                paths.add(f"/apis/{group}")
                paths.update(f"/apis/{group}/{v}" for v in versions)
        for apiservice in self._remote():
            spec = apiservice.get("spec") or {}
            if spec.get("group") and spec.get("version"):
                paths.add(f"/apis/{spec['group']}")
                paths.add(f"/apis/{spec['group']}/{spec['version']}")
        return {"paths": sorted(paths)}

    def version(self) -> dict[str, Any]:
        return discovery.version_info()

    def versions(self) -> dict[str, Any]:
        # serverAddressByClientCIDRs: the generic server's ExternalAddress for every client
        return discovery.api_versions(self._external_address())

    def core_resources(self) -> dict[str, Any]:
        return self._cached(("core",), lambda: discovery.core_resource_list(self._registry))

    def _withdrawn(self) -> set[tuple[str, str]]:
        return self._aggregator.withdrawn if self._aggregator is not None else set()

    def groups(self) -> dict[str, Any]:
        return self._cached(("groups",), lambda: aggregated.withdraw_groups(
            aggregated.merge_group_list(discovery.api_group_list(self._registry),
                                        self._remote(), self._order()),
            self._withdrawn()))

    def group(self, group: str) -> dict[str, Any] | None:
        """The APIGroup, or None when the group is not served."""
        return self._cached(("group", group), lambda: aggregated.merge_group(
            discovery.api_group(self._registry, group), group, self._remote(), self._order()))

    def resources(self, group: str, version: str) -> dict[str, Any] | None:
        """The APIResourceList, or None when the group-version is not served."""
        return self._cached(("resources", group, version),
                            lambda: discovery.api_resource_list(self._registry, group, version))

    def aggregated(self, *, legacy: bool, version: str) -> tuple[bytes, str]:
        def make() -> tuple[bytes, str]:
            doc = discovery.aggregated_discovery(self._registry, legacy=legacy, version=version)
            if not legacy and self._aggregator is not None:
                doc = aggregated.withdraw_aggregated(
                    aggregated.merge_aggregated(doc, self._remote(),
                                                self._aggregator.discovery.version,
                                                self._order()),
                    self._withdrawn())
            # the answer's bytes, as responsewriters.WriteObjectNegotiated writes them
            # (Encoder.Encode: the newline after the value); the ETag hashes json.Marshal's
            body = gojson.dumps(doc, orjson.OPT_APPEND_NEWLINE)
            if version != "v2":
                # aggregated/handler.go calculateResponse: one ETag, the v2 list's, is
                # served with the v2beta1 conversion too
                return body, self.aggregated(legacy=legacy, version="v2")[1]
            return body, discovery.discovery_etag(doc)
        return self._cached(("aggregated", legacy, version), make)
