"""``setpoint run``: an operator's Manager as a process, stopped cleanly by a signal."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from examples.widget.api import Widget, WidgetSpec
from setpoint.cli.main import cli
from setpoint.client import Client, Kind
from setpoint.testing import SetpointCluster
from setpoint.testing.plugin import Waiter

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("target", "message"), [
    ("no_such_module:manager", "Error: module 'no_such_module' not found: run from the "
                               "directory that contains it, or install its package"),
    ("examples.widget.operator:nope", "Error: module 'examples.widget.operator' has no "
                                      "attribute 'nope' (Managers and controllers it "
                                      "defines: manager, widgets)"),
    ("examples.widget.api:Widget", "Error: examples.widget.api:Widget is the class Widget, "
                                   "not a Manager, a Controller or a list of controllers"),
    ("examples.widget.operator", "Error: 'examples.widget.operator' names no attribute: "
                                 "write examples.widget.operator:manager"),
])
def test_mistakes_are_one_line_errors_naming_the_fix(target: str, message: str) -> None:
    result = CliRunner().invoke(cli, ["run", target])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), result.output


@pytest.mark.parametrize(("kind", "said"), [
    ("ConfigMapp", "name a kind by its class: did you mean ConfigMap "
                   "(from setpoint.resources.models.core_v1 import ConfigMap)?"),
    ("deployments", "name a kind by its class: did you mean Deployment "
                    "(from setpoint.resources.models.apps_v1 import Deployment)?"),
    ("Gadget", "name a kind by its class (a CustomResource or a built-in such as ConfigMap) "
               "or by Kind(apiVersion, kind)"),
])
def test_a_kind_named_by_a_string_is_one_line_at_the_users_line(
        kind: str, said: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``owns("ConfigMap")`` (kinds as kopf spells them) was a TypeError traceback from deep
    inside the manager's start, 'cannot tell the kind of ...'."""
    module = f"string_kind_{kind.lower()}"
    (tmp_path / f"{module}.py").write_text(
        "from examples.widget.api import Widget\n"
        "from setpoint.runtime import Controller, Manager\n"
        f"widgets = Controller.for_(Widget).owns({kind!r})\n"
        "manager = Manager([widgets])\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    result = CliRunner().invoke(cli, ["run", f"{module}:manager"])
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [
        f"Error: {tmp_path / module}.py:3: the kind {kind!r} is a string: {said}"]


def test_no_cluster_configuration_is_a_one_line_error(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    result = CliRunner().invoke(cli, ["run", "examples.widget.operator:manager"])
    assert result.exit_code == 2
    assert result.output.startswith("Error: no Kubernetes configuration found")
    assert "--kubeconfig FILE" in result.output


async def test_run_reconciles_and_stops_cleanly_on_sigterm(
        setpoint_cluster: SetpointCluster, k8s: Client, wait_for: Waiter) -> None:
    await setpoint_cluster.install(Widget)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "setpoint.cli.main", "run", "examples.widget.operator:manager",
        "--kubeconfig", str(setpoint_cluster.kubeconfig), "--namespace", "default",
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    try:
        await k8s.create(Widget(name="w", spec=WidgetSpec(message="from a process")))
        await wait_for(Widget, "w", lambda w: w.status.ready, timeout=30)
    finally:
        proc.send_signal(signal.SIGTERM)
        output, _ = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, output.decode()
    assert b"manager_stopped" in output and b"Traceback" not in output


@pytest.mark.parametrize("option", ["--webhook-address", "--http-address"])
@pytest.mark.parametrize("value", ["9443", "127.0.0.1:99999"])
def test_an_address_that_is_not_host_port_is_a_one_line_error(
        option: str, value: str, tmp_path: Path) -> None:
    """A port past 65535 was taken modulo 65536 by uvloop's bind (99999 served on 34463)."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}))
    result = CliRunner().invoke(cli, ["run", "tests.cli.webhook_target:manager",
                                      "--kubeconfig", str(kubeconfig), option, value])
    assert result.exit_code == 2
    assert f"{option} '{value}' is not HOST:PORT" in result.output
    assert "Traceback" not in result.output


async def test_run_registers_its_webhooks_with_a_local_cluster_while_it_runs(
        setpoint_cluster: SetpointCluster, k8s: Client, wait_for: Waiter) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "setpoint.cli.main", "run", "tests.cli.webhook_target:manager",
        "--kubeconfig", str(setpoint_cluster.kubeconfig), "--register-webhooks",
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    mutating = Kind("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration")

    async def registered() -> bool:
        return bool((await k8s.list(mutating)).items)

    try:
        await wait_for(registered, timeout=30)
        created: dict[str, Any] = await k8s.create({"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": "seen"}})
        assert created["metadata"]["labels"] == {"defaulted-by": "webhook-target"}
    finally:
        proc.send_signal(signal.SIGTERM)
        output, _ = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, output.decode()
    assert b"webhooks registered at https://127.0.0.1:" in output
    assert (await k8s.list(mutating)).items == []  # taken back on the way out


# -- refused by the server, and signals while starting ---------------------------------------
# client-go's reflector retries 401 and 403 with backoff (tools/cache/reflector.go: `Run` is
# `wait.BackoffUntil(ListAndWatch)`) and controller-runtime's controller gives up only when
# CacheSyncTimeout runs out (pkg/internal/controller/controller.go): `setpoint run` too,
# each refusal logged as it comes, then one line naming it; a signal stops it whatever state
# it is in. `tests.cli.refused_target` waits 3 s, not the default 120 s; the subprocesses'
# 30 s limits only keep a broken run from hanging the suite.

def _kubeconfig_with_token(source: Path, token: str, target: Path) -> Path:
    config = yaml.safe_load(source.read_text())
    for user in config["users"]:
        user["user"] = {"token": token}
    target.write_text(yaml.safe_dump(config))
    return target


async def _run_operator(kubeconfig: Path, *args: str,
                        target: str = "examples.widget.operator:manager",
                        ) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "setpoint.cli.main", "run", target,
        "--kubeconfig", str(kubeconfig), "--http-address", "127.0.0.1:0", *args,
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def _finish(proc: asyncio.subprocess.Process) -> tuple[str, str]:
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 30)
    except TimeoutError:
        proc.kill()
        raise
    return out.decode(), err.decode()


REFUSED = "tests.cli.refused_target:manager"


async def test_rejected_credentials_fail_after_the_cache_sync_timeout_with_one_line(
        setpoint_cluster: SetpointCluster, tmp_path: Path) -> None:
    await setpoint_cluster.install(Widget)
    bad = _kubeconfig_with_token(setpoint_cluster.kubeconfig, "not-a-token",
                                 tmp_path / "kubeconfig")
    proc = await _run_operator(bad, target=REFUSED)
    _, err = await _finish(proc)
    assert proc.returncode == 1
    (line,) = [x for x in err.splitlines() if x.startswith("error:")]
    assert line.startswith(
        'error: controller "widget": timed out after 1s waiting for cache to be synced for '
        "Kind Widget.bench.setpoint.dev/v1: 401 Unauthorized: the API server at "
        "https://127.0.0.1:"), line
    assert "refused to list" in line and "Traceback" not in err
    assert "informer_refused" in err  # each refusal was logged as it came


async def _allowed_only_configmaps(setpoint_cluster: SetpointCluster, k8s: Client,
                                   tmp_path: Path) -> Path:
    """A kubeconfig of the ServiceAccount ``nobody`` of the test's namespace, allowed
    ConfigMaps only, so that only the list and watch of Widgets are refused."""
    namespace = k8s.namespace
    await k8s.create({"apiVersion": "v1", "kind": "ServiceAccount",
                      "metadata": {"name": "nobody", "namespace": namespace}})
    answer = await k8s.request(
        "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/nobody/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
              "spec": {"expirationSeconds": 3600}})
    rbac = "rbac.authorization.k8s.io"
    role = f"nobody-configmaps-{namespace}"
    await k8s.create({"apiVersion": f"{rbac}/v1", "kind": "ClusterRole",
                      "metadata": {"name": role},
                      "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                                 "verbs": ["get", "list", "watch"]}]})
    await k8s.create({"apiVersion": f"{rbac}/v1", "kind": "ClusterRoleBinding",
                      "metadata": {"name": role},
                      "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": role},
                      "subjects": [{"kind": "ServiceAccount", "name": "nobody",
                                    "namespace": namespace}]})
    return _kubeconfig_with_token(setpoint_cluster.kubeconfig, answer["status"]["token"],
                                  tmp_path / "kubeconfig")


async def test_forbidden_watches_fail_after_the_sync_timeout_naming_user_verb_rule_and_rbac(
        setpoint_cluster: SetpointCluster, k8s: Client, tmp_path: Path) -> None:
    await setpoint_cluster.install(Widget)
    namespace = k8s.namespace
    config = await _allowed_only_configmaps(setpoint_cluster, k8s, tmp_path)
    proc = await _run_operator(config, target=REFUSED)
    _, err = await _finish(proc)
    assert proc.returncode == 1
    (line,) = [x for x in err.splitlines() if x.startswith("error:")]
    assert line == (
        'error: controller "widget": timed out after 1s waiting for cache to be synced for '
        "Kind Widget.bench.setpoint.dev/v1: 403 Forbidden: widgets.bench.setpoint.dev is "
        f'forbidden: User "system:serviceaccount:{namespace}:nobody" cannot list resource '
        '"widgets" in API group "bench.setpoint.dev" at the cluster scope; the cache needs '
        'the rule apiGroups=["bench.setpoint.dev"] resources=["widgets"] '
        'verbs=["list","watch"]; its controllers declare get, list, watch, create, update, '
        "patch, delete on widgets.bench.setpoint.dev: bind this user to the roles "
        "`setpoint generate rbac` writes for them")
    assert "Traceback" not in err


async def test_the_first_refused_list_is_logged_at_once_not_after_the_two_minute_timeout(
        setpoint_cluster: SetpointCluster, k8s: Client, tmp_path: Path) -> None:
    """With the default two-minute ``cache_sync_timeout`` and the default log level, the
    first refused list is a warning line at once, while the start still waits, naming the
    kind, the verb and resource refused, the user, and the rule to grant (client-go's
    reflector logs each failed list as it comes: tools/cache/reflector.go
    ``DefaultWatchErrorHandler``, "failed to list ..."); a SIGTERM then stops it cleanly."""
    await setpoint_cluster.install(Widget)
    namespace = k8s.namespace
    config = await _allowed_only_configmaps(setpoint_cluster, k8s, tmp_path)
    proc = await _run_operator(config)  # examples.widget.operator:manager: 120 s to sync
    assert proc.stderr is not None
    try:
        line = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
        while "informer_refused" not in line:
            assert line, "setpoint run ended before logging a refusal"
            line = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
        waiting = proc.returncode is None  # still waiting for its caches
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = await _finish(proc)
    assert "kind=Widget.bench.setpoint.dev/v1 verb=list code=403" in line, line
    assert (f'User \\"system:serviceaccount:{namespace}:nobody\\" cannot list resource '
            '\\"widgets\\" in API group \\"bench.setpoint.dev\\"') in line, line
    assert ('the cache needs the rule apiGroups=[\\"bench.setpoint.dev\\"] '
            'resources=[\\"widgets\\"] verbs=[\\"list\\",\\"watch\\"]') in line, line
    assert waiting and proc.returncode == 0, err
    assert "Traceback" not in line + err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_a_signal_stops_a_manager_whose_caches_never_sync(
        setpoint_cluster: SetpointCluster, sig: signal.Signals) -> None:
    # Widget's CRD is not installed: its informer retries discovery, the caches never sync
    proc = await _run_operator(setpoint_cluster.kubeconfig, "--log-level", "info")
    assert proc.stderr is not None
    while b"informer_error" not in await proc.stderr.readline():
        assert proc.returncode is None
    proc.send_signal(sig)
    _, err = await _finish(proc)
    assert proc.returncode == 0, err
    assert "manager_stopped" in err and "Traceback" not in err


def _unreachable_kubeconfig(tmp_path: Path) -> Path:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}))
    return kubeconfig


def _run_webhooks(tmp_path: Path, *args: str) -> tuple[int, str]:
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-m", "setpoint.cli.main", "run", "tests.cli.webhook_target:manager",
         "--kubeconfig", str(_unreachable_kubeconfig(tmp_path)), *args],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
        timeout=60, check=False)
    return proc.returncode, proc.stderr


def test_webhooks_without_a_certificate_are_one_line_naming_the_flags(tmp_path: Path) -> None:
    code, err = _run_webhooks(tmp_path, "--webhook-cert-dir", str(tmp_path / "certs"))
    assert code == 1 and "Traceback" not in err, err
    (line,) = [x for x in err.splitlines() if x.startswith("error:")]
    assert line == (
        f"error: the webhook server has no certificate: {tmp_path}/certs/tls.crt and "
        f"{tmp_path}/certs/tls.key do not exist: pass --webhook-cert-dir DIR (with tls.crt "
        "and tls.key), or --register-webhooks to serve a self-signed one to a local cluster")


@pytest.mark.parametrize(("case", "reason"), [
    ("other-key", "key values mismatch"), ("not-pem", "not PEM")])
def test_a_webhook_certificate_that_cannot_be_loaded_is_one_line_naming_the_fix(
        tmp_path: Path, case: str, reason: str) -> None:
    """A key that is not the certificate's (two Secrets mixed up), or files that are no
    PEM: ssl's load_cert_chain raised SSLError, a traceback ending "[SSL] PEM lib"."""
    from setpoint.machinery.certificates import issue

    certs = tmp_path / "certs"
    certs.mkdir()
    if case == "other-key":
        (certs / "tls.crt").write_bytes(issue(["127.0.0.1"], ca_name="a").cert_pem)
        (certs / "tls.key").write_bytes(issue(["127.0.0.1"], ca_name="b").key_pem)
    else:
        (certs / "tls.crt").write_text("-----BEGIN CERTIFICATE-----\nnot one\n")
        (certs / "tls.key").write_text("")
    code, err = _run_webhooks(tmp_path, "--webhook-cert-dir", str(certs))
    assert code == 1 and "Traceback" not in err, err
    (line,) = [x for x in err.splitlines() if x.startswith("error:")]
    assert line == (
        f"error: the webhook server cannot use its certificate: {certs}/tls.crt and "
        f"{certs}/tls.key are not a PEM certificate and its private key ({reason}): put a "
        "PEM certificate and the key it was issued for in --webhook-cert-dir (tls.crt and "
        "tls.key, as a kubernetes.io/tls Secret holds them)")


def test_a_busy_webhook_port_is_one_line_naming_the_flag(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, err = _run_webhooks(tmp_path, "--register-webhooks",
                                  "--webhook-address", f"127.0.0.1:{port}")
    assert code == 1 and "Traceback" not in err, err
    (line,) = [x for x in err.splitlines() if x.startswith("error:")]
    assert line == (
        f"error: cannot serve webhooks on 127.0.0.1:{port}: Address already in use: pass "
        "another --webhook-address (--webhook-address 127.0.0.1:0 takes a free port)")


def test_a_busy_probe_port_is_one_line_naming_the_flag(tmp_path: Path) -> None:
    """--http-address on a port in use: the same one line as the webhooks' (it was a
    traceback from the event loop's create_server)."""
    import socket
    import subprocess

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "setpoint.cli.main", "run",
             "examples.widget.operator:manager", "--kubeconfig",
             str(_unreachable_kubeconfig(tmp_path)), "--http-address", f"127.0.0.1:{port}"],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
            text=True, timeout=60, check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("error:")]
    assert line == (
        f"error: cannot serve /healthz, /readyz and /metrics on 127.0.0.1:{port}: Address "
        "already in use: pass another --http-address (--http-address 127.0.0.1:0 takes a "
        "free port)")


@pytest.mark.parametrize("server", ["ftp://127.0.0.1:1", "ws://127.0.0.1:1"])
def test_a_server_url_that_is_no_http_url_is_one_line_when_the_kubeconfig_is_read(
        tmp_path: Path, server: str) -> None:
    """The transport refused it only when the Manager started its first client; it is
    refused where the kubeconfig is read, naming the file, the cluster and the URL."""
    import subprocess

    kubeconfig = _unreachable_kubeconfig(tmp_path)
    kubeconfig.write_text(kubeconfig.read_text().replace("https://127.0.0.1:1", server))
    kubeconfig.chmod(0o600)
    proc = subprocess.run(
        [sys.executable, "-m", "setpoint.cli.main", "run", "examples.widget.operator:manager",
         "--kubeconfig", str(kubeconfig)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
        timeout=60, check=False)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [
        f'Error: kubeconfig {kubeconfig}: cluster "k" has server "{server}": only http:// '
        "and https:// URLs are supported"], proc.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--kube-api-qps", "nan"], "Invalid value for --kube-api-qps: nan is not a rate: pass "
                                "requests a second, or -1 for no client-side limit"),
    (["--kube-api-burst", "-1"], "Invalid value for '--kube-api-burst': -1 is not in the "
                                 "range x>=0."),
])
def test_a_bad_client_rate_limit_is_one_line_naming_the_flag(
        args: list[str], message: str, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}))
    result = CliRunner().invoke(cli, ["run", "examples.widget.operator:manager",
                                      "--kubeconfig", str(kubeconfig), *args])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == f"Error: {message}"
