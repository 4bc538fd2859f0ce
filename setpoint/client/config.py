"""Where the cluster is and how to talk to it: kubeconfig files and the in-cluster account.

:func:`load_config` follows controller-runtime's order: an explicit kubeconfig, then the
``KUBECONFIG`` variable, then the in-cluster service account, then ``~/.kube/config``.
Kubeconfig files are merged the way kubectl merges them (the first file to define a name or
``current-context`` wins), and relative file paths are resolved against the file that names
them.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from setpoint.client.auth import (
    Authenticator,
    BasicAuth,
    ExecAuth,
    ExecConfig,
    TokenAuth,
    TokenFileAuth,
)
from setpoint.client.errors import AuthError, ConfigError
from setpoint.machinery import librarypatterns

# PyYAML's one slow pattern compiled at once: about 53 M instructions off every client's
# start, cluster up's workloads' process's among them (docs/benchmarks.md, Start-up);
# PyYAML itself (about 35 M more) loads with the first kubeconfig that is not JSON
librarypatterns.prime_yaml()

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclass
class ClusterConfig:
    """Everything needed to reach one API server as one user.

    PEM material is kept as bytes; ``auth`` produces the per-request credentials (it may be
    None for an unauthenticated or client-certificate-only connection).
    """

    server: str
    namespace: str = "default"
    certificate_authority_data: bytes | None = None
    insecure_skip_tls_verify: bool = False
    tls_server_name: str | None = None
    client_certificate_data: bytes | None = None
    client_key_data: bytes | None = None
    auth: Authenticator | None = None
    proxy_url: str | None = None
    context: str | None = None
    user: str | None = None
    """The kubeconfig's name of the user (for messages: a 401 has no user to name)."""
    extra: dict[str, Any] = field(default_factory=dict)

    def unauthorized_message(self) -> str:
        """kubectl's "You must be logged in to the server (Unauthorized)"
        (k8s.io/kubectl/pkg/cmd/util/helpers.go standardErrorMessage), naming the server,
        the user and the context, and what to do: what every command says to a 401."""
        user = f' user "{self.user}"' if self.user else " this client"
        where = f' (kubeconfig context "{self.context}")' if self.context else ""
        return (f"You must be logged in to the server (Unauthorized): {self.server} does not "
                f"accept the credentials of{user}{where}: renew them or use another "
                "kubeconfig")

    def __repr__(self) -> str:
        parts = [f"server={self.server!r}", f"namespace={self.namespace!r}"]
        if self.context:
            parts.insert(0, f"context={self.context!r}")
        if self.auth is not None:
            parts.append(f"auth={self.auth!r}")
        if self.client_certificate_data:
            parts.append("client_certificate=<pem>")
        if self.insecure_skip_tls_verify:
            parts.append("insecure_skip_tls_verify=True")
        return f"ClusterConfig({', '.join(parts)})"


def local_cluster_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where ``setpoint cluster up`` keeps its state and writes its kubeconfig by default:
    ``$XDG_DATA_HOME/setpoint/cluster`` (``~/.local/share/setpoint/cluster``)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME") or Path.home()) / ".local"
                                           / "share")
    return Path(base) / "setpoint" / "cluster"


def local_cluster_kubeconfig(environ: Mapping[str, str] | None = None) -> Path:
    """The kubeconfig ``setpoint cluster up`` writes when not told where."""
    return local_cluster_dir(environ) / "kubeconfig"


