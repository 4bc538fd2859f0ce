"""Level-triggered, as a property: whatever order answers and events arrive in, every
Widget ends reconciled with its final spec.

Each case is a seeded random schedule (the seed is in the test id, so a failure replays)
that interleaves, against the Widget example operator behind the testing kit's fault
proxy: users changing specs, the operator's status and ConfigMap writes held back, watches
cut and re-opened late. After each round the faults are lifted and every Widget must
show ``status.observedGeneration == metadata.generation`` and a ConfigMap holding its spec.
controller-runtime's contract is the rule (pkg/reconcile/reconcile.go: "Reconciliation is
level-based, meaning action isn't driven off changes in individual Events, but instead is
driven by actual cluster state"): events may be coalesced, never lost.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable

import pytest

from examples.widget.api import Widget, WidgetSpec
from examples.widget.operator import data_for, manager
from setpoint.client import Client
from setpoint.resources.models.core_v1 import ConfigMap
from setpoint.testing import Faults, SetpointCluster
from setpoint.testing.plugin import ManagerLauncher, Waiter

WIDGETS = 3
ROUNDS = 6
ROUND = 1.5
"""Seconds in which one round's actions happen."""
CONVERGE_TIMEOUT = 30.0
"""Generous: the longest injected delay is under two seconds."""


Action = Callable[[random.Random, Client, Faults], Awaitable[None]]


async def change_spec(rng: random.Random, k8s: Client, faults: Faults) -> None:
    await k8s.patch(Widget, f"w{rng.randrange(WIDGETS)}", {"spec": {
        "message": f"m{rng.randrange(10**6)}", "size": rng.randint(1, 9)}})


async def change_spec_twice(rng: random.Random, k8s: Client, faults: Faults) -> None:
    """A second change soon after the first, likely while the operator writes the status
    for the first, and maybe a watch cut between the two."""
    name = f"w{rng.randrange(WIDGETS)}"
    await k8s.patch(Widget, name, {"spec": {"message": f"m{rng.randrange(10**6)}"}})
    await asyncio.sleep(rng.uniform(0.0, 0.3))  # the schedule's gaps
    if rng.random() < 0.6:
        await cut_widget_watches(rng, k8s, faults)
    await asyncio.sleep(rng.uniform(0.0, 0.3))
    await k8s.patch(Widget, name, {"spec": {"message": f"m{rng.randrange(10**6)}"}})


async def cut_widget_watches(rng: random.Random, k8s: Client, faults: Faults) -> None:
    """The watch comes back late: events of the changes meanwhile arrive after the answers
    of writes made meanwhile."""
    faults.latency(rng.uniform(0.5, 2.5), verb="watch", resource="widgets", times=1)
    faults.drop_watches(resource="widgets")


async def cut_config_map_watches(rng: random.Random, k8s: Client, faults: Faults) -> None:
    faults.latency(rng.uniform(0.1, 1.0), verb="watch", resource="configmaps", times=1)
    faults.drop_watches(resource="configmaps")


ACTIONS: list[tuple[Action, int]] = [
    (change_spec, 2), (change_spec_twice, 5), (cut_widget_watches, 2),
    (cut_config_map_watches, 1)]


async def at(offset: float, action: Action, rng: random.Random, k8s: Client,
             faults: Faults) -> None:
    # not a wait for a condition: the randomized schedule itself (when this action happens in
    # its round); convergence is then awaited with wait_for
    await asyncio.sleep(offset)
    await action(rng, k8s, faults)


async def run_round(rng: random.Random, k8s: Client, faults: Faults) -> None:
    """A few actions at random moments of a short round, while the operator's status
    writes (and maybe its ConfigMap writes) are held back for a random while."""
    held = []
    if rng.random() < 0.8:
        held.append(faults.latency(rng.uniform(0.2, 1.5), verb="patch",
                                   resource="widgets/status"))
    if rng.random() < 0.3:
        held.append(faults.latency(rng.uniform(0.1, 0.6), verb=rng.choice(["update", "create"]),
                                   resource="configmaps"))
    actions, weights = zip(*ACTIONS, strict=True)
    chosen = rng.choices(actions, weights, k=rng.randint(2, 6))
    await asyncio.gather(*(at(rng.uniform(0.0, ROUND), action, rng, k8s, faults)
                           for action in chosen))
    for rule in held:
        rule.remove()


async def assert_all_reconciled(k8s: Client, wait_for: Waiter) -> None:
    for i in range(WIDGETS):
        final = await wait_for(
            Widget, f"w{i}", lambda w: w.status.observed_generation == w.metadata.generation,
            timeout=CONVERGE_TIMEOUT)
        cm = await k8s.get(ConfigMap, f"w{i}-cfg")
        assert cm.data == data_for(final), (final.spec, cm.data)


async def random_schedules_converge(seed: int, rounds: int, setpoint_cluster: SetpointCluster,
                                    k8s: Client, run_manager: ManagerLauncher,
                                    wait_for: Waiter, faults: Faults) -> None:
    await setpoint_cluster.install(Widget)
    await run_manager(manager)
    await asyncio.gather(*(k8s.create(Widget(name=f"w{i}", spec=WidgetSpec(message="new")))
                           for i in range(WIDGETS)))
    rng = random.Random(seed)
    for _ in range(rounds):
        await run_round(rng, k8s, faults)
        faults.clear()
        await assert_all_reconciled(k8s, wait_for)


@pytest.mark.parametrize("seed", range(3))
async def test_random_interleavings_end_with_every_spec_reconciled(
        seed: int, setpoint_cluster: SetpointCluster, k8s: Client,
        run_manager: ManagerLauncher, wait_for: Waiter, faults: Faults) -> None:
    await random_schedules_converge(seed, ROUNDS, setpoint_cluster, k8s, run_manager,
                                    wait_for, faults)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 110))
async def test_many_random_interleavings_end_with_every_spec_reconciled(
        seed: int, setpoint_cluster: SetpointCluster, k8s: Client,
        run_manager: ManagerLauncher, wait_for: Waiter, faults: Faults) -> None:
    await random_schedules_converge(seed, 4 * ROUNDS, setpoint_cluster, k8s, run_manager,
                                    wait_for, faults)
