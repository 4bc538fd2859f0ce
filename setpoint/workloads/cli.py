"""``setpoint node``: add, cordon, taint and break the embedded cluster's simulated nodes.

Every command is a write through the API server named by ``--kubeconfig`` (default
``$KUBECONFIG``), so it works on any cluster that runs Setpoint's workloads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from setpoint.workloads.clitools import kubeconfig_option, run_against


def _taints(values: tuple[str, ...]) -> list[Any]:
    from setpoint.workloads.nodeops import parse_taint

    out = []
    for text in values:
        try:
            out.append(parse_taint(text))
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--taint") from None
    return out


def _labels(values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for text in values:
        key, sep, value = text.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{text!r} is not key=value", param_hint="--label")
        out[key] = value
    return out


@click.group()
def node() -> None:
    """Add, cordon, taint and fail simulated nodes."""


@node.command("add")
@click.argument("name", required=False)
@click.option("--cpu", help="CPU capacity (default 4).")
@click.option("--memory", help="Memory capacity (default 16Gi).")
@click.option("--pods", type=click.IntRange(0), help="Pod capacity (default 110).")
@click.option("--zone", help="topology.kubernetes.io/zone (default: round-robin).")
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="A node label.")
@click.option("--taint", "taints", multiple=True, metavar="KEY[=VALUE]:EFFECT",
              help="A taint, e.g. dedicated=db:NoSchedule.")
@kubeconfig_option
def add(name: str | None, cpu: str | None, memory: str | None, pods: int | None,
        zone: str | None, labels: tuple[str, ...], taints: tuple[str, ...],
        kubeconfig: Path | None) -> None:
    """Register a new node (named node-N when NAME is not given)."""
    from setpoint.machinery.quantity import Quantity, QuantityError
    from setpoint.workloads import nodeops

    for option, value in (("--cpu", cpu), ("--memory", memory)):
        if value is not None:
            try:
                Quantity.parse(value)
            except (QuantityError, ValueError):
                raise click.BadParameter(f"{value!r} is not a quantity",
                                         param_hint=option) from None
    parsed_taints, parsed_labels = _taints(taints), _labels(labels)
    created = run_against(kubeconfig, lambda client: nodeops.add_node(
        client, name, cpu=cpu, memory=memory, pods=pods, zone=zone, labels=parsed_labels,
        taints=parsed_taints))
    click.echo(f"node/{created['metadata']['name']} added")


def _simple(verb: str, past: str, operation: str, help_text: str) -> None:
    @node.command(verb, help=help_text)
    @click.argument("name")
    @kubeconfig_option
    def command(name: str, kubeconfig: Path | None) -> None:
        from setpoint.workloads import nodeops

        run_against(kubeconfig, lambda client: getattr(nodeops, operation)(client, name))
        click.echo(f"node/{name} {past}")


_simple("cordon", "cordoned", "cordon", "Mark NAME unschedulable.")
_simple("uncordon", "uncordoned", "uncordon", "Mark NAME schedulable again.")
_simple("ready", "ready", "set_ready", "Bring NAME's kubelet back (Ready again).")


@node.command("notready")
@click.argument("name")
@click.option("--mode", type=click.Choice(["unreachable", "not-ready"]),
              default="unreachable", show_default=True,
              help="unreachable: the kubelet stops (Ready=Unknown once its Lease is older than "
                   "the node monitor grace period, 40 s); not-ready: it reports Ready=False.")
@kubeconfig_option
def notready(name: str, mode: str, kubeconfig: Path | None) -> None:
    """Make NAME NotReady; its pods are evicted after their toleration time."""
    from setpoint.workloads import nodeops

    run_against(kubeconfig, lambda client: nodeops.set_not_ready(
        client, name, unreachable=mode == "unreachable"))
    click.echo(f"node/{name} not ready ({mode})")


@node.command("taint")
@click.argument("name")
@click.argument("taint_specs", nargs=-1, required=True, metavar="KEY[=VALUE]:EFFECT[-]...")
@kubeconfig_option
def taint(name: str, taint_specs: tuple[str, ...], kubeconfig: Path | None) -> None:
    """Add taints to NAME; a trailing '-' (KEY:EFFECT- or KEY-) removes them."""
    from setpoint.workloads import nodeops

    changes: list[tuple[str, Any]] = []
    for spec in taint_specs:
        if spec.endswith("-"):
            key, _, effect = spec[:-1].partition(":")
            if not key or (effect and effect not in nodeops.EFFECTS):
                raise click.BadParameter(f"invalid taint spec: {spec}")
            changes.append(("remove", (key, effect or None)))
        else:
            try:
                changes.append(("add", nodeops.parse_taint(spec)))
            except ValueError as exc:
                raise click.BadParameter(str(exc)) from None

    async def apply(client: Any) -> None:
        for kind, change in changes:
            if kind == "remove":
                await nodeops.untaint(client, name, *change)
            else:
                await nodeops.taint(client, name, change.key, change.value, change.effect)

    run_against(kubeconfig, apply)
    click.echo(f"node/{name} tainted")
