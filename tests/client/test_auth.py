"""Authentication end to end: client certificates, exec plugins, token files, TLS trust."""

from __future__ import annotations

import base64
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from setpoint.client import (
    AuthError,
    Client,
    ConfigError,
    ExecAuth,
    Kind,
    TokenFileAuth,
    TransportError,
    UnauthorizedError,
)
from setpoint.client.auth import ExecConfig
from tests.client.conftest import b64, write_kubeconfig
from tests.client.fakeapi import FakeApi
from tests.client.pki import Pki, make_pki

CM = Kind("v1", "ConfigMap")

PLUGIN = textwrap.dedent("""
    import json, os, sys
    counter = sys.argv[1]
    runs = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
    open(counter, "w").write(str(runs))
    info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
    status = {"token": os.environ.get("PLUGIN_TOKEN", "s3cret")}
    if os.environ.get("PLUGIN_EXPIRES"):
        status["expirationTimestamp"] = os.environ["PLUGIN_EXPIRES"]
    if os.environ.get("PLUGIN_CERT"):
        status = {"clientCertificateData": open(os.environ["PLUGIN_CERT"]).read(),
                  "clientKeyData": open(os.environ["PLUGIN_KEY"]).read()}
    if os.environ.get("PLUGIN_FAIL"):
        print("no credentials for you", file=sys.stderr)
        sys.exit(3)
    out = {"apiVersion": os.environ.get("PLUGIN_API_VERSION", info["apiVersion"]),
           "kind": "ExecCredential", "status": status}
    if os.environ.get("PLUGIN_ECHO_CLUSTER"):
        out["status"]["token"] = info["spec"]["cluster"]["server"]
    print(json.dumps(out))
""")


def exec_stanza(tmp_path: Path, api_version: str = "client.authentication.k8s.io/v1",
                **env: str) -> dict[str, Any]:
    script = tmp_path / "plugin.py"
    script.write_text(PLUGIN)
    return {
        "apiVersion": api_version, "command": sys.executable,
        "args": [str(script), str(tmp_path / "runs")],
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "interactiveMode": "Never",
    }


def runs(tmp_path: Path) -> int:
    return int((tmp_path / "runs").read_text())


async def test_client_certificate_authenticates_over_mutual_tls(
    server: str, pki: Pki, tmp_path: Path, api: FakeApi,
) -> None:
    pki.client.write(tmp_path, "alice")  # relative paths, resolved against the kubeconfig
    path = write_kubeconfig(
        tmp_path / "kc", server, {"client-certificate": "alice.crt", "client-key": "alice.key"},
        {"certificate-authority-data": b64(pki.ca.cert_pem)},
    )
    async with Client.from_kubeconfig(path) as client:
        await client.list(CM, namespace="team-a")
    assert api.requests[-1].user == "cert:alice"
    assert "Authorization" not in api.requests[-1].headers


@pytest.mark.parametrize("api_version", ["client.authentication.k8s.io/v1",
                                         "client.authentication.k8s.io/v1beta1"])
async def test_exec_plugin_token_is_cached_until_it_expires(
    server: str, pki: Pki, tmp_path: Path, api: FakeApi, api_version: str,
) -> None:
    later = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    path = write_kubeconfig(
        tmp_path / "kc", server, {"exec": exec_stanza(tmp_path, api_version,
                                                      PLUGIN_EXPIRES=later)},
        {"certificate-authority-data": b64(pki.ca.cert_pem)},
    )
    async with Client.from_kubeconfig(path) as client:
        await client.list(CM, namespace="team-a")
        await client.list(CM, namespace="team-a")
    assert runs(tmp_path) == 1
    assert api.requests[-1].user == "token:s3cret"


async def test_exec_plugin_runs_again_once_its_credentials_expired(tmp_path: Path) -> None:
    now = datetime(2030, 1, 1, tzinfo=UTC)
    clock = [now]
    expires = (now + timedelta(minutes=10)).isoformat().replace("+00:00", "Z")
    auth = ExecAuth(ExecConfig.from_kubeconfig(exec_stanza(tmp_path, PLUGIN_EXPIRES=expires)),
                    now=lambda: clock[0])
    first = await auth.credentials()
    assert first.expires_at == now + timedelta(minutes=10)
    await auth.credentials()
    assert runs(tmp_path) == 1
    clock[0] = now + timedelta(minutes=11)
    await auth.credentials()
    assert runs(tmp_path) == 2


async def test_exec_plugin_without_expiry_is_rerun_after_a_401(
    server: str, pki: Pki, tmp_path: Path, api: FakeApi,
) -> None:
    path = write_kubeconfig(
        tmp_path / "kc", server, {"exec": exec_stanza(tmp_path, PLUGIN_TOKEN="stale")},
        {"certificate-authority-data": b64(pki.ca.cert_pem)},
    )
    async with Client.from_kubeconfig(path) as client:
        with pytest.raises(UnauthorizedError):
            await client.list(CM, namespace="team-a")
    assert runs(tmp_path) == 2  # the 401 made the client ask the plugin once more


