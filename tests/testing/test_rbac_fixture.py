"""``run_manager(..., rbac=True)``: the operator runs with only the RBAC generated for it."""

from __future__ import annotations

from typing import Any

from setpoint.client import Client, ForbiddenError, Kind
from setpoint.runtime import Context, Controller, Result
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