def load_config(
    kubeconfig: str | os.PathLike[str] | None = None, context: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> ClusterConfig:
    """The configuration a program run "against the current cluster" should use.

    An explicit ``kubeconfig`` wins; otherwise ``KUBECONFIG``; otherwise the in-cluster
    service account when running in a pod; otherwise ``~/.kube/config``.
    """
    env = os.environ if environ is None else environ
    if kubeconfig is not None:
        return load_kubeconfig(kubeconfig, context=context)
    if env.get("KUBECONFIG"):
        return load_kubeconfig(None, context=context, environ=env)
    if env.get("KUBERNETES_SERVICE_HOST") and (SERVICE_ACCOUNT_DIR / "token").exists():
        return load_incluster(environ=env)
    home = Path(env.get("HOME") or Path.home()) / ".kube" / "config"
    if home.exists():
        return load_kubeconfig(home, context=context)
    raise ConfigError(
        "no Kubernetes configuration found: pass a kubeconfig, set KUBECONFIG, "
        "or run inside a pod with a service account"
    )


def load_incluster(
    directory: str | os.PathLike[str] = SERVICE_ACCOUNT_DIR,
    environ: Mapping[str, str] | None = None, token_refresh_interval: float = 60.0,
) -> ClusterConfig:
    """The configuration of a pod's service account.

    The token file is re-read every ``token_refresh_interval`` seconds (and after a 401),
    because the kubelet rotates projected tokens in place.
    """
    env = os.environ if environ is None else environ
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise ConfigError(
            "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and "
            "KUBERNETES_SERVICE_PORT must be defined"
        )
    sa = Path(directory)
    token_path = sa / "token"
    if not token_path.exists():
        raise ConfigError(f"unable to load in-cluster configuration: {token_path} is missing")
    ca = _read(sa / "ca.crt") if (sa / "ca.crt").exists() else None
    ns_path = sa / "namespace"
    namespace = ns_path.read_text().strip() if ns_path.exists() else "default"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 service address
    return ClusterConfig(
        server=f"https://{host}:{port}", namespace=namespace or "default",
        certificate_authority_data=ca,
        auth=TokenFileAuth(token_path, refresh_interval=token_refresh_interval),
        context="in-cluster",
    )


def load_kubeconfig(
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    context: str | None = None, environ: Mapping[str, str] | None = None,
) -> ClusterConfig:
    """Read a kubeconfig (or several, merged) and resolve one context.

    ``path`` None means ``KUBECONFIG`` (a list separated by ``os.pathsep``) or
    ``~/.kube/config``. ``context`` None means the ``current-context``.
    """
    env = os.environ if environ is None else environ
    paths = _kubeconfig_paths(path, env)
    merged = _merge([(p, _read_yaml(p)) for p in paths])
    return _resolve(merged, context)


def kubeconfig_from_dict(
    document: Mapping[str, Any], context: str | None = None, base_dir: Path | None = None,
) -> ClusterConfig:
    """Resolve a kubeconfig given as a parsed document (relative paths against ``base_dir``)."""
    return _resolve(_merge([(base_dir / "kubeconfig" if base_dir else None, dict(document))]),
                    context)


# ---------------------------------------------------------------------------------------


@dataclass
class _Merged:
    clusters: dict[str, tuple[Path | None, dict[str, Any]]] = field(default_factory=dict)
    users: dict[str, tuple[Path | None, dict[str, Any]]] = field(default_factory=dict)
    contexts: dict[str, dict[str, Any]] = field(default_factory=dict)
    current_context: str = ""


def _kubeconfig_paths(
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None,
    env: Mapping[str, str],
) -> list[Path]:
    if path is None:
        raw = env.get("KUBECONFIG", "")
        paths = [Path(p) for p in raw.split(os.pathsep) if p]
        if not paths:
            paths = [Path(env.get("HOME") or Path.home()) / ".kube" / "config"]
        # A missing file in KUBECONFIG is skipped, as kubectl does; all missing is an error.
        existing = [p for p in paths if p.exists()]
        if not existing:
            raise ConfigError(f"no kubeconfig found at {os.pathsep.join(map(str, paths))}")
        return existing
    if isinstance(path, str | os.PathLike):
        paths = [Path(path)]
    else:
        paths = [Path(p) for p in path]
    for p in paths:
        if not p.exists():
            raise ConfigError(f"kubeconfig {p} does not exist")
    return paths


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read kubeconfig {path}: {exc}") from exc
    if text.lstrip().startswith("{"):
        # JSON (which YAML contains; ``cluster up`` writes its workloads' kubeconfig so):
        # read as JSON, as client-go's decoder reads JSON, without loading PyYAML
        # (docs/benchmarks.md, Start-up, eighteenth pass); what JSON does not parse, PyYAML
        # reads (a YAML flow mapping) or says why not
        try:
            return _mapping(orjson.loads(text), path)
        except orjson.JSONDecodeError:
            pass
    import yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        # PyYAML's own text is five lines with a caret: one line, as client-go's error is
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ConfigError(f"cannot read kubeconfig {path}: it is not YAML: {where}"
                          f"{exc.problem or exc.context}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"cannot read kubeconfig {path}: {exc}") from exc
    return _mapping(doc, path)


def _mapping(doc: Any, path: Path) -> dict[str, Any]:
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(f"kubeconfig {path} is not a mapping")
    return doc


def _merge(documents: Sequence[tuple[Path | None, dict[str, Any]]]) -> _Merged:
    merged = _Merged()
    for path, doc in documents:
        for name, body in _named(doc, "clusters", "cluster", path):
            merged.clusters.setdefault(name, (path, body))
        for name, body in _named(doc, "users", "user", path):
            merged.users.setdefault(name, (path, body))
        for name, body in _named(doc, "contexts", "context", path):
            merged.contexts.setdefault(name, body)
        current = doc.get("current-context")
        if current is not None and not isinstance(current, str):
            raise ConfigError(f"kubeconfig {path or ''}: current-context must be a string")
        if not merged.current_context and current:
            merged.current_context = current
    return merged


def _named(doc: Mapping[str, Any], key: str, body: str,
           path: Path | None) -> list[tuple[str, dict[str, Any]]]:
    """A kubeconfig list (``clusters``, ``users``, ``contexts``) as (name, body) pairs; a
    list of another shape is a ConfigError, as client-go's decoding refuses it, never a
    TypeError deep in the resolution."""
    where = f"kubeconfig {path}" if path else "kubeconfig"
    entries = doc.get(key) or []
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: {key} must be a list")
    out = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ConfigError(f"{where}: {key}[{i}] must be a mapping with a string name")
        inner = entry.get(body) or {}
        if not isinstance(inner, dict):
            raise ConfigError(f"{where}: {key}[{i}].{body} must be a mapping")
        for field_name, value in inner.items():
            if field_name in _STRING_FIELDS and value is not None and not isinstance(value, str):
                raise ConfigError(f"{where}: {key}[{i}].{body}.{field_name} must be a string")
        out.append((entry["name"], inner))
    return out


# the fields read as strings (client-go's NamedCluster, NamedContext, AuthInfo); others are
# read as mappings or lists where they are used
_STRING_FIELDS = frozenset({
    "server", "tls-server-name", "proxy-url", "certificate-authority",
    "certificate-authority-data", "cluster", "user", "namespace", "client-certificate",
    "client-certificate-data", "client-key", "client-key-data", "token", "tokenFile",
    "username", "password"})


def _resolve(merged: _Merged, context: str | None) -> ClusterConfig:
    name = context or merged.current_context
    if not name:
        if not merged.contexts:
            raise ConfigError("kubeconfig has no current-context and defines no contexts: "
                              "write one (kubectl config set-context) or use another "
                              "kubeconfig")
        known = ", ".join(sorted(merged.contexts))
        raise ConfigError("kubeconfig has no current-context and no context was given: "
                          f"name one of its contexts ({known}) with --context, or set it "
                          "with kubectl config use-context")
    if name not in merged.contexts:
        raise ConfigError(f'context "{name}" does not exist in the kubeconfig')
    ctx = merged.contexts[name]
    cluster_name = ctx.get("cluster", "")
    if cluster_name not in merged.clusters:
        raise ConfigError(f'cluster "{cluster_name}" of context "{name}" does not exist')
    cluster_path, cluster = merged.clusters[cluster_name]
    user_path, user = merged.users.get(ctx.get("user", ""), (None, {}))
    server = cluster.get("server")
    if not server:
        raise ConfigError(f'cluster "{cluster_name}" has no server')
    if urlsplit(server).scheme not in ("http", "https"):
        # checked where the file is read (the transport would refuse it only when the
        # first client is made, a Manager's start), naming the file and the cluster
        where = f"kubeconfig {cluster_path}: " if cluster_path else ""
        raise ConfigError(f'{where}cluster "{cluster_name}" has server "{server}": only '
                          "http:// and https:// URLs are supported")

    ca = _data_or_file(cluster, "certificate-authority", cluster_path)
    config = ClusterConfig(
        server=server.rstrip("/"),
        namespace=ctx.get("namespace") or "default",
        certificate_authority_data=ca,
        insecure_skip_tls_verify=bool(cluster.get("insecure-skip-tls-verify", False)),
        tls_server_name=cluster.get("tls-server-name") or None,
        client_certificate_data=_data_or_file(user, "client-certificate", user_path),
        client_key_data=_data_or_file(user, "client-key", user_path),
        proxy_url=cluster.get("proxy-url") or None,
        context=name,
        user=ctx.get("user") or None,
    )
    if bool(config.client_certificate_data) != bool(config.client_key_data):
        raise ConfigError(f'user of context "{name}" has a client certificate without a key '
                          "or a key without a certificate")
    config.auth = _authenticator(user, user_path, cluster, name)
    return config


def _authenticator(
    user: Mapping[str, Any], path: Path | None, cluster: Mapping[str, Any], context: str,
) -> Authenticator | None:
    base = path.parent if path else None
    if user.get("exec"):
        cluster_info = {
            k: v for k, v in cluster.items()
            if k in ("server", "tls-server-name", "insecure-skip-tls-verify",
                     "certificate-authority-data", "proxy-url")
        }
        ext = next((e.get("extension") for e in cluster.get("extensions") or []
                    if e.get("name") == "client.authentication.k8s.io/exec"), None)
        if ext is not None:
            cluster_info["config"] = ext
        try:
            return ExecAuth(ExecConfig.from_kubeconfig(user["exec"], base, cluster_info))
        except AuthError as exc:
            raise ConfigError(f'context "{context}": {exc}') from exc
    # client-go: a readable tokenFile takes precedence over an inline token.
    if user.get("tokenFile"):
        return TokenFileAuth(_path(user["tokenFile"], path))
    if user.get("token"):
        return TokenAuth(str(user["token"]))
    if user.get("username") or user.get("password"):
        return BasicAuth(str(user.get("username", "")), str(user.get("password", "")))
    if user.get("auth-provider"):
        provider = (user["auth-provider"] or {}).get("name", "")
        raise ConfigError(
            f'context "{context}": auth-provider "{provider}" is not supported; '
            "use an exec credential plugin instead"
        )
    return None


def _data_or_file(section: Mapping[str, Any], key: str, origin: Path | None) -> bytes | None:
    """``<key>-data`` (base64) wins over ``<key>`` (a file path), as in client-go."""
    data = section.get(f"{key}-data")
    if data:
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ConfigError(f"{key}-data is not valid base64: {exc}") from exc
    file = section.get(key)
    if file:
        return _read(_path(file, origin))
    return None


def _path(value: str, origin: Path | None) -> Path:
    p = Path(os.path.expanduser(value))
    if not p.is_absolute() and origin is not None:
        p = origin.parent / p
    return p


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
