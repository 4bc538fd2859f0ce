"""``setpoint check (MANIFESTS | --cluster OPERATOR)``: the operator maturity check."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TYPE_CHECKING

import click

from setpoint.cli.platformopts import client_options, connect

if TYPE_CHECKING:
    from setpoint.platform.maturity import Report


def _instance(value: str | None) -> tuple[str, str] | None:
    if value is None:
        return None
    kind, sep, name = value.partition("/")
    if not sep or not kind or not name:
        raise click.BadParameter(f"{value!r}: expected KIND/NAME", param_hint="--instance")
    return kind, name


@click.command()
@click.argument("manifests", nargs=-1, type=click.Path(allow_dash=True))
@click.option("--cluster", "operator", metavar="OPERATOR",
              help="Inspect the operator running as this Deployment (or ServiceAccount) "
                   "on the kubeconfig's cluster instead of MANIFESTS.")
@click.option("--namespace", "-n", default=None,
              help="The operator's (and --instance's) namespace. Default: the context's.")
@click.option("--crd", "crds", multiple=True, metavar="NAME",
              help="A CRD the operator serves, when its RBAC does not name it (repeatable).")
@click.option("--instance", metavar="KIND/NAME",
              help="Check only this instance, and exercise the dynamic checks on it "
                   "(deletes one of its pods).")
@click.option("--reaction-period", type=float, default=30.0, show_default=True,
              help="Seconds to wait for the operator to react to the pod deletion.")
@click.option("--output", "-o", type=click.Choice(["pretty", "json"]), default="pretty",
              show_default=True)
@client_options
def check(manifests: tuple[str, ...], operator: str | None, namespace: str | None,
          crds: tuple[str, ...], instance: str | None, reaction_period: float, output: str,
          kubeconfig: str | None, context: str | None) -> None:
    """Check an operator against KubePlus's maturity guidelines and report the
    operator-sdk capability level its evidence supports.

    From MANIFESTS (files, directories, or - for standard input: the output of `setpoint
    generate manifests` and `generate crds`, or any CRD/RBAC/Deployment YAML), or from
    the operator running on a cluster (--cluster). Exits 1 when a required check fails.
    """
    from setpoint.platform.maturity import pretty
    from setpoint.platform.operatorfacts import FactsError

    if bool(manifests) == bool(operator):
        raise click.UsageError("give either MANIFESTS or --cluster OPERATOR")
    if manifests and (instance or crds):
        raise click.UsageError("--instance and --crd need --cluster")
    try:
        report: Report = (asyncio.run(_from_cluster(
            operator, namespace, crds, _instance(instance), reaction_period, kubeconfig,
            context)) if operator else _from_manifests(manifests))
    except FactsError as exc:
        raise click.ClickException(str(exc)) from None
    text = json.dumps(report.to_json(), indent=2) + "\n" if output == "json" else pretty(report)
    sys.stdout.write(text)
    sys.stdout.flush()
    if report.failed_required:
        sys.exit(1)


def _from_manifests(paths: tuple[str, ...]) -> Report:
    from setpoint.platform.maturity import Report
    from setpoint.platform.maturitychecks import static_verdicts
    from setpoint.platform.operatorfacts import facts_from_manifests, read_manifests

    stdin = sys.stdin.read() if "-" in paths else None
    facts = facts_from_manifests(read_manifests(paths, stdin), "manifests: " + ", ".join(paths))
    return Report(facts.name, facts.source, static_verdicts(facts))


async def _from_cluster(operator: str | None, namespace: str | None, crds: tuple[str, ...],
                        instance: tuple[str, str] | None, reaction_period: float,
                        kubeconfig: str | None, context: str | None) -> Report:
    from setpoint.platform.maturity import Report
    from setpoint.platform.maturitychecks import static_verdicts
    from setpoint.platform.operatorfacts import facts_from_cluster
    from setpoint.platform.podrestart import pod_restart

    assert operator is not None
    async with connect(kubeconfig, context) as client:
        facts = await facts_from_cluster(client, operator, namespace or client.namespace,
                                         crds, instance)
        verdicts = static_verdicts(facts)
        if instance is not None:
            restarted = await pod_restart(client, facts, facts.instances[0], reaction_period)
            verdicts = [restarted if v.check.id == "pod-restarts" else v for v in verdicts]
    return Report(facts.name, facts.source, verdicts)
