"""``setpoint pod``: pod faults on the embedded cluster's simulated kubelets.

    setpoint pod restart web-0 --container web --kubeconfig kc.yaml
    setpoint pod fail web-1 --reason Evicted -n shop
    setpoint pod delay-readiness web-2 5s
    setpoint pod usage web-3 --cpu 250m --memory 128Mi

Every command is a write through the API server named by ``--kubeconfig`` (default
``$KUBECONFIG``), carried out by the kubelet (see :mod:`setpoint.workloads.faults`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from setpoint.workloads import clitools
from setpoint.workloads.clitools import kubeconfig_option

namespace_option = click.option("-n", "--namespace", default="default", show_default=True,
                                help="The pod's namespace.")


_TIMEOUT = ("the kubelet did not carry the fault out in time (is the pod on a simulated "
              "node whose kubelet runs?)")



def _run(kubeconfig: Path | None, action: Any) -> Any:
    return clitools.run_against(kubeconfig, action, on_timeout=_TIMEOUT)


@click.group()
def pod() -> None:
    """Restart, fail and slow down pods on simulated nodes."""


@pod.command("restart")
@click.argument("name")
@namespace_option
@click.option("-c", "--container", default=None, help="The container (default: all).")
@click.option("--wait/--no-wait", default=True, show_default=True,
              help="Wait until the kubelet has restarted it.")
@click.option("--timeout", default=30.0, show_default=True, help="Seconds to wait.")
@kubeconfig_option
def restart(name: str, namespace: str, container: str | None, wait: bool, timeout: float,
            kubeconfig: Path | None) -> None:
    """Kill a container of pod NAME and let the kubelet restart it."""
    from setpoint.workloads import faults

    result = _run(kubeconfig, lambda c: faults.restart_container(
        c, name, namespace, container, wait=wait, timeout=timeout))
    counts = ", ".join(f"{cs.get('name')}={cs.get('restartCount')}" for cs in
                       (result.get("status") or {}).get("containerStatuses") or ())
    verb = "restarted" if wait else "restart requested"
    click.echo(f"pod/{name} {verb}" + (f" (restarts: {counts})" if wait and counts else ""))


@pod.command("fail")
@click.argument("name")
@namespace_option
@click.option("--reason", default="SimulatedFailure", show_default=True,
              help="status.reason of the failed pod.")
@click.option("--message", default=None, help="status.message of the failed pod.")
@click.option("--wait/--no-wait", default=True, show_default=True,
              help="Wait until the pod is Failed.")
@click.option("--timeout", default=30.0, show_default=True, help="Seconds to wait.")
@kubeconfig_option
def fail(name: str, namespace: str, reason: str, message: str | None, wait: bool,
         timeout: float, kubeconfig: Path | None) -> None:
    """Fail pod NAME: its containers are killed and its phase becomes Failed."""
    from setpoint.workloads import faults

    result = _run(kubeconfig, lambda c: faults.fail_pod(
        c, name, namespace, reason=reason, message=message, wait=wait, timeout=timeout))
    if wait:
        reason_now = (result.get("status") or {}).get("reason") or reason
        click.echo(f"pod/{name} failed ({reason_now})")
    else:
        click.echo(f"pod/{name} failure requested")


@pod.command("delay-readiness")
@click.argument("name")
@click.argument("delay")
@namespace_option
@kubeconfig_option
def delay_readiness(name: str, delay: str, namespace: str, kubeconfig: Path | None) -> None:
    """Make pod NAME's containers ready only DELAY (e.g. 5s) after they start."""
    from setpoint.workloads import faults

    _run(kubeconfig, lambda c: faults.delay_readiness(c, name, namespace, delay))
    click.echo(f"pod/{name} readiness delayed by {delay}")


@pod.command("usage")
@click.argument("name")
@namespace_option
@click.option("--cpu", default=None, help="Simulated CPU usage (e.g. 250m).")
@click.option("--memory", default=None, help="Simulated memory usage (e.g. 128Mi).")
@kubeconfig_option
def usage(name: str, namespace: str, cpu: str | None, memory: str | None,
          kubeconfig: Path | None) -> None:
    """Set pod NAME's simulated resource usage (what kubectl top shows)."""
    from setpoint.workloads import faults

    if cpu is None and memory is None:
        raise click.UsageError("give --cpu, --memory or both")
    _run(kubeconfig, lambda c: faults.set_usage(c, name, namespace, cpu=cpu, memory=memory))
    click.echo(f"pod/{name} usage set")
