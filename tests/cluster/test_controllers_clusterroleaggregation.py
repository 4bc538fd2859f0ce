"""ClusterRole aggregation inside a bare API server: aggregates that select aggregates.

Go's clusterrole-aggregation controller (kubernetes/kubernetes
pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go ``syncClusterRole``)
sets an aggregate's rules to those of the ClusterRoles its selectors match, in name order,
each rule once, and is run again for every aggregate whenever a ClusterRole changes, until
nothing changes. Setpoint's takes a selected aggregate's rules as its own sync will make
them, so it reaches that same end in one write per aggregate (``admin`` selects ``edit``,
which selects ``view``: at start, one write each instead of three, two and one).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from setpoint.cluster.apiserver import APIServer
from setpoint.cluster.registry.options import WriteOptions
from setpoint.cluster.serializer.decode import Decoded
from tests.waiting import quiet_period, wait_for

ROLES = "rbac.authorization.k8s.io/clusterroles"
USER = WriteOptions(field_manager="tests")
AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"


@pytest.fixture
async def server() -> AsyncIterator[APIServer]:
    api = APIServer(None)
    api.start()
    yield api
    await api.stop()


def _fixpoint_rules(api: APIServer, name: str) -> list[Any]:
    """Go's rule for ``name`` over what is stored now: the selected roles' stored rules in
    name order, each once (what a settled cluster holds)."""
    role = api.store.get(ROLES, "", name)
    assert role is not None
    rules: list[Any] = []
    for other in sorted(api.store.list(ROLES), key=lambda r: r["metadata"]["name"]):
        other_labels = other["metadata"].get("labels") or {}
        if other["metadata"]["name"] != name and any(
                all(other_labels.get(k) == v for k, v in (s.get("matchLabels") or {}).items())
                for s in role["aggregationRule"]["clusterRoleSelectors"]):
            rules += [rule for rule in other.get("rules") or [] if rule not in rules]
    return rules


def _writes(api: APIServer, name: str) -> int:
    history = api.store.events_since(ROLES, api.store.compacted_revision)
    assert history is not None
    return sum(1 for e in history if e.type == "MODIFIED" and e.name == name)


def _create(api: APIServer, name: str, labels: dict[str, str], *,
            selects: str | None = None, rules: list[Any] | None = None) -> None:
    role: dict[str, Any] = {"metadata": {"name": name, "labels": labels}, "rules": rules or []}
    if selects is not None:
        role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {selects: "true"}}]}
    api.rest.create(api.resource("rbac.authorization.k8s.io", "v1", "clusterroles"), None,
                    Decoded(role), USER)


async def test_the_bootstrap_aggregates_are_written_once_each_at_start(
        server: APIServer) -> None:
    def settled() -> bool:
        return all((server.store.get(ROLES, "", n) or {}).get("rules") == _fixpoint_rules(
            server, n) for n in ("admin", "edit", "view"))

    await wait_for(settled)
    await quiet_period()
    assert settled()
    view = server.store.get(ROLES, "", "view")
    admin = server.store.get(ROLES, "", "admin")
    assert view is not None and admin is not None
    assert view["rules"] and all(rule in admin["rules"] for rule in view["rules"])
    assert {n: _writes(server, n) for n in ("admin", "edit", "view")} == {
        "admin": 1, "edit": 1, "view": 1}


async def test_a_rule_added_under_a_chain_reaches_its_top_in_one_write_each(
        server: APIServer) -> None:
    pods = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
    leases = {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["list"]}
    _create(server, "top", {}, selects=AGGREGATE + "top")
    _create(server, "mid", {AGGREGATE + "top": "true"}, selects=AGGREGATE + "mid")
    _create(server, "base-a", {AGGREGATE + "mid": "true"}, rules=[pods])

    def top_rules() -> Any:
        return (server.store.get(ROLES, "", "top") or {}).get("rules")

    await wait_for(lambda: top_rules() == [pods])
    await quiet_period()
    before = {n: _writes(server, n) for n in ("top", "mid")}
    _create(server, "base-b", {AGGREGATE + "mid": "true"}, rules=[leases, pods])
    await wait_for(lambda: top_rules() == [pods, leases])
    await quiet_period()
    assert {n: _writes(server, n) - before[n] for n in ("top", "mid")} == {"top": 1, "mid": 1}
    assert top_rules() == _fixpoint_rules(server, "top")
    assert (server.store.get(ROLES, "", "mid") or {}).get("rules") == _fixpoint_rules(server, "mid")


async def test_aggregates_that_select_each_other_settle_on_the_rules_they_select(
        server: APIServer) -> None:
    """A cycle reads the aggregate being computed as stored: the sync ends (no endless
    recursion) and both roles settle on what Go's controller settles on."""
    pods = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
    _create(server, "ring-a", {AGGREGATE + "ring-b": "true"}, selects=AGGREGATE + "ring-a")
    _create(server, "ring-b", {AGGREGATE + "ring-a": "true"}, selects=AGGREGATE + "ring-b")
    _create(server, "leaf", {AGGREGATE + "ring-a": "true"}, rules=[pods])

    def settled() -> bool:
        return all((server.store.get(ROLES, "", n) or {}).get("rules") == _fixpoint_rules(
            server, n) == [pods] for n in ("ring-a", "ring-b"))

    await wait_for(settled)
    await quiet_period()
    assert settled()
