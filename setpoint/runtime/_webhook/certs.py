"""The webhook server's serving certificate: read from a directory, or made up for tests.

As controller-runtime's webhook server: ``tls.crt`` and ``tls.key`` in the certificate
directory (by default ``<tmp>/k8s-webhook-server/serving-certs``, where cert-manager's
secret is usually mounted), reloaded when the files change so that rotated certificates
are served without a restart. When the files are missing and generation is allowed, a
throw-away CA and a serving certificate for the given hosts are generated in memory; the
CA's PEM is what a webhook configuration's ``caBundle`` (or a test client) must trust.
"""

from __future__ import annotations

import datetime
import os
import ssl
import tempfile
from collections.abc import Sequence
from pathlib import Path

from setpoint.machinery.certificates import Certificates, issue

__all__ = ["CertificateInvalid", "CertificateNotFound", "CertificateSource", "default_cert_dir",
           "generate_serving_certificate"]

VALIDITY = datetime.timedelta(days=365)


class CertificateNotFound(FileNotFoundError):
    """The serving certificate's files are missing and generating one is not allowed."""

    def __init__(self, cert_file: Path, key_file: Path) -> None:
        super().__init__(f"webhook serving certificate not found: {cert_file} and {key_file} "
                         "(mount them, or allow generating a self-signed one)")
        self.cert_file = cert_file
        self.key_file = key_file


class CertificateInvalid(ValueError):
    """The serving certificate's files are there but are no PEM certificate and the private
    key of that certificate."""

    def __init__(self, cert_file: Path, key_file: Path, reason: str) -> None:
        super().__init__(f"{cert_file} and {key_file} are not a PEM certificate and its "
                         f"private key ({reason})")
        self.cert_file = cert_file
        self.key_file = key_file
        self.reason = reason


def default_cert_dir() -> Path:
    """controller-runtime's default: ``<tmp>/k8s-webhook-server/serving-certs``."""
    return Path(tempfile.gettempdir()) / "k8s-webhook-server" / "serving-certs"


def generate_serving_certificate(hosts: Sequence[str]) -> Certificates:
    """A new CA and a serving certificate valid for ``hosts`` (IP addresses or DNS names)."""
    return issue(hosts, ca_name="setpoint-webhook-ca", validity=VALIDITY)


class CertificateSource:
    """The server's TLS context and where its certificate came from.

    ``ca_pem`` is the CA to trust: the generated one, or ``ca.crt`` beside the files when
    present (cert-manager writes it there), else None.
    """

    def __init__(self, cert_dir: str | os.PathLike[str] | None = None, *,
                 cert_name: str = "tls.crt", key_name: str = "tls.key",
                 generate: bool = False,
                 hosts: Sequence[str] = ("127.0.0.1", "localhost")) -> None:
        self.cert_dir = Path(cert_dir) if cert_dir is not None else default_cert_dir()
        self.cert_file = self.cert_dir / cert_name
        self.key_file = self.cert_dir / key_name
        self.generate = generate
        self.hosts = tuple(hosts)
        self.ca_pem: bytes | None = None
        self.generated = False
        self._stamp: tuple[float, float] | None = None
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2

    def __repr__(self) -> str:
        where = "generated" if self.generated else str(self.cert_dir)
        return f"CertificateSource({where})"

    def load(self) -> ssl.SSLContext:
        """Load the certificate into :attr:`context`; raises ``FileNotFoundError`` when the
        files are missing and generation is not allowed."""
        if self.cert_file.is_file() and self.key_file.is_file():
            self._load_files()
        elif self.generate:
            self._load_generated()
        else:
            raise CertificateNotFound(self.cert_file, self.key_file)
        return self.context

    def reload_if_changed(self) -> bool:
        """Reload files whose modification time changed (certificate rotation); returns
        whether it did. New connections use the new certificate."""
        if self.generated:
            return False
        stamp = self._files_stamp()
        if stamp is None or stamp == self._stamp:
            return False
        self._load_files()
        return True

    def _files_stamp(self) -> tuple[float, float] | None:
        try:
            return (self.cert_file.stat().st_mtime, self.key_file.stat().st_mtime)
        except FileNotFoundError:
            return None

    def _load_files(self) -> None:
        self._stamp = self._files_stamp()
        try:
            self.context.load_cert_chain(self.cert_file, self.key_file)
        except ssl.SSLError as exc:  # "[SSL] PEM lib", "[X509: KEY_VALUES_MISMATCH] ..."
            reason = exc.reason.lower().replace("_", " ") if exc.reason else "not PEM"
            raise CertificateInvalid(self.cert_file, self.key_file, reason) from None
        ca_file = self.cert_dir / "ca.crt"
        self.ca_pem = ca_file.read_bytes() if ca_file.is_file() else None

    def _load_generated(self) -> None:
        made = generate_serving_certificate(self.hosts)
        # ssl loads chains from files only: hand them over through a private directory
        with tempfile.TemporaryDirectory(prefix="setpoint-webhook-") as tmp:
            cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
            cert.write_bytes(made.cert_pem)
            key.touch(mode=0o600)
            key.write_bytes(made.key_pem)
            self.context.load_cert_chain(cert, key)
        self.ca_pem = made.ca_pem
        self.generated = True
