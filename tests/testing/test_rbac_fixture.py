"""``run_manager(..., rbac=True)``: the operator runs with only the RBAC generated for it."""

from __future__ import annotations

from typing import Any

from setpoint.client import Client, ForbiddenError, Kind
from setpoint.runtime import Context, Controller, Result
from setpoint.runtime._objects import kind_key
from setpoint.testing import Faults
from setpoint.testing.plugin import ManagerLauncher, Waiter

CONFIGMAP = Kind("v1", "ConfigMap")
SECRET = Kind("v1", "Secret")


async def test_an_undeclared_read_is_forbidden_as_it_would_be_in_a_cluster(
        run_manager: ManagerLauncher, k8s: Client, wait_for: Waiter) -> None:
    outcomes: list[str] = []
    sneaky = Controller.for_(CONFIGMAP, name="sneaky")

    @sneaky.reconcile
    async def reconcile(ctx: Context[dict[str, Any]], cm: dict[str, Any]) -> Result:
        try:  # secrets were never declared (no watches, no reads): the roles omit them
            await ctx.client.list(SECRET, namespace=cm["metadata"]["namespace"])
            outcomes.append("listed")
        except ForbiddenError as exc:
            outcomes.append(exc.message)
        return Result()

    runner = await run_manager(sneaky, rbac=True)
    await k8s.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    await wait_for(lambda: outcomes)
    namespace = k8s.namespace
    assert outcomes[0] == (
        f'secrets is forbidden: User "system:serviceaccount:{namespace}:setpoint" cannot list '
        f'resource "secrets" in API group "" in the namespace "{namespace}"')

    roles = Kind("rbac.authorization.k8s.io/v1", "ClusterRole")

    async def its_roles() -> list[str]:
        return [r["metadata"]["name"] for r in (await k8s.list(roles)).items
                if r["metadata"]["name"] == "setpoint"]

    assert await its_roles() == ["setpoint"]
    await runner.stop()
    assert await its_roles() == []  # what it was given goes with it
    outcomes.clear()
    await run_manager(sneaky)  # as the administrator: allowed
    await k8s.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "y"}})
    await wait_for(lambda: "listed" in outcomes)


async def test_the_generated_roles_allow_every_context_call_on_the_primary_kind(
        run_manager: ManagerLauncher, k8s: Client, wait_for: Waiter) -> None:
    """A controller adding and removing a finalizer and writing its object runs under its own
    generated roles. The scaffold of kubebuilder (controller-gen's ``+kubebuilder:rbac``
    markers in ``internal/controller/*_controller.go``) grants get/list/watch/create/update/
    patch/delete on the primary kind, update on ``<plural>/finalizers`` and get/update/patch
    on ``<plural>/status``: every call the Context offers on it."""
    outcomes: list[str] = []
    finalizing = Controller.for_(CONFIGMAP, name="finalizing")

    @finalizing.reconcile
    async def reconcile(ctx: Context[dict[str, Any]], cm: dict[str, Any]) -> Result:
        if cm["metadata"]["name"] != "x":  # (not the cluster's own kube-root-ca.crt)
            return Result()
        try:
            if ctx.deleting:
                await ctx.remove_finalizer("example.com/cleanup")
                outcomes.append("removed")
            elif await ctx.add_finalizer("example.com/cleanup"):
                await ctx.create_or_update(
                    cm, lambda current: current.__setitem__("data", {"seen": "yes"}))
                outcomes.append("added")
        except ForbiddenError as exc:
            outcomes.append(exc.message)
        return Result()

    await run_manager(finalizing, rbac=True)
    await k8s.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    await wait_for(lambda: outcomes)
    assert outcomes == ["added"]
    assert (await k8s.get(CONFIGMAP, "x"))["data"] == {"seen": "yes"}
    await k8s.delete(CONFIGMAP, "x")
    await wait_for(lambda: len(outcomes) > 1)
    assert outcomes == ["added", "removed"]


async def test_a_controller_adds_rules_with_permits(
        run_manager: ManagerLauncher, k8s: Client, wait_for: Waiter) -> None:
    outcomes: list[str] = []
    reader = Controller.for_(CONFIGMAP, name="reader").permits(
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]})

    @reader.reconcile
    async def reconcile(ctx: Context[dict[str, Any]], cm: dict[str, Any]) -> Result:
        if cm["metadata"]["name"] != "x":  # (not the cluster's own kube-root-ca.crt)
            return Result()
        try:
            await ctx.client.list(SECRET, namespace=cm["metadata"]["namespace"])
            outcomes.append("listed")
        except ForbiddenError as exc:
            outcomes.append(exc.message)
        return Result()

    await run_manager(reader, rbac=True)
    await k8s.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    await wait_for(lambda: outcomes)
    assert outcomes == ["listed"]


async def test_faults_apply_to_an_operator_run_with_its_own_rbac(
        faults: Faults, run_manager: ManagerLauncher, k8s: Client, wait_for: Waiter) -> None:
    """The fault proxy forwards the operator's own service-account token (it was refused
    with 401 before: the proxy only took its own token), so the server judges it by the
    operator's RBAC and the proxy's faults still apply."""
    seen: list[str] = []
    watcher = Controller.for_(CONFIGMAP, name="watcher")

    @watcher.reconcile
    async def reconcile(ctx: Context[dict[str, Any]], cm: dict[str, Any]) -> Result:
        seen.append(cm["metadata"]["name"])
        return Result()

    rule = faults.fail(verb="list", resource="configmaps", status=500, times=1)
    await run_manager(watcher, rbac=True)
    await k8s.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    await wait_for(lambda: "x" in seen)
    assert rule.hits == 1  # the informer's first list failed and was retried


async def test_a_controller_added_to_the_running_operator_is_granted_what_it_declares(
        run_manager: ManagerLauncher, k8s: Client, wait_for: Waiter) -> None:
    """The kit plays the deployer for a controller added after start (controller-runtime's
    ``Manager.Add`` after ``Start``, pkg/manager/runnable_group.go): the roles it applied
    at start are applied again from the manager's permissions, which now hold the added
    controller's declarations, before its informers list. So its Secrets are listed and
    watched without a single refusal, and what was granted goes at stop."""
    seen: list[str] = []
    first = Controller.for_(CONFIGMAP, name="first")
    added = Controller.for_(SECRET, name="added")

    @first.reconcile
    async def reconcile_first(ctx: Context[dict[str, Any]], cm: dict[str, Any]) -> Result:
        return Result()

    @added.reconcile
    async def reconcile_added(ctx: Context[dict[str, Any]], obj: dict[str, Any]) -> Result:
        seen.append(obj["metadata"]["name"])
        return Result()

    runner = await run_manager(first, rbac=True)
    manager = runner.manager
    assert manager is not None
    roles = Kind("rbac.authorization.k8s.io/v1", "ClusterRole")

    async def granted_resources() -> set[str]:
        role = await k8s.get(roles, "setpoint")
        return {r for rule in role["rules"] for r in rule.get("resources", ())}

    assert "secrets" not in await granted_resources()
    manager.add(added)
    await k8s.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})
    await wait_for(lambda: "s" in seen)
    assert "secrets" in await granted_resources()
    secrets = manager.informers[kind_key(SECRET)]
    assert secrets.refusal is None and secrets.lists == 1  # granted before it listed
    assert manager.error is None and manager.ready
    await runner.stop()
    assert [r["metadata"]["name"] for r in (await k8s.list(roles)).items
            if r["metadata"]["name"] == "setpoint"] == []
