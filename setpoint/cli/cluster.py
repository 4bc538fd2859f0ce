"""``setpoint cluster``: run the embedded Kubernetes API server.

``cluster up`` spawns its workloads' process as soon as its command line is parsed, before
it imports its event loop and the server (``setpoint.cli.supervisor``): what this module
imports at the top delays that child, the critical path of the start.
"""

from __future__ import annotations

import errno
import gc
import sys
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from setpoint.cli.auditflags import audit_flags

if TYPE_CHECKING:
    import asyncio
    import subprocess

    from setpoint.cli.stopsignal import StopSignal
    from setpoint.cluster.admission.admissionconfig import AdmissionConfiguration


@dataclass(frozen=True)
class WorkloadOptions:
    """What ``cluster up`` runs beside the API server (None: a bare API server)."""

    nodes: int
    node_cpu: str
    node_memory: str
    node_pods: int
    runtime: str = "simulated"
    loopback_network: int = 0
    in_process: bool = False
    node_monitor_grace_period: float = 40.0
    node_startup_grace_period: float = 60.0
    node_monitor_period: float = 5.0
    node_lease_duration_seconds: int = 40

    def fields(self) -> dict[str, Any]:
        """The :class:`~setpoint.workloads.settings.WorkloadSettings` fields they set."""
        return {"nodes": self.nodes, "node_cpu": self.node_cpu,
                "node_memory": self.node_memory, "node_pods": self.node_pods,
                "runtime": self.runtime, "loopback_network": self.loopback_network,
                "node_monitor_grace_period_seconds": self.node_monitor_grace_period,
                "node_startup_grace_period_seconds": self.node_startup_grace_period,
                "node_monitor_period_seconds": self.node_monitor_period,
                "node_lease_duration_seconds": self.node_lease_duration_seconds}

    def settings(self) -> Any:
        from setpoint.workloads.settings import WorkloadSettings

        return WorkloadSettings(**self.fields())


def _quantity(ctx: click.Context, param: click.Parameter, value: str) -> str:
    from setpoint.machinery.quantity import Quantity, QuantityError

    example = "16Gi or 16G" if param.name == "node_memory" else "4 or 500m"
    try:
        negative = Quantity.parse(value).sign() < 0
    except (QuantityError, ValueError):
        # "16GB", "4 cores": Kubernetes' suffixes are binary (Ki, Mi, Gi) or decimal (k, M,
        # G), and no unit (resource.Quantity's grammar, apimachinery's quantity.go)
        raise click.BadParameter(
            f"{value!r} is not a Kubernetes quantity: write e.g. {example}") from None
    if negative:
        raise click.BadParameter(f"{value!r} is negative: write e.g. {example}")
    return value


LEASE_RENEW_FRACTION = 0.25
"""Which part of its Lease's duration a kubelet waits between two renewals
(pkg/kubelet/kubelet.go ``nodeLeaseRenewIntervalFraction``: 10 s of the default 40 s): a node
monitor grace period at or below that interval would mark every healthy node Unknown between
two renewals. The simulated kubelets' own (setpoint.workloads.nodes), not imported: the
flags are read before anything heavy is."""


def _grace_outlasts_renewals(grace: float, lease_duration: int) -> None:
    """Refuse a grace period the kubelets' renewals cannot keep up with. Checked once every
    flag is read (click reads them in the order given), naming the grace period's flag."""
    renew = lease_duration * LEASE_RENEW_FRACTION
    if grace <= renew:
        raise click.BadParameter(
            f"{grace:g}s is not longer than the {renew:g}s in which the kubelets "
            f"renew their node Leases (a quarter of --node-lease-duration-seconds), so every "
            f"node would turn Unknown between two renewals: pass more than {renew:g}s (the "
            f"default is 40s)", param_hint="'--node-monitor-grace-period'")


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> float:
    """A kube-controller-manager duration flag: Go's ``time.ParseDuration`` syntax."""
    from setpoint.machinery.gotime import parse_duration

    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(f"{exc}: write a duration as kube-controller-manager takes "
                                 f"it, such as 40s, 2m or 1m30s") from None
    if seconds <= 0:
        raise click.BadParameter(f"{value} is not a positive duration: pass one such as "
                                 f"{param.default}")
    return seconds


