"""Kubeconfig and in-cluster configuration loading."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from setpoint.client import (
    BasicAuth,
    ConfigError,
    ExecAuth,
    TokenAuth,
    TokenFileAuth,
    load_config,
    load_incluster,
    load_kubeconfig,
)
from tests.client.conftest import b64


def kubeconfig(
    current: str = "dev", clusters: dict[str, dict[str, Any]] | None = None,
    users: dict[str, dict[str, Any]] | None = None,
    contexts: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Config", "current-context": current,
        "clusters": [{"name": n, "cluster": c} for n, c in (clusters or {}).items()],
        "users": [{"name": n, "user": u} for n, u in (users or {}).items()],
        "contexts": [{"name": n, "context": c} for n, c in (contexts or {}).items()],
    }


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return path


TWO_CONTEXTS = kubeconfig(
    clusters={"c1": {"server": "https://one:6443/"}, "c2": {"server": "https://two:6443"}},
    users={"u1": {"token": "t1"}, "u2": {"username": "admin", "password": "pw"}},
    contexts={"dev": {"cluster": "c1", "user": "u1", "namespace": "apps"},
              "prod": {"cluster": "c2", "user": "u2"}},
)


def test_current_context_picks_cluster_user_and_namespace(tmp_path: Path) -> None:
    config = load_kubeconfig(write(tmp_path / "kc", TWO_CONTEXTS))
    assert config.server == "https://one:6443"
    assert config.namespace == "apps"
    assert config.context == "dev"
    assert isinstance(config.auth, TokenAuth)
    assert "t1" not in repr(config)  # secrets stay out of reprs


def test_an_explicit_context_overrides_current_context(tmp_path: Path) -> None:
    config = load_kubeconfig(write(tmp_path / "kc", TWO_CONTEXTS), context="prod")
    assert config.server == "https://two:6443"
    assert config.namespace == "default"
    assert isinstance(config.auth, BasicAuth)


def test_an_unknown_context_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match='context "nope" does not exist'):
        load_kubeconfig(write(tmp_path / "kc", TWO_CONTEXTS), context="nope")


def test_relative_files_resolve_against_the_kubeconfig_directory(tmp_path: Path) -> None:
    (tmp_path / "conf" / "pki").mkdir(parents=True)
    (tmp_path / "conf" / "pki" / "ca.crt").write_bytes(b"CA")
    (tmp_path / "conf" / "pki" / "me.crt").write_bytes(b"CERT")
    (tmp_path / "conf" / "pki" / "me.key").write_bytes(b"KEY")
    (tmp_path / "conf" / "token").write_text("file-token")
    doc = kubeconfig(
        clusters={"c": {"server": "https://k", "certificate-authority": "pki/ca.crt"}},
        users={"u": {"client-certificate": "pki/me.crt", "client-key": "pki/me.key",
                     "tokenFile": "token", "token": "inline"}},
        contexts={"dev": {"cluster": "c", "user": "u"}},
    )
    config = load_kubeconfig(write(tmp_path / "conf" / "kc", doc))
    assert config.certificate_authority_data == b"CA"
    assert (config.client_certificate_data, config.client_key_data) == (b"CERT", b"KEY")
    # client-go: a tokenFile wins over an inline token
    assert isinstance(config.auth, TokenFileAuth)
    assert config.auth.path == tmp_path / "conf" / "token"


def test_inline_data_wins_over_file_paths(tmp_path: Path) -> None:
    doc = kubeconfig(
        clusters={"c": {"server": "https://k", "certificate-authority": "/missing",
                        "certificate-authority-data": b64(b"INLINE"),
                        "insecure-skip-tls-verify": False, "tls-server-name": "api.local"}},
        users={"u": {}}, contexts={"dev": {"cluster": "c", "user": "u"}},
    )
    config = load_kubeconfig(write(tmp_path / "kc", doc))
    assert config.certificate_authority_data == b"INLINE"
    assert config.tls_server_name == "api.local"
    assert config.auth is None


def test_kubeconfig_variable_merges_files_first_one_wins(tmp_path: Path) -> None:
    first = write(tmp_path / "a", kubeconfig(
        current="", clusters={"shared": {"server": "https://first"}},
        users={"u": {"token": "first"}}, contexts={"ctx": {"cluster": "shared", "user": "u"}},
    ))
    second = write(tmp_path / "b", kubeconfig(
        current="ctx", clusters={"shared": {"server": "https://second"}},
        users={"u": {"token": "second"}},
    ))
    env = {"KUBECONFIG": os.pathsep.join([str(first), str(tmp_path / "missing"), str(second)])}
    config = load_kubeconfig(None, environ=env)
    assert config.server == "https://first"
    assert config.context == "ctx"  # from the second file: the first had none


def test_exec_stanza_resolves_relative_commands_against_the_kubeconfig(tmp_path: Path) -> None:
    doc = kubeconfig(
        clusters={"c": {"server": "https://k"}},
        users={"u": {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                              "command": "./bin/plugin", "args": ["get-token"],
                              "env": [{"name": "A", "value": "b"}]}}},
        contexts={"dev": {"cluster": "c", "user": "u"}},
    )
    config = load_kubeconfig(write(tmp_path / "kc", doc))
    assert isinstance(config.auth, ExecAuth)
    assert config.auth.config.command == str(tmp_path / "bin" / "plugin")
    assert config.auth.config.args == ["get-token"]
    assert config.auth.config.env == {"A": "b"}


def test_an_unsupported_exec_api_version_is_a_config_error(tmp_path: Path) -> None:
    doc = kubeconfig(
        clusters={"c": {"server": "https://k"}},
        users={"u": {"exec": {"apiVersion": "client.authentication.k8s.io/v1alpha1",
                              "command": "x"}}},
        contexts={"dev": {"cluster": "c", "user": "u"}},
    )
    with pytest.raises(ConfigError, match="invalid apiVersion"):
        load_kubeconfig(write(tmp_path / "kc", doc))


def test_legacy_auth_providers_are_refused_with_a_pointer_to_exec(tmp_path: Path) -> None:
    doc = kubeconfig(clusters={"c": {"server": "https://k"}},
                     users={"u": {"auth-provider": {"name": "gcp"}}},
                     contexts={"dev": {"cluster": "c", "user": "u"}})
    with pytest.raises(ConfigError, match='auth-provider "gcp" is not supported'):
        load_kubeconfig(write(tmp_path / "kc", doc))


def service_account(tmp_path: Path, token: str = "sa-token") -> Path:
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text(token)
    (sa / "ca.crt").write_bytes(b"CLUSTER-CA")
    (sa / "namespace").write_text("operators")
    return sa


async def test_in_cluster_uses_the_service_account_and_rereads_its_token(
    tmp_path: Path,
) -> None:
    sa = service_account(tmp_path)
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    config = load_incluster(sa, environ=env, token_refresh_interval=0)
    assert config.server == "https://10.0.0.1:443"
    assert config.namespace == "operators"
    assert config.certificate_authority_data == b"CLUSTER-CA"
    assert config.auth is not None
    assert (await config.auth.credentials()).authorization == "Bearer sa-token"
    (sa / "token").write_text("rotated")
    assert (await config.auth.credentials()).authorization == "Bearer rotated"


def test_in_cluster_brackets_an_ipv6_service_host(tmp_path: Path) -> None:
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    assert load_incluster(service_account(tmp_path), environ=env).server == "https://[fd00::1]:443"


def test_in_cluster_without_the_service_variables_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="KUBERNETES_SERVICE_HOST"):
        load_incluster(service_account(tmp_path), environ={})


def test_load_config_prefers_kubeconfig_variable_then_home(tmp_path: Path) -> None:
    home_config = write(tmp_path / "home" / ".kube" / "config", kubeconfig(
        clusters={"c": {"server": "https://home"}}, users={"u": {}},
        contexts={"dev": {"cluster": "c", "user": "u"}}))
    env_config = write(tmp_path / "env-kc", kubeconfig(
        clusters={"c": {"server": "https://env"}}, users={"u": {}},
        contexts={"dev": {"cluster": "c", "user": "u"}}))
    home = str(tmp_path / "home")
    assert load_config(environ={"HOME": home, "KUBECONFIG": str(env_config)}).server \
        == "https://env"
    assert load_config(environ={"HOME": home}).server == "https://home"
    assert load_config(home_config).server == "https://home"
    with pytest.raises(ConfigError, match="no Kubernetes configuration found"):
        load_config(environ={"HOME": str(tmp_path / "nobody")})


HOSTILE = {
    "clusters-not-a-list": (b"clusters: 5\n", "clusters must be a list"),
    "entry-not-a-mapping": (b"contexts: [5]\n", r"contexts\[0\] must be a mapping"),
    "name-not-a-string": (b"users: [{name: [u]}]\n", r"users\[0\] must be a mapping"),
    "body-not-a-mapping": (b"users: [{name: u, user: [1]}]\n",
                           r"users\[0\]\.user must be a mapping"),
    "server-not-a-string": (b"current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
                            b"clusters: [{name: c, cluster: {server: 5}}]\n",
                            r"clusters\[0\]\.cluster\.server must be a string"),
    "context-not-a-string": (b"current-context: [x]\n", "current-context must be a string"),
    "not-utf-8": (b"\xff\xfe\x00", "cannot read kubeconfig"),
    # PyYAML's text was five lines with a caret
    "not-yaml": (b"garbage: [\n", "^cannot read kubeconfig .*/kc: it is not YAML: line 2, "
                 "column 1: expected the node content, but found '<stream end>'$"),
    "no-contexts": (b"apiVersion: v1\nkind: Config\n",
                    "^kubeconfig has no current-context and defines no contexts: write one "
                    r"\(kubectl config set-context\) or use another kubeconfig$"),
    "no-current-context": (b"contexts: [{name: b, context: {}}, {name: a, context: {}}]\n",
                           r"no context was given: name one of its contexts \(a, b\) with "
                           "--context, or set it with kubectl config use-context$"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_kubeconfig_of_the_wrong_shape_is_a_config_error(tmp_path: Path, case: str) -> None:
    """Every malformed shape is the one error callers catch (the CLI prints it as one line),
    never a TypeError or UnicodeDecodeError from deep in the resolution."""
    text, message = HOSTILE[case]
    path = tmp_path / "kc"
    path.write_bytes(text)
    with pytest.raises(ConfigError, match=message):
        load_kubeconfig(path)


def test_a_json_kubeconfig_reads_as_its_yaml_twin_without_loading_pyyaml(
        tmp_path: Path) -> None:
    """JSON is YAML: a kubeconfig written as JSON (``cluster up`` writes its workloads' so)
    resolves as the same document written as YAML, read as JSON without PyYAML, which a
    client's start then does not load (docs/benchmarks.md, Start-up, eighteenth pass); a
    flow mapping that is YAML but not JSON still reads, through PyYAML."""
    import json
    import subprocess
    import sys

    as_yaml = write(tmp_path / "yaml" / "kc", TWO_CONTEXTS)
    as_json = tmp_path / "json" / "kc"
    as_json.parent.mkdir()
    as_json.write_text(json.dumps(TWO_CONTEXTS, indent=2))
    flow = tmp_path / "flow" / "kc"
    flow.parent.mkdir()
    flow.write_text(yaml.safe_dump(TWO_CONTEXTS, default_flow_style=True))
    assert flow.read_text().startswith("{") and not flow.read_text().startswith('{"')
    for context in ("dev", "prod"):
        expected = load_kubeconfig(as_yaml, context=context)
        for path in (as_json, flow):
            got = load_kubeconfig(path, context=context)
            assert (got.server, got.namespace, type(got.auth), repr(got.auth)) == (
                expected.server, expected.namespace, type(expected.auth), repr(expected.auth))
            assert (got.auth.known() if isinstance(got.auth, TokenAuth) else None) == (
                expected.auth.known() if isinstance(expected.auth, TokenAuth) else None)
    code = ("import sys\nfrom setpoint.client import load_kubeconfig\n"
            f"config = load_kubeconfig({str(as_json)!r})\n"
            "print(config.server, 'yaml' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.split() == ["https://one:6443", "False"]
