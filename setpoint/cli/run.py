"""``setpoint run module:attribute``: run an operator's Manager until told to stop."""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

import click

from setpoint.cli.targets import TargetError, as_manager, resolve


@click.command("run")
@click.argument("target", metavar="MODULE:ATTRIBUTE")
@click.option("--kubeconfig", type=click.Path(dir_okay=False),
              help="The cluster to run against. Default: $KUBECONFIG, else the pod's "
                   "service account (in-cluster), else ~/.kube/config, else the "
                   "cluster `setpoint cluster up` started.")
@click.option("--context", help="The kubeconfig context. Default: its current context.")
@click.option("--namespace", "-n", help="Watch and act in this namespace only. "
                                        "Default: the Manager's setting (all namespaces).")
@click.option("--http-address", metavar="HOST:PORT",
              help="Serve /healthz, /readyz and /metrics here (e.g. 0.0.0.0:8081 in a pod). "
                   "Default: the Manager's setting (off unless it sets a port; loopback).")
@click.option("--webhook-address", metavar="HOST:PORT",
              help="Serve the webhooks here (e.g. 0.0.0.0:9443 in a pod). Default: the "
                   "Manager's setting (127.0.0.1:9443).")
@click.option("--webhook-cert-dir", type=click.Path(file_okay=False),
              help="Directory of the webhook server's tls.crt and tls.key (a mounted "
                   "Secret). Default: the Manager's setting.")
@click.option("--register-webhooks", is_flag=True,
              help="Point the cluster at this process's webhooks while it runs (a cluster "
                   "on this machine, such as `setpoint cluster up`): a self-signed "
                   "certificate is made when --webhook-cert-dir holds none.")
@click.option("--leader-elect/--no-leader-elect", default=None,
              help="Run the controllers only while this process holds the leader Lease, so "
                   "that of several replicas (or two runs against one cluster) only one "
                   "reconciles and another takes over when it stops, as kubebuilder's "
                   "--leader-elect. Default: the Manager's setting (off unless it sets "
                   "leader_election).")
@click.option("--leader-election-id", metavar="NAME",
              help="The name of the leader Lease. Default: the Manager's setting, else "
                   "<manager name>-leader.")
@click.option("--leader-election-namespace", metavar="NAMESPACE",
              help="The namespace of the leader Lease. Default: the Manager's setting, else "
                   "the kubeconfig context's namespace (the pod's, in a cluster).")
@click.option("--kube-api-qps", type=float, metavar="QPS",
              help="Client-side rate limit of the operator's requests, a second (the name "
                   "kube-controller-manager gives it): negative turns it off, 0 takes "
                   "client-go's 5. Default: the Manager's setting (off, as "
                   "controller-runtime: the server's priority and fairness decides).")
@click.option("--kube-api-burst", type=click.IntRange(0), metavar="N",
              help="Requests that may go at once before --kube-api-qps spaces them "
                   "(0: client-go's 10). Default: the Manager's setting.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]),
              default="info", show_default=True)
@click.option("--log-format", type=click.Choice(["text", "json"]), default="text",
              show_default=True,
              help="json: one JSON object a line (time, level, logger, message and the "
                   "fields: controller, namespace, name, reconcileID ...).")