def default_data_dir() -> Path:
    from setpoint.client.config import local_cluster_dir

    return local_cluster_dir()


@click.group()
def cluster() -> None:
    """Run the embedded, Kubernetes-API-compatible cluster."""


@cluster.command("up")
@click.option("--data", "data", type=click.Path(file_okay=False, path_type=Path),
              help="Keep the state, CA and token in DIR (survives restarts). "
                   "Default: $XDG_DATA_HOME/setpoint/cluster.")
@click.option("--memory", is_flag=True, help="Keep the state in memory only.")
@click.option("--port", type=click.IntRange(0, 65535), default=6443, show_default=True,
              help="Port to listen on; 0 picks a free one (the kubeconfig tells which).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Anything but loopback opens the API to the network.")
@click.option("--kubeconfig", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the kubeconfig. Default: DIR/kubeconfig.")
@click.option("--nodes", type=click.IntRange(0), default=3, show_default=True,
              help="Simulated nodes to register (node-1 … node-N).")
@click.option("--node-cpu", default="4", show_default=True, callback=_quantity,
              help="CPU capacity of each node.")
@click.option("--node-memory", default="16Gi", show_default=True, callback=_quantity,
              help="Memory capacity of each node.")
@click.option("--node-pods", type=click.IntRange(0), default=110, show_default=True,
              help="Pod capacity of each node.")
@click.option("--node-monitor-grace-period", default="40s", show_default=True,
              metavar="DURATION", callback=_duration,
              help="How long a node may go without renewing its Lease or posting its status "
                   "before the node lifecycle controller marks it Unknown and taints it "
                   "unreachable (kube-controller-manager's flag).")
@click.option("--node-monitor-period", default="5s", show_default=True,
              metavar="DURATION", callback=_duration,
              help="How often the node lifecycle controller looks at node health: a node "
                   "past its grace period is marked Unknown at the next look "
                   "(kube-controller-manager's flag).")
@click.option("--node-startup-grace-period", default="1m0s", show_default=True,
              metavar="DURATION", callback=_duration,
              help="The same for a node that never posted a Ready condition, counted from "
                   "its creation (kube-controller-manager's flag).")
@click.option("--node-lease-duration-seconds", type=click.IntRange(1), default=40,
              show_default=True, metavar="SECONDS",
              help="The duration of each kubelet's node Lease; the kubelets renew it every "
                   "quarter of that (the kubelet's nodeLeaseDurationSeconds).")
@click.option("--default-not-ready-toleration-seconds", type=click.IntRange(0), default=300,
              show_default=True, metavar="SECONDS",
              help="The tolerationSeconds of the not-ready:NoExecute toleration added to "
                   "every pod: how long it stays on a not-ready node before taint-based "
                   "eviction deletes it (kube-apiserver's flag).")
@click.option("--default-unreachable-toleration-seconds", type=click.IntRange(0), default=300,
              show_default=True, metavar="SECONDS",
              help="The same for the unreachable:NoExecute toleration (kube-apiserver's "
                   "flag).")
@click.option("--runtime", type=click.Choice(["simulated", "process"]), default="simulated",
              show_default=True,
              help="Container runtime of the kubelets: simulated (pods run nothing) or process "
                   "(known images run as real local programs, each pod on its own loopback "
                   "address; see docs/process-runtime.md).")
@click.option("--no-workloads", is_flag=True,
              help="Serve the API server and its in-process controllers alone (namespaces, "
                   "garbage collection, service accounts, quotas, CSR signing...: "
                   "docs/architecture.md): no nodes, scheduler, kubelets or workload "
                   "controllers.")
@click.option("--workloads-in-process", is_flag=True,
              help="Run the workloads on the API server's own event loop (one process, one "
                   "core) instead of in a child process of their own (the process runtime "
                   "always does, for now).")
@click.option("--admission-control-config-file", "admission_config_file",
              type=click.Path(dir_okay=False, path_type=Path),
              help="kube-apiserver's admission configuration file (an AdmissionConfiguration): "
                   "the PodSecurity plugin's defaults and exemptions.")
@click.option("--audit-policy-file", "audit_policy_file",
              type=click.Path(dir_okay=False, path_type=Path),
              help="kube-apiserver's audit policy (an audit.k8s.io/v1 Policy): which requests "
                   "are audited, at which level. Needs --audit-log-path or "
                   "--audit-webhook-config-file.")
@click.option("--audit-log-path", "audit_log_path", metavar="PATH",
              help="Write audit events to this file (one line per event, see "
                   "--audit-log-format; mode 0600); '-' means standard output. Needs "
                   "--audit-policy-file.")
@audit_flags
def up(data: Path | None, memory: bool, port: int, host: str, kubeconfig: Path | None,
       nodes: int, node_cpu: str, node_memory: str, node_pods: int,
       node_monitor_grace_period: float, node_monitor_period: float,
       node_startup_grace_period: float, node_lease_duration_seconds: int,
       default_not_ready_toleration_seconds: int, default_unreachable_toleration_seconds: int,
       runtime: str, no_workloads: bool, workloads_in_process: bool,
       admission_config_file: Path | None, audit_policy_file: Path | None,
       audit_log_path: str | None, audit_flags: dict[str, str | None]) -> None:
    """Serve the API until interrupted (SIGINT or SIGTERM).

    The server runs the controllers a cluster cannot do without in its own process
    (setpoint.cluster.controllers, CSR signing included), with or without workloads.
    Unless --no-workloads, simulated nodes, a scheduler, kubelets and the workload
    controllers run beside it, as clients of its API, so that workloads become Ready:
    in a child process of their own (which never outlives this one), so that the server
    and the simulation each have a core."""
    if data is not None and memory:
        raise click.UsageError("--data and --memory exclude each other: choose one.")
    _grace_outlasts_renewals(node_monitor_grace_period, node_lease_duration_seconds)
    from setpoint.cli.stopsignal import StopSignal

    # before anything is spawned or imported: a signal at any moment of the start stops it
    signals = StopSignal()
    signals.install()
    admission_config = None
    if admission_config_file is not None:
        # read before anything starts: kube-apiserver refuses to start with a bad one
        from setpoint.cluster.admission.admissionconfig import (
            AdmissionConfigError,
            read_admission_configuration,
        )

        try:
            admission_config = read_admission_configuration(admission_config_file)
        except AdmissionConfigError as exc:
            from setpoint.cli.yamlerrors import one_line, yaml_cause

            bad_yaml = yaml_cause(exc)
            # ReadAdmissionConfiguration (apiserver pkg/admission/config.go) returns the
            # decoder's "error converting YAML to JSON: yaml: line N: ...", which
            # options/admission.go wraps as "failed to read plugin config: %v"; Go's names
            # no file, so the message adds it
            message = str(exc) if bad_yaml is None else (
                f'failed to read plugin config from "{admission_config_file}": error '
                f"converting YAML to JSON: {one_line(bad_yaml)}")
            click.echo(f"error: --admission-control-config-file: {message}", err=True)
            sys.exit(1)
    audit = _audit(audit_policy_file, audit_log_path, audit_flags)
    if not memory and data is None:
        data = default_data_dir()
    # the process runtime stays on the server's loop until its own tests (kill -9 leaves no
    # container behind: tests/workloads/process/test_cleanup.py) have run with the child
    in_process = workloads_in_process or runtime == "process"
    workloads = None if no_workloads else WorkloadOptions(
        nodes, node_cpu, node_memory, node_pods, runtime, in_process=in_process,
        node_monitor_grace_period=node_monitor_grace_period,
        node_startup_grace_period=node_startup_grace_period,
        node_monitor_period=node_monitor_period,
        node_lease_duration_seconds=node_lease_duration_seconds)
    tolerations = (default_not_ready_toleration_seconds,
                   default_unreachable_toleration_seconds)
    if port != 0:
        try:
            _probe_address(host, port)
        except OSError as exc:
            _cannot_listen(exc, host, port)
    child = None
    if workloads is not None and not workloads.in_process:
        from setpoint.cli.spawn import spawn_workloads

        # first thing: the child imports on the other core while this process imports
        # its event loop and the server, and starts it
        child = spawn_workloads(workloads.fields())
    collecting = gc.isenabled()
    # the start is imports and long-lived objects (modules, classes, the registry): the
    # cyclic collector, run every 700 allocations, has little to free there and took about
    # a tenth of the imports' CPU (docs/benchmarks.md, Start-up); it runs again once serving,
    # over what is made from then on (:func:`resume_collector`)
    gc.disable()
    try:
        _run(_serve(data, host, port, kubeconfig, signals, workloads, child,
                    resume_gc=collecting, admission_config=admission_config,
                    tolerations=tolerations, audit=audit))
    except OSError as exc:
        if exc.filename is not None:  # a file it could not write: not the address
            under_data = data is not None and Path(exc.filename).is_relative_to(data)
            fix = ("pass a --data directory this user can write (or --memory)" if under_data
                   else "pass a --kubeconfig file in a directory this user can write")
            click.echo(f"error: cannot write {exc.filename}: {exc.strerror or exc}: {fix}",
                       err=True)
            sys.exit(1)
        _cannot_listen(exc, host, port)
    finally:
        if collecting:
            gc.enable()


def _probe_address(host: str, port: int) -> None:
    """Bind the address and let it go, so that a busy port is told before the workloads'
    child is spawned and the server imported (seconds), as kube-apiserver opens its
    listener while it builds its config (``SecureServingOptions.ApplyTo``), before any
    storage. The server's own bind stays the one that counts."""
    import socket

    for family, kind, proto, _, address in socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE):
        with socket.socket(family, kind, proto) as probe:
            # as asyncio's create_server sets it: a port left in TIME_WAIT is not busy
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)


