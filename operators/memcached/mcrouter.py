"""The mcrouter configuration for a set of memcached backends.

mcrouter reads a JSON document with ``pools`` (named lists of ``host:port`` servers) and a
``route`` (a tree of route handles). The three topologies map onto it so:

- sharded: one pool, ``PoolRoute`` with consistent hashing (``Ch3``): every key lives on
  exactly one backend;
- replicated: one pool, an ``OperationSelectorRoute`` that sends ``add``, ``set`` and
  ``delete`` to every backend (``AllSyncRoute``, which answers with the worst reply) and
  every other operation, reads included, to one of them (``LatestRoute``: a failover list
  chosen by the proxy's host id, so several proxies spread reads over the replicas);
- sharded with replicas: one pool per shard, each routed as a replicated pool, under a
  ``HashRoute`` with consistent hashing that picks the shard.

Backends are listed by StatefulSet ordinal, so the same set of backends always gives the
same document, byte for byte, and the same hash: the ConfigMap name is derived from it.
Shards (or, when sharded without replicas, backends) that are not ready are left out:
mcrouter would otherwise send their share of keys to a dead address.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from operators.memcached.resource import Topology

MEMCACHED_PORT = 11211
HASH_FUNC = "Ch3"
WRITE_OPERATIONS = ("add", "delete", "set")
READ_ROUTE = "LatestRoute"
NO_BACKEND_ERROR = "memcached: no backend is ready"


@dataclass(frozen=True, order=True)
class Backend:
    """One memcached pod: its StatefulSet ordinal and its address."""

    ordinal: int
    host: str
    port: int = MEMCACHED_PORT

    @property
    def address(self) -> str:
        """``host:port`` as mcrouter wants it (IPv6 addresses in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def shard_of(ordinal: int, topology: Topology, replicas_per_shard: int) -> int:
    """The shard a pod belongs to: consecutive ordinals form a shard."""
    if topology == "replicated":
        return 0
    return ordinal // replicas_per_shard


def _replicated_route(pool: str) -> dict[str, Any]:
    return {
        "type": "OperationSelectorRoute",
        "operation_policies": {op: f"AllSyncRoute|Pool|{pool}" for op in WRITE_OPERATIONS},
        "default_policy": f"{READ_ROUTE}|Pool|{pool}",
    }


def build_config(backends: Sequence[Backend], topology: Topology,
                 replicas_per_shard: int = 1) -> dict[str, Any]:
    """The mcrouter configuration routing to ``backends`` (the ready ones) as the topology
    says; with no backend at all, a route that answers every request with an error."""
    ordered = sorted(set(backends))
    if not ordered:
        return {"pools": {}, "route": f"ErrorRoute|{NO_BACKEND_ERROR}"}
    servers = [b.address for b in ordered]
    if topology == "replicated":
        return {"pools": {"replicas": {"servers": servers}},
                "route": _replicated_route("replicas")}
    if replicas_per_shard <= 1:
        return {"pools": {"shards": {"servers": servers}},
                "route": {"type": "PoolRoute", "pool": "shards",
                          "hash": {"hash_func": HASH_FUNC}}}
    shards: dict[int, list[str]] = {}
    for backend in ordered:
        shards.setdefault(shard_of(backend.ordinal, topology, replicas_per_shard),
                          []).append(backend.address)
    pools = {f"shard-{index}": {"servers": shards[index]} for index in sorted(shards)}
    return {"pools": pools,
            "route": {"type": "HashRoute", "hash_func": HASH_FUNC,
                      "children": [_replicated_route(name) for name in pools]}}


def render(config: dict[str, Any]) -> str:
    """The configuration as the text of ``config.json``: canonical, so equal configurations
    are equal strings."""
    return json.dumps(config, indent=2, sort_keys=True) + "\n"


def digest(text: str) -> str:
    """A short content hash of a rendered configuration (a name suffix)."""
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def servers_of(config: dict[str, Any]) -> list[str]:
    """Every backend address of a configuration, in pool order."""
    return [server for pool in config.get("pools", {}).values()
            for server in pool.get("servers", [])]
