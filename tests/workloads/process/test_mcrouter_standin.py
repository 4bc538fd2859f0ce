"""The mcrouter stand-in's consistent hash is mcrouter's Ch3 (furc_hash,
mcrouter/lib/fbi/hash.c): uniform, and growing the pool only moves keys to the new
server (the property mcrouter's own hash_test.cpp ``ch3.verify_correctness`` checks)."""

from __future__ import annotations

from setpoint.workloads.kubelet.process.mcrouter import furc_hash, load_config, routing_key


def test_growing_the_pool_moves_keys_only_to_the_new_server() -> None:
    keys = [f"key:{i}".encode() for i in range(3000)]
    for size in range(1, 12):
        for key in keys:
            before, after = furc_hash(key, size), furc_hash(key, size + 1)
            assert after < size + 1
            assert after in (before, size)


def test_keys_spread_evenly() -> None:
    counts = [0] * 5
    for i in range(10000):
        counts[furc_hash(f"k{i}".encode(), 5)] += 1
    assert all(abs(c - 2000) < 2000 * 0.15 for c in counts)


def test_the_hash_stop_cuts_the_routing_key() -> None:
    assert routing_key(b"user:1|#|profile") == b"user:1"


def test_the_operators_topologies_load() -> None:
    from operators.memcached.mcrouter import Backend, build_config, render
    from operators.memcached.resource import Topology

    backends = [Backend(i, f"127.16.0.{i + 2}") for i in range(4)]
    cases: list[tuple[Topology, int]] = [("sharded", 1), ("replicated", 1), ("sharded", 2)]
    for topology, per_shard in cases:
        load_config(render(build_config(backends, topology, per_shard)))
    load_config(render(build_config([], "sharded")))