def _cannot_listen(exc: OSError, host: str, port: int) -> NoReturn:
    fix = {errno.EADDRINUSE: ": pass another --port (--port 0 takes a free one; the "
                             "kubeconfig tells which)",
           errno.EADDRNOTAVAIL: ": pass a --host of this machine, such as 127.0.0.1",
           }.get(exc.errno or 0, "")
    click.echo(f"error: cannot listen on {host}:{port}: {exc.strerror or exc}{fix}",
               err=True)
    sys.exit(1)


def _audit(policy_file: Path | None, log_path: str | None,
           flags: dict[str, str | None]) -> Any:
    """kube-apiserver's audit options (pkg/server/options/audit.go): the flags parsed and
    checked (``Validate``), the policy read and checked, the log file opened and the
    webhook's kubeconfig read, before anything starts, or one line and exit 1; auditing
    only with a policy and a backend (a warning for one alone, as the apiserver logs)."""
    if policy_file is None and not log_path and all(v is None for v in flags.values()):
        return None  # no auditing asked for: the audit modules stay unloaded at start-up
    from setpoint.cli.auditflags import audit_options
    from setpoint.cluster.audit.options import AuditOptionsError

    try:
        options = audit_options(str(policy_file or ""), log_path or "", flags)
        options.validate()
    except AuditOptionsError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    has_backend = bool(options.log.path or options.webhook.config_file)
    if policy_file is None and not has_backend:
        return None
    if policy_file is None or not has_backend:
        missing = "--audit-policy-file" if policy_file is None \
            else "--audit-log-path or --audit-webhook-config-file"
        click.echo(f"warning: {missing} not given: no audit events will be recorded",
                   err=True)
        return None
    from setpoint.cluster.audit.backends import build_backend
    from setpoint.cluster.audit.policy import AuditPolicyError, load_policy

    try:
        policy = load_policy(policy_file)
    except AuditPolicyError as exc:
        click.echo(f"error: --audit-policy-file: {exc}", err=True)
        sys.exit(1)
    try:
        backend = build_backend(options)
    except AuditOptionsError as exc:
        from setpoint.cli.yamlerrors import reworded

        # clientcmd's 'error loading config file "F": yaml: line N: ...', on one line
        click.echo(f"error: --audit-webhook-config-file: {reworded(exc)}", err=True)
        sys.exit(1)
    except OSError as exc:
        click.echo(f"error: --audit-log-path: cannot open {log_path}: "
                   f"{exc.strerror or exc}: pass a path this user can write, or '-' for "
                   "standard output", err=True)
        sys.exit(1)
    return policy, backend