async def test_exec_plugin_can_provide_a_client_certificate(
    server: str, pki: Pki, tmp_path: Path, api: FakeApi,
) -> None:
    cert, key = pki.client.write(tmp_path, "alice")
    path = write_kubeconfig(
        tmp_path / "kc", server,
        {"exec": exec_stanza(tmp_path, PLUGIN_CERT=str(cert), PLUGIN_KEY=str(key))},
        {"certificate-authority-data": b64(pki.ca.cert_pem)},
    )
    async with Client.from_kubeconfig(path) as client:
        await client.list(CM, namespace="team-a")
    assert api.requests[-1].user == "cert:alice"


async def test_exec_plugin_gets_cluster_info_when_asked(tmp_path: Path) -> None:
    stanza = {**exec_stanza(tmp_path, PLUGIN_ECHO_CLUSTER="1"), "provideClusterInfo": True}
    auth = ExecAuth(ExecConfig.from_kubeconfig(stanza, cluster={"server": "https://k:6443"}))
    assert (await auth.credentials()).authorization == "Bearer https://k:6443"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PLUGIN_FAIL": "1"}, "exit code 3: no credentials for you"),
        ({"PLUGIN_API_VERSION": "client.authentication.k8s.io/v1beta1"},
         "plugin returned version client.authentication.k8s.io/v1beta1"),
    ],
)
async def test_exec_plugin_failures_raise_auth_errors(
    tmp_path: Path, env: dict[str, str], message: str,
) -> None:
    auth = ExecAuth(ExecConfig.from_kubeconfig(exec_stanza(tmp_path, **env)))
    with pytest.raises(AuthError, match=message):
        await auth.credentials()


async def test_missing_exec_plugin_shows_the_install_hint(tmp_path: Path) -> None:
    stanza = {"apiVersion": "client.authentication.k8s.io/v1", "command": "no-such-plugin-x",
              "installHint": "brew install no-such-plugin"}
    with pytest.raises(AuthError, match="brew install no-such-plugin"):
        await ExecAuth(ExecConfig.from_kubeconfig(stanza)).credentials()


async def test_token_file_is_reread_after_its_refresh_interval(tmp_path: Path) -> None:
    token, clock = tmp_path / "token", [0.0]
    token.write_text("one\n")
    auth = TokenFileAuth(token, refresh_interval=60, clock=lambda: clock[0])
    assert (await auth.credentials()).authorization == "Bearer one"
    token.write_text("two")
    clock[0] = 59
    assert (await auth.credentials()).authorization == "Bearer one"
    clock[0] = 60
    assert (await auth.credentials()).authorization == "Bearer two"
    token.unlink()  # a failed re-read keeps the last good token
    clock[0] = 200
    assert (await auth.credentials()).authorization == "Bearer two"


async def test_a_server_signed_by_another_ca_fails_without_retries(
    server: str, tmp_path: Path,
) -> None:
    other = make_pki()
    path = write_kubeconfig(tmp_path / "kc", server, {"token": "s3cret"},
                            {"certificate-authority-data": b64(other.ca.cert_pem)})
    async with Client.from_kubeconfig(path) as client:
        with pytest.raises(TransportError, match="TLS"):
            await client.list(CM, namespace="team-a")


async def test_insecure_skip_tls_verify_accepts_any_server_certificate(
    server: str, tmp_path: Path, api: FakeApi,
) -> None:
    path = write_kubeconfig(tmp_path / "kc", server, {"token": "s3cret"},
                            {"insecure-skip-tls-verify": True})
    async with Client.from_kubeconfig(path) as client:
        await client.list(CM, namespace="team-a")
    assert api.requests[-1].user == "token:s3cret"


async def test_tls_server_name_is_used_to_verify_the_server(
    server: str, pki: Pki, tmp_path: Path,
) -> None:
    path = write_kubeconfig(tmp_path / "kc", server, {"token": "s3cret"},
                            {"certificate-authority-data": b64(pki.ca.cert_pem),
                             "tls-server-name": "kubernetes.default.svc"})
    async with Client.from_kubeconfig(path) as client:
        with pytest.raises(TransportError, match="TLS"):  # the cert names only localhost
            await client.list(CM, namespace="team-a")


def test_a_client_key_without_its_certificate_is_a_config_error(tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "kc", "https://k", {
        "client-key-data": base64.b64encode(b"key").decode()})
    with pytest.raises(ConfigError, match="without a certificate"):
        Client.from_kubeconfig(path)
