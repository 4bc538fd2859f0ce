"""Authenticators: where a request's credentials come from.

Each authenticator answers :meth:`Authenticator.credentials` with what the next request
should carry (an ``Authorization`` header value and/or a client certificate) and forgets
cached credentials on :meth:`Authenticator.invalidate`, which the transport calls after a 401
so that rotated tokens and renewed exec credentials are picked up at once.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from setpoint.client.errors import AuthError

log = logging.getLogger(__name__)

EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")


@dataclass(frozen=True, slots=True)
class Credentials:
    """What one request authenticates with.

    ``authorization`` is the full header value (``Bearer …`` or ``Basic …``); the client
    certificate and key are PEM. ``expires_at`` is when an exec plugin said they expire.
    """

    authorization: str | None = None
    client_certificate_data: bytes | None = None
    client_key_data: bytes | None = None
    expires_at: datetime | None = None

    def __repr__(self) -> str:
        parts = []
        if self.authorization:
            parts.append(f"authorization={self.authorization.split(' ', 1)[0]} <redacted>")
        if self.client_certificate_data:
            parts.append("client_certificate=<pem>")
        if self.expires_at:
            parts.append(f"expires_at={self.expires_at.isoformat()}")
        return f"Credentials({', '.join(parts)})"


class Authenticator(ABC):
    """A source of :class:`Credentials` for requests."""

    @abstractmethod
    async def credentials(self) -> Credentials:
        """The credentials to send now (cached while they are valid)."""

    def known(self) -> Credentials | None:
        """The credentials to send now when they are known without waiting (a fixed
        token), else None: the transport then awaits :meth:`credentials`. Asked per
        request, where awaiting a coroutine that never waits costs more than the rest of
        the question (issue 12, sixteenth pass)."""
        return None

    def invalidate(self) -> bool:
        """Forget cached credentials after a 401.

        Returns True when asking again may give different credentials, which makes a retry
        of the rejected request worthwhile.
        """
        return False


class TokenAuth(Authenticator):
    """A fixed bearer token."""

    def __init__(self, token: str) -> None:
        self._credentials = Credentials(authorization=f"Bearer {token}")

    def known(self) -> Credentials:
        return self._credentials

    async def credentials(self) -> Credentials:
        return self._credentials

    def __repr__(self) -> str:
        return "TokenAuth(<redacted>)"


class BasicAuth(Authenticator):
    """HTTP basic authentication (kubeconfig ``username``/``password``)."""

    def __init__(self, username: str, password: str) -> None:
        self.username = username
        pair = base64.b64encode(f"{username}:{password}".encode()).decode()
        self._credentials = Credentials(authorization=f"Basic {pair}")

    def known(self) -> Credentials:
        return self._credentials

    async def credentials(self) -> Credentials:
        return self._credentials

    def __repr__(self) -> str:
        return f"BasicAuth(username={self.username!r})"


class TokenFileAuth(Authenticator):
    """A bearer token read from a file and re-read periodically, as service account tokens
    (projected, rotated by the kubelet) require.

    The file is re-read once ``refresh_interval`` seconds have passed since the last read, and
    at once after a 401. When a re-read fails, the last good token is kept (as client-go does)
    and the error only surfaces if there never was one.
    """

    def __init__(
        self, path: str | os.PathLike[str], refresh_interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = Path(path)
        self.refresh_interval = refresh_interval
        self._clock = clock
        self._token: str | None = None
        self._read_at: float | None = None

    async def credentials(self) -> Credentials:
        now = self._clock()
        if self._read_at is None or now - self._read_at >= self.refresh_interval:
            self._reload(now)
        return Credentials(authorization=f"Bearer {self._token}")

    def _reload(self, now: float) -> None:
        try:
            token = self.path.read_text().strip()
        except OSError as exc:
            if self._token is None:
                raise AuthError(f"cannot read token file {self.path}: {exc}") from exc
            log.warning("token_file_reread_failed path=%s error=%s", self.path, exc)
            return
        if not token:
            if self._token is None:
                raise AuthError(f"token file {self.path} is empty")
            return
        self._token = token
        self._read_at = now

    def invalidate(self) -> bool:
        self._read_at = None
        return True

    def __repr__(self) -> str:
        return f"TokenFileAuth(path={str(self.path)!r}, refresh_interval={self.refresh_interval})"


@dataclass
class ExecConfig:
    """The ``users[].user.exec`` stanza of a kubeconfig."""

    command: str
    api_version: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    install_hint: str = ""
    provide_cluster_info: bool = False
    interactive_mode: str = "IfAvailable"
    # The cluster stanza, as ExecCredential.spec.cluster wants it (provideClusterInfo).
    cluster: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_kubeconfig(
        cls, stanza: Mapping[str, Any], base_dir: Path | None = None,
        cluster: Mapping[str, Any] | None = None,
    ) -> ExecConfig:
        """Read an exec stanza; a relative command with a path separator is resolved against
        the kubeconfig's directory (as client-go does), a bare name against ``PATH``."""
        command = stanza.get("command")
        if not command:
            raise AuthError("exec plugin: command is required")
        api_version = stanza.get("apiVersion", "")
        if api_version not in EXEC_API_VERSIONS:
            raise AuthError(
                f"exec plugin: invalid apiVersion {api_version!r}; supported: "
                f"{', '.join(EXEC_API_VERSIONS)}"
            )
        if base_dir is not None and os.sep in command and not os.path.isabs(command):
            command = str(base_dir / command)
        env = {e["name"]: str(e.get("value", "")) for e in stanza.get("env") or []}
        return cls(
            command=command, api_version=api_version, args=[str(a) for a in stanza.get("args")
                                                             or []],
            env=env, install_hint=stanza.get("installHint") or "",
            provide_cluster_info=bool(stanza.get("provideClusterInfo", False)),
            interactive_mode=stanza.get("interactiveMode") or "IfAvailable",
            cluster=dict(cluster or {}),
        )