def resume_collector() -> None:
    """Run the cyclic garbage collector again after a start made without it, over what is
    made from now on: what the start made (modules, classes, the server) is moved out of its
    view first (``gc.freeze``), or its first collections would walk all of it, as young, and
    take back what leaving it off saved."""
    gc.freeze()
    gc.enable()


def _run(main: Coroutine[Any, Any, None]) -> None:
    from setpoint.cli.eventloop import run

    run(main)


async def _serve(data: Path | None, host: str, port: int, kubeconfig: Path | None,
                 signals: StopSignal, workloads: WorkloadOptions | None = None,
                 child: subprocess.Popen[bytes] | None = None, *,
                 resume_gc: bool = False,
                 admission_config: AdmissionConfiguration | None = None,
                 tolerations: tuple[int, int] = (300, 300),
                 audit: Any = None) -> None:
    """Serve until a signal. The kubeconfig is written and "ready" printed only once the
    cluster is usable: its nodes Ready (as kind's ``--wait`` waits for the control-plane
    node) and rid of their ``not-ready`` taint, so ``kubectl get nodes`` right after shows
    them Ready and a pod created then can be scheduled: the scheduler and controllers are
    starting then (setpoint.workloads.startorder) and handle it once their caches have
    listed it, as on a cluster whose kubelets went Ready first. Until then the workloads
    reach the server through a private kubeconfig of their own. ``child``: the workloads'
    process, already spawned (unless they run in this one). ``resume_gc``: enable the
    cyclic garbage collector once serving (``up`` disables it for the start). ``signals``:
    installed before the start; one that came or comes stops it (and the server).
    ``tolerations``: the default not-ready and unreachable toleration seconds."""
    import contextlib
    import dataclasses

    from setpoint.cli.supervisor import WorkloadsProcess, WorkloadsTask

    ip_range = None
    claim: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
    if workloads is not None and workloads.runtime == "process":
        from setpoint.workloads.loopbacknet import NoFreeLoopbackNetwork, claim_loopback_network

        # real processes need addresses of their own: a loopback block no other cluster on
        # this machine holds; its Services' range is the --service-cluster-ip-range
        try:
            claim = claim_loopback_network()
        except NoFreeLoopbackNetwork as exc:
            click.echo(f"error: {exc}: stop one of them first", err=True)
            sys.exit(1)
        network = claim.network
        ip_range = network.services
        workloads = dataclasses.replace(workloads, loopback_network=network.index)
    with claim:
        runner: WorkloadsProcess | WorkloadsTask | None = None
        if child is not None:
            runner = WorkloadsProcess(child)
        elif workloads is not None:
            runner = WorkloadsTask(workloads.settings())
        try:
            await _serve_api(data, host, port, kubeconfig, signals, workloads, runner,
                             ip_range, resume_gc, admission_config, tolerations,
                             audit)
        finally:
            if runner is not None:  # stopped already, unless the server failed to start
                await runner.stop()
    click.echo("stopped")


