"""The CSR signing controller: approved CertificateSigningRequests of the built-in signers
signed with the cluster's CA.

As kube-controller-manager's ``csrsigning`` (pkg/controller/certificates/signer/signer.go):
a request that is approved and not failed, for ``kubernetes.io/kube-apiserver-client``,
``kubernetes.io/kube-apiserver-client-kubelet`` or ``kubernetes.io/kubelet-serving``, is
checked by its signer's rules (``isKubeAPIServerClient``, ``isKubeletClient``,
``isKubeletServing``: pkg/apis/certificates/helpers.go); one that breaks them gets a
``Failed`` condition (``SignerValidationFailure``), the others a certificate in
``status.certificate``, both through ``/status``. ``kubernetes.io/legacy-unknown`` has no
signer here (kube-controller-manager does not sign it) and other signers are left alone.
The certificate (authority/policies.go ``PermissiveSigningPolicy``) carries the request's
subject and subject alternative names and the requested usages; it starts 5 minutes back and
lasts ``spec.expirationSeconds`` (at least 10 minutes, at most the signer's duration,
``--cluster-signing-duration``: a year), never past the CA's own end.

cryptography's ``x509`` package (about a sixth of the server's start to import) and the CA
are loaded with the first request to sign, not when the server starts.
"""

from __future__ import annotations

import base64
import copy
import datetime
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

from setpoint.cluster.controllers.queue import WorkQueue
from setpoint.cluster.controllers.resources import controller_write
from setpoint.cluster.serializer.decode import Decoded
from setpoint.cluster.storage import Event
from setpoint.machinery.errors import StatusError
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

    from setpoint.cluster.registry.rest import REST
    from setpoint.cluster.registry.types import ResourceType
    from setpoint.cluster.storage import Informer

CERTIFICATE_DURATION = datetime.timedelta(days=365)  # --cluster-signing-duration's default
MINIMUM_DURATION = datetime.timedelta(minutes=10)
BACKDATE = datetime.timedelta(minutes=5)
SHORT = datetime.timedelta(hours=8)

_KEY_USAGES = {
    "signing": "digital_signature", "digital signature": "digital_signature",
    "content commitment": "content_commitment", "key encipherment": "key_encipherment",
    "key agreement": "key_agreement", "data encipherment": "data_encipherment",
    "cert sign": "key_cert_sign", "crl sign": "crl_sign", "encipher only": "encipher_only",
    "decipher only": "decipher_only",
}
_EXT_KEY_USAGES = {  # x509.ExtendedKeyUsageOID's, by dotted string
    "any": "2.5.29.37.0",
    "server auth": "1.3.6.1.5.5.7.3.1",
    "client auth": "1.3.6.1.5.5.7.3.2",
    "code signing": "1.3.6.1.5.5.7.3.3",
    "email protection": "1.3.6.1.5.5.7.3.4",
    "s/mime": "1.3.6.1.5.5.7.3.4",
    "ipsec end system": "1.3.6.1.5.5.7.3.5",
    "ipsec tunnel": "1.3.6.1.5.5.7.3.6",
    "ipsec user": "1.3.6.1.5.5.7.3.7",
    "timestamping": "1.3.6.1.5.5.7.3.8",
    "ocsp signing": "1.3.6.1.5.5.7.3.9",
    "microsoft sgc": "1.3.6.1.4.1.311.10.3.3",
    "netscape sgc": "2.16.840.1.113730.4.1",
}

_KUBELET_SERVING_USAGES = ({"digital signature", "key encipherment", "server auth"},
                           {"digital signature", "server auth"})
_KUBELET_CLIENT_USAGES = ({"digital signature", "key encipherment", "client auth"},
                          {"digital signature", "client auth"})


def _go_list(usages: set[str]) -> str:
    return "[" + " ".join(sorted(usages)) + "]"  # %v of sets.String.List()


