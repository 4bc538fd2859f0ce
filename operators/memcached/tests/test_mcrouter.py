"""The mcrouter configuration of each topology, in mcrouter's own format."""

from __future__ import annotations

import json

from operators.memcached.mcrouter import (
    Backend,
    build_config,
    digest,
    render,
    servers_of,
    shard_of,
)


def backends(*ordinals: int) -> list[Backend]:
    return [Backend(i, f"10.0.0.{10 + i}") for i in ordinals]


def test_sharded_pool_is_consistently_hashed_in_ordinal_order() -> None:
    config = build_config(list(reversed(backends(0, 1, 2))), "sharded")

    assert config == {
        "pools": {"shards": {"servers": ["10.0.0.10:11211", "10.0.0.11:11211",
                                         "10.0.0.12:11211"]}},
        "route": {"type": "PoolRoute", "pool": "shards", "hash": {"hash_func": "Ch3"}},
    }


def test_replicated_pool_writes_to_all_and_reads_from_one() -> None:
    config = build_config(backends(0, 1), "replicated")

    assert config["pools"] == {"replicas": {"servers": ["10.0.0.10:11211",
                                                        "10.0.0.11:11211"]}}
    assert config["route"] == {
        "type": "OperationSelectorRoute",
        "operation_policies": {"add": "AllSyncRoute|Pool|replicas",
                               "delete": "AllSyncRoute|Pool|replicas",
                               "set": "AllSyncRoute|Pool|replicas"},
        "default_policy": "LatestRoute|Pool|replicas",
    }


def test_sharded_with_replicas_hashes_over_replicated_shards() -> None:
    config = build_config(backends(0, 1, 2, 3, 4), "sharded", replicas_per_shard=2)

    assert config["pools"] == {
        "shard-0": {"servers": ["10.0.0.10:11211", "10.0.0.11:11211"]},
        "shard-1": {"servers": ["10.0.0.12:11211", "10.0.0.13:11211"]},
        "shard-2": {"servers": ["10.0.0.14:11211"]},
    }
    route = config["route"]
    assert (route["type"], route["hash_func"]) == ("HashRoute", "Ch3")
    assert [child["default_policy"] for child in route["children"]] == [
        "LatestRoute|Pool|shard-0", "LatestRoute|Pool|shard-1", "LatestRoute|Pool|shard-2"]
    assert route["children"][1]["operation_policies"]["set"] == "AllSyncRoute|Pool|shard-1"


def test_a_shard_without_ready_backends_is_left_out() -> None:
    config = build_config(backends(0, 1, 4, 5), "sharded", replicas_per_shard=2)

    assert list(config["pools"]) == ["shard-0", "shard-2"]
    assert [c["default_policy"] for c in config["route"]["children"]] == [
        "LatestRoute|Pool|shard-0", "LatestRoute|Pool|shard-2"]


def test_shards_are_consecutive_ordinals() -> None:
    assert [shard_of(i, "sharded", 3) for i in range(7)] == [0, 0, 0, 1, 1, 1, 2]
    assert {shard_of(i, "replicated", 3) for i in range(7)} == {0}


def test_no_backend_answers_errors_instead_of_routing_nowhere() -> None:
    config = build_config([], "sharded")

    assert config["pools"] == {}
    assert config["route"].startswith("ErrorRoute|")


def test_ipv6_backends_are_bracketed() -> None:
    assert Backend(0, "fd00::5").address == "[fd00::5]:11211"


def test_rendering_is_canonical_json_so_equal_backends_hash_equal() -> None:
    one = render(build_config(backends(2, 0, 1), "sharded"))
    two = render(build_config(backends(0, 1, 2), "sharded"))

    assert one == two and digest(one) == digest(two)
    assert json.loads(one)["pools"]["shards"]["servers"][0] == "10.0.0.10:11211"
    assert digest(render(build_config(backends(0, 1), "sharded"))) != digest(one)
    assert len(digest(one)) == 10


def test_servers_of_lists_every_pool_in_order() -> None:
    config = build_config(backends(0, 1, 2, 3), "sharded", replicas_per_shard=2)

    assert servers_of(config) == [b.address for b in backends(0, 1, 2, 3)]