async def _serve_api(data: Path | None, host: str, port: int, kubeconfig: Path | None,
                     signals: StopSignal, workloads: WorkloadOptions | None, runner: Any,
                     ip_range: str | None, resume_gc: bool = False,
                     admission_config: AdmissionConfiguration | None = None,
                     tolerations: tuple[int, int] = (300, 300),
                     audit: Any = None) -> None:
    import asyncio
    import tempfile

    from setpoint.cluster import serve
    from setpoint.cluster.admission.pods import DefaultTolerationSeconds
    from setpoint.cluster.authentication import kubeconfig as kubeconfig_file

    stop = signals.event()
    if signals.requested:  # during the imports: nothing more is started
        return
    with tempfile.TemporaryDirectory(prefix="setpoint-up-") as private:
        internal = Path(private) / "kubeconfig"
        async with serve(data, host=host, port=port, kubeconfig=internal,
                         service_cluster_ip_range=ip_range,
                         admission_config=admission_config,
                         default_toleration_seconds=DefaultTolerationSeconds(*tolerations),
                         audit_policy=audit[0] if audit else None,
                         audit_log=audit[1] if audit else None) as running:
            where = f"data in {data}" if data is not None else "state in memory"
            click.echo(f"setpoint cluster serving at {running.url} ({where})")
            sys.stdout.flush()
            if resume_gc:
                resume_collector()
            watcher: asyncio.Task[None] | None = None
            try:
                if workloads is not None and not signals.requested:
                    # as JSON: the workloads read it without loading PyYAML
                    for_workloads = Path(private) / "workloads-kubeconfig"
                    kubeconfig_file.write_json(for_workloads, running.url,
                                               running.ca_file.read_bytes(), running.token)
                    runner.serve(for_workloads)
                    await _until_workloads_ready(runner.messages, workloads, stop)
                    watcher = asyncio.ensure_future(
                        _report_running(runner.messages, workloads, stop))
                if not signals.requested:
                    target = kubeconfig or (data / "kubeconfig" if data is not None
                                            else internal)
                    kubeconfig_file.write(target, running.url, running.ca_file.read_bytes(),
                                          running.token)
                    click.echo(f"kubeconfig: {target}")
                    click.echo(f"  export KUBECONFIG={target}")
                    click.echo("  kubectl get nodes" if workloads is not None
                               else "  kubectl get namespaces")
                    click.echo("ready")
                    click.echo("Press Ctrl+C to stop.")
                    sys.stdout.flush()
                await stop.wait()
            finally:
                if watcher is not None:
                    watcher.cancel()
                # the controllers stop first, while the API server still answers them
                if runner is not None:
                    await runner.stop()