def _subject(request: x509.CertificateSigningRequest) -> tuple[str, list[str]]:
    """pkix.Name's CommonName (the last CN) and Organization."""
    from cryptography.x509.oid import NameOID

    names = [str(a.value) for a in request.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    return (names[-1] if names else "", [str(a.value) for a in
                                         request.subject.get_attributes_for_oid(
                                             NameOID.ORGANIZATION_NAME)])


def _sans(request: x509.CertificateSigningRequest) -> dict[str, bool]:
    """Which kinds of subject alternative name the request carries."""
    from cryptography import x509

    try:
        san = request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return {"dns": False, "ip": False, "email": False, "uri": False}
    return {"dns": bool(san.get_values_for_type(x509.DNSName)),
            "ip": bool(san.get_values_for_type(x509.IPAddress)),
            "email": bool(san.get_values_for_type(x509.RFC822Name)),
            "uri": bool(san.get_values_for_type(x509.UniformResourceIdentifier))}


def _kubelet_error(request: x509.CertificateSigningRequest, usages: set[str],
                   serving: bool) -> str | None:
    """helpers.go ``ValidateKubeletServingCSR`` / ``ValidateKubeletClientCSR``, their checks
    in their order."""
    common_name, organizations = _subject(request)
    if organizations != ["system:nodes"]:
        return "subject organization is not system:nodes"
    sans = _sans(request)
    wanted = _KUBELET_SERVING_USAGES if serving else _KUBELET_CLIENT_USAGES
    usages_error = None if usages in wanted else f"usages did not match {_go_list(wanted[0])}"
    name_error = None if common_name.startswith("system:node:") else (
        "subject common name does not begin with system:node:")
    if serving:
        checks = [(not sans["dns"] and not sans["ip"], "DNS or IP subjectAltName is required"),
                  (sans["email"], "Email subjectAltNames are not allowed"),
                  (sans["uri"], "URI subjectAltNames are not allowed"),
                  (usages_error is not None, usages_error),
                  (name_error is not None, name_error)]
    else:
        checks = [(sans["dns"], "DNS subjectAltNames are not allowed"),
                  (sans["email"], "Email subjectAltNames are not allowed"),
                  (sans["ip"], "IP subjectAltNames are not allowed"),
                  (sans["uri"], "URI subjectAltNames are not allowed"),
                  (name_error is not None, name_error),
                  (usages_error is not None, usages_error)]
    return next((message for failed, message in checks if failed), None)


def _client_usages_error(usages: list[str]) -> str | None:
    """signer.go ``validAPIServerClientUsages``."""
    has_client_auth = False
    for usage in usages:
        if usage == "client auth":
            has_client_auth = True
        elif usage not in ("digital signature", "key encipherment"):
            return f"invalid usage for client certificate: {usage}"
    if not has_client_auth:
        return "missing required usage for client certificate: client auth"
    return None


SIGNERS: dict[str, Callable[[x509.CertificateSigningRequest, list[str]], str | None]] = {
    "kubernetes.io/kube-apiserver-client": lambda req, usages: _client_usages_error(usages),
    "kubernetes.io/kube-apiserver-client-kubelet":
        lambda req, usages: _kubelet_error(req, set(usages), serving=False),
    "kubernetes.io/kubelet-serving":
        lambda req, usages: _kubelet_error(req, set(usages), serving=True),
}


def _has_true_condition(csr: Obj, kind: str) -> bool:
    return any(isinstance(c, dict) and c.get("type") == kind and c.get("status") == "True"
               for c in (csr.get("status") or {}).get("conditions") or ())


def duration(expiration_seconds: int | None,
             certificate_duration: datetime.timedelta = CERTIFICATE_DURATION,
             ) -> datetime.timedelta:
    """signer.go ``duration``: the request's, between 10 minutes and the signer's."""
    if expiration_seconds is None:
        return certificate_duration
    requested = datetime.timedelta(seconds=expiration_seconds)
    return min(max(requested, MINIMUM_DURATION), certificate_duration)


class CSRSigningController:
    """Signs approved requests of the built-in signers with the cluster's CA."""

    def __init__(self, store: Informer, rest: REST, rt: ResourceType, ca_cert_pem: bytes,
                 ca_key_pem: bytes) -> None:
        self._store = store
        self._rest = rest
        self._rt = rt
        self._ca_pem = ca_cert_pem
        self._ca_key_pem = ca_key_pem
        self.queue: WorkQueue[str] = WorkQueue("csrsigning", self._sync)
        store.add_listener(self._on_event, (rt.storage_key,))

    @cached_property
    def _ca(self) -> x509.Certificate:
        from cryptography import x509

        return x509.load_pem_x509_certificate(self._ca_pem)

    @cached_property
    def _ca_key(self) -> PrivateKeyTypes:
        from cryptography.hazmat.primitives import serialization

        return serialization.load_pem_private_key(self._ca_key_pem, password=None)

    def start(self) -> None:
        for csr in self._store.list(self._rt.storage_key):
            self.queue.add(csr["metadata"]["name"])

    def _on_event(self, event: Event) -> None:
        if event.type != "DELETED":
            self.queue.add(event.name)

    def _sync(self, name: str) -> None:
        csr = self._store.get(self._rt.storage_key, "", name)
        if csr is None or not _has_true_condition(csr, "Approved") \
                or _has_true_condition(csr, "Failed") \
                or (csr.get("status") or {}).get("certificate"):
            return
        spec = csr.get("spec") or {}
        check = SIGNERS.get(spec.get("signerName", ""))
        if check is None:
            return
        from setpoint.cluster.registry.validation_certificates import parse_csr

        request = parse_csr(spec.get("request"))
        usages = [str(u) for u in spec.get("usages") or ()]
        new = copy.deepcopy(csr)
        status = new.setdefault("status", {})
        problem = check(request, usages)
        if problem is not None:
            status.setdefault("conditions", []).append({
                "type": "Failed", "status": "True", "reason": "SignerValidationFailure",
                "message": problem})
        else:
            status["certificate"] = base64.b64encode(
                self.sign(request, usages, spec.get("expirationSeconds"))).decode()
        try:
            self._rest.update(self._rt, None, name, Decoded(new), controller_write(),
                              subresource="status")
        except StatusError as err:
            if err.code not in (404, 409):
                raise
            self.queue.add(name)  # changed meanwhile: judged again on the stored one

    def sign(self, request: x509.CertificateSigningRequest, usages: list[str],
             expiration_seconds: int | None) -> bytes:
        """authority.go ``Sign`` under ``PermissiveSigningPolicy``: PEM."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization

        now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
        ttl = duration(expiration_seconds)
        not_before = now - BACKDATE
        # a short-lived certificate's end is not moved back with its start
        not_after = now + ttl if ttl < SHORT else not_before + ttl
        not_after = min(not_after, self._ca.not_valid_after_utc)
        builder = (x509.CertificateBuilder()
                   .subject_name(request.subject).issuer_name(self._ca.subject)
                   .public_key(request.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(not_before).not_valid_after(not_after)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None),
                                  critical=True))
        flags = {v: False for v in _KEY_USAGES.values()}
        for usage in usages:
            if usage in _KEY_USAGES:
                flags[_KEY_USAGES[usage]] = True
        if any(flags.values()):
            builder = builder.add_extension(x509.KeyUsage(**flags), critical=True)
        extended = [x509.ObjectIdentifier(oid) for oid in dict.fromkeys(
            _EXT_KEY_USAGES[u] for u in usages if u in _EXT_KEY_USAGES)]
        if extended:
            builder = builder.add_extension(x509.ExtendedKeyUsage(extended), critical=False)
        try:
            san = request.extensions.get_extension_for_class(x509.SubjectAlternativeName)
            builder = builder.add_extension(san.value, critical=False)
        except x509.ExtensionNotFound:
            pass
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(
                self._ca.public_key()), critical=False)  # type: ignore[arg-type]
        cert = builder.sign(self._ca_key, hashes.SHA256())  # type: ignore[arg-type]
        return cert.public_bytes(serialization.Encoding.PEM)