def run(target: str, kubeconfig: str | None, context: str | None, namespace: str | None,
        http_address: str | None, webhook_address: str | None, webhook_cert_dir: str | None,
        register_webhooks: bool, leader_elect: bool | None, leader_election_id: str | None,
        leader_election_namespace: str | None, kube_api_qps: float | None,
        kube_api_burst: int | None, log_level: str, log_format: str) -> None:
    """Run the Manager (or the Controller, or list of controllers) at MODULE:ATTRIBUTE.

    It stops gracefully on SIGINT or SIGTERM: in-flight reconciles finish and the leader
    lease is released. Run more than one against a cluster only with --leader-elect:
    otherwise each reconciles every object.
    """
    from setpoint.client import ConfigError, load_config

    _, _, obj = resolve(target)
    manager = as_manager(obj, target)
    if manager.ready or manager.leader:
        raise TargetError(f"{target} is already running: point at a Manager not started")
    kubeconfig = kubeconfig or _local_cluster_fallback()
    try:
        # resolve the configuration now, so a mistake is one line, not a failed start
        load_config(kubeconfig, context=context)
    except ConfigError as exc:
        hint = "" if kubeconfig is not None else (
            " (or pass --kubeconfig FILE, or start a cluster with `setpoint cluster up`)")
        raise TargetError(f"{exc}{hint}") from None
    manager.settings.kubeconfig = kubeconfig
    manager.settings.context = context
    if namespace is not None:
        manager.settings.namespace = namespace
    if http_address is not None:
        manager.settings.http_host, manager.settings.http_port = _address(
            "--http-address", http_address, "0.0.0.0:8081")
    if webhook_address is not None:
        manager.settings.webhook_host, manager.settings.webhook_port = _address(
            "--webhook-address", webhook_address, "0.0.0.0:9443")
    if webhook_cert_dir is not None:
        manager.settings.webhook_cert_dir = webhook_cert_dir
    if leader_elect is not None:
        manager.settings.leader_election = leader_elect
    if leader_election_id is not None:
        manager.settings.leader_election_id = leader_election_id
    if leader_election_namespace is not None:
        manager.settings.leader_election_namespace = leader_election_namespace
    if kube_api_qps is not None:
        if kube_api_qps != kube_api_qps or kube_api_qps == float("inf"):
            raise click.BadParameter(
                f"{kube_api_qps} is not a rate: pass requests a second, or -1 for no "
                "client-side limit", param_hint="--kube-api-qps")
        manager.settings.client_qps = kube_api_qps
    if kube_api_burst is not None:
        manager.settings.client_burst = kube_api_burst
    if register_webhooks:
        if not manager.webhooks:
            raise TargetError(f"{target} has no webhooks to register")
        manager.settings.webhook_generate_certs = True
        manager.add_runnable(_keep_webhooks_registered)
    _configure_logging(log_level, log_format)
    try:
        from setpoint.cli.eventloop import run as run_loop

        run_loop(manager.run())
    except KeyboardInterrupt:  # a second Ctrl+C while stopping
        sys.exit(130)
    except Exception as exc:
        from setpoint.runtime import LeaderElectionLost
        from setpoint.runtime._controller import NoReconcilerError
        from setpoint.runtime._startup import StartupRefused
        from setpoint.runtime._webhook.certs import CertificateInvalid, CertificateNotFound
        from setpoint.runtime._webhook.server import ListenError

        if isinstance(exc, CertificateNotFound):
            click.echo(f"error: the webhook server has no certificate: {exc.cert_file} and "
                       f"{exc.key_file} do not exist: pass --webhook-cert-dir DIR (with "
                       "tls.crt and tls.key), or --register-webhooks to serve a self-signed "
                       "one to a local cluster", err=True)
            sys.exit(1)
        if isinstance(exc, CertificateInvalid):
            click.echo(f"error: the webhook server cannot use its certificate: {exc}: put "
                       "a PEM certificate and the key it was issued for in --webhook-cert-dir "
                       "(tls.crt and tls.key, as a kubernetes.io/tls Secret holds them)",
                       err=True)
            sys.exit(1)
        if isinstance(exc, ListenError):
            click.echo(f"error: {exc}: pass another {exc.option} ({exc.option} "
                       "127.0.0.1:0 takes a free port)", err=True)
            sys.exit(1)

        if isinstance(exc, LeaderElectionLost | TimeoutError | StartupRefused
                      | NoReconcilerError):
            click.echo(f"error: {exc}", err=True)
            sys.exit(1)
        raise


def _configure_logging(level: str, log_format: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        from setpoint.runtime import JsonFormatter

        handler.setFormatter(JsonFormatter())
    else:
        from setpoint.runtime import TextFormatter

        handler.setFormatter(TextFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logging.basicConfig(level=level.upper(), handlers=[handler])


def _address(option: str, value: str, example: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    # a port past 65535 must not reach bind(): uvloop takes it modulo 65536
    if not port.isdigit() or not host or int(port) > 65535:
        raise TargetError(f"{option} {value!r} is not HOST:PORT, PORT in 0-65535 "
                          f"(for example {example})")
    return host.strip("[]"), int(port)


async def _keep_webhooks_registered(manager: Any) -> None:
    """Register the manager's webhooks while it runs; take them back when it stops."""
    from setpoint.runtime._webhook.registration import register, unregister

    registration = await register(manager.webhook_server, manager.webhooks,
                                  manager.settings.name, manager.client)
    click.echo(f"webhooks registered at {manager.webhook_server.url}", err=True)
    try:
        await asyncio.Event().wait()
    finally:
        await unregister(manager.client, registration)


def _local_cluster_fallback() -> str | None:
    """The kubeconfig of ``setpoint cluster up``'s default cluster, when nothing else
    names a cluster (no KUBECONFIG, not in a pod, no ~/.kube/config)."""
    from setpoint.client import ConfigError, load_config, local_cluster_kubeconfig

    try:
        load_config()
    except ConfigError:
        local = local_cluster_kubeconfig()
        return str(local) if local.exists() else None
    return None