NODE_READY_TIMEOUT = 60.0
"""How long ``cluster up`` waits for its nodes before it says ready anyway (with a
warning): a node kept NotReady on purpose in a persisted cluster must not block it (the
workloads' side of it: ``setpoint.workloads.supervised.NODE_READY_TIMEOUT``)."""


async def _next(messages: asyncio.Queue[str], stop: asyncio.Event) -> str | None:
    """The workloads' next message, or None on a signal."""
    import asyncio
    got = asyncio.ensure_future(messages.get())
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({got, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
    if got.done():
        return got.result()
    got.cancel()
    return None


async def _until_workloads_ready(messages: asyncio.Queue[str], workloads: WorkloadOptions,
                                 stop: asyncio.Event) -> None:
    """Follow the workloads' start: the nodes starting, then Ready (or a warning, or an
    error: the API server goes on serving either way). Only the nodes' part runs until
    they are Ready (:mod:`setpoint.workloads.startorder`): the scheduler and controllers
    are said to run later, when they do (:func:`_report_running`)."""
    message = await _next(messages, stop)
    if message is None:
        return
    if message != "started":
        _workloads_failed(message, "did not start")
        return
    click.echo(f"nodes starting: {workloads.nodes} node(s), "
               f"kubelets ({workloads.runtime} runtime)")
    sys.stdout.flush()
    message = await _next(messages, stop)
    if message is None or message == "nodes-ready":
        return
    if message.startswith("nodes-not-ready"):
        missing = message.partition(" ")[2].replace(",", ", ")
        click.echo(f"warning: nodes not Ready after {NODE_READY_TIMEOUT:.0f} s: {missing}",
                   err=True)
        return
    _workloads_failed(message, "stopped")


def _workloads_failed(message: str, what: str) -> None:
    kind, _, detail = message.partition(" ")
    detail = f"exit code {detail}" if kind == "exited" else detail
    click.echo(f"error: workloads {what}: {detail}", err=True)


async def _report_running(messages: asyncio.Queue[str], workloads: WorkloadOptions,
                          stop: asyncio.Event) -> None:
    """Say when the workloads' scheduler and controllers run (their caches synced: often
    just after ``ready``, which promises the nodes Ready and the rest starting), and say so
    if the workloads stop while the server serves (the server goes on)."""
    while (message := await _next(messages, stop)) is not None:
        if message == "running":
            click.echo(f"workloads running: {workloads.nodes} node(s), scheduler, "
                       f"kubelets ({workloads.runtime} runtime), controllers")
            sys.stdout.flush()
        elif message.startswith(("exited", "error")):
            if not stop.is_set():
                _workloads_failed(message, "stopped")
            return  # an error's exit that follows says nothing more