class ExecAuth(Authenticator):
    """Credentials from an exec credential plugin (``client.authentication.k8s.io`` v1 or
    v1beta1), cached until their ``expirationTimestamp`` (or until a 401 when they carry none).

    The plugin runs without a terminal (``spec.interactive`` false); concurrent requests wait
    for one run rather than starting one each.
    """

    # Renew a little before the plugin's expiry so a request never leaves with a token that
    # expires in flight.
    EXPIRY_LEEWAY_SECONDS = 5.0

    def __init__(
        self, config: ExecConfig, timeout: float = 60.0,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.config = config
        self.timeout = timeout
        self._now = now
        self._cached: Credentials | None = None
        self._lock = asyncio.Lock()

    async def credentials(self) -> Credentials:
        if self._valid(self._cached):
            assert self._cached is not None
            return self._cached
        async with self._lock:
            if not self._valid(self._cached):
                self._cached = await self._run()
            assert self._cached is not None
            return self._cached

    def invalidate(self) -> bool:
        self._cached = None
        return True

    def _valid(self, creds: Credentials | None) -> bool:
        if creds is None:
            return False
        if creds.expires_at is None:
            return True
        remaining = (creds.expires_at - self._now()).total_seconds()
        return remaining > self.EXPIRY_LEEWAY_SECONDS

    async def _run(self) -> Credentials:
        cfg = self.config
        spec: dict[str, Any] = {"interactive": False}
        if cfg.provide_cluster_info:
            spec["cluster"] = cfg.cluster
        exec_info = {"apiVersion": cfg.api_version, "kind": "ExecCredential", "spec": spec}
        env = {**os.environ, **cfg.env, "KUBERNETES_EXEC_INFO": orjson.dumps(exec_info).decode()}
        try:
            proc = await asyncio.create_subprocess_exec(
                cfg.command, *cfg.args, env=env, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            hint = f"\n\n{cfg.install_hint}" if cfg.install_hint else ""
            raise AuthError(f"exec plugin {cfg.command!r} could not be started: {exc}{hint}") \
                from exc
        try:
            stdout, stderr = await asyncio.wait_for(proc.communicate(), self.timeout)
        except TimeoutError as exc:
            proc.kill()
            await proc.wait()
            raise AuthError(f"exec plugin {cfg.command!r} timed out after {self.timeout}s") \
                from exc
        if proc.returncode != 0:
            raise AuthError(
                f"exec plugin {cfg.command!r} failed with exit code {proc.returncode}: "
                f"{stderr.decode('utf-8', 'replace').strip()}"
            )
        return self._parse(stdout)

    def _parse(self, stdout: bytes) -> Credentials:
        cfg = self.config
        try:
            doc = orjson.loads(stdout)
        except orjson.JSONDecodeError as exc:
            raise AuthError(f"exec plugin {cfg.command!r} printed invalid JSON: {exc}") from exc
        if not isinstance(doc, dict) or doc.get("kind") != "ExecCredential":
            raise AuthError(f"exec plugin {cfg.command!r} did not print an ExecCredential")
        if doc.get("apiVersion") != cfg.api_version:
            raise AuthError(
                f"exec plugin {cfg.command!r} is configured to use API version "
                f"{cfg.api_version}, plugin returned version {doc.get('apiVersion')}"
            )
        status = doc.get("status") or {}
        token = status.get("token")
        cert = status.get("clientCertificateData")
        key = status.get("clientKeyData")
        if bool(cert) != bool(key):
            raise AuthError(
                f"exec plugin {cfg.command!r}: clientCertificateData and clientKeyData must "
                "both be set or both be empty"
            )
        if not token and not cert:
            raise AuthError(f"exec plugin {cfg.command!r} returned neither token nor cert")
        expires_at = _parse_time(status.get("expirationTimestamp"))
        return Credentials(
            authorization=f"Bearer {token}" if token else None,
            client_certificate_data=cert.encode() if cert else None,
            client_key_data=key.encode() if key else None,
            expires_at=expires_at,
        )

    def __repr__(self) -> str:
        return f"ExecAuth(command={self.config.command!r}, api_version={self.config.api_version!r})"


def _parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise AuthError(f"exec plugin: invalid expirationTimestamp {value!r}") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def exec_auth(
    stanza: Mapping[str, Any], base_dir: Path | None = None,
    cluster: Mapping[str, Any] | None = None,
) -> ExecAuth:
    """An :class:`ExecAuth` for a kubeconfig ``exec`` stanza."""
    return ExecAuth(ExecConfig.from_kubeconfig(stanza, base_dir, cluster))

