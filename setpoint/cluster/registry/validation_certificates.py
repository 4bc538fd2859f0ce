"""CertificateSigningRequest validation and strategy rules (kubernetes v1.32
pkg/apis/certificates/validation/validation.go: validateCertificateSigningRequest,
validateConditions, validateCertificateSigningRequestUpdate, getValidationOptions;
pkg/apis/core/validation ValidateSignerName; pkg/registry/certificates/certificates/strategy.go).

A create starts with an empty status (defaults.py): nobody creates an approved request. An
update through the main resource keeps the stored spec and status, so it changes metadata
only; ``/status`` keeps the stored Approved and Denied conditions.

The request must be a PEM ``CERTIFICATE REQUEST`` block with a valid PKCS#10 signature; the
PEM wording is Go's, while a DER or signature failure is reported as Go's ``x509`` does in the
common cases (the exact text of an ASN.1 parse error is Go's own and not reproduced).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature

from setpoint.cluster.registry.csrapproval import populate_condition_timestamps
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

LEGACY_UNKNOWN_SIGNER = "kubernetes.io/legacy-unknown"
# allValidUsages, sorted as sets.String.List() gives them
VALID_USAGES = tuple(sorted((
    "signing", "digital signature", "content commitment", "key encipherment",
    "key agreement", "data encipherment", "cert sign", "crl sign", "encipher only",
    "decipher only", "any", "server auth", "client auth", "code signing", "email protection",
    "s/mime", "ipsec end system", "ipsec tunnel", "ipsec user", "timestamping",
    "ocsp signing", "microsoft sgc", "netscape sgc")))
TRUE_ONLY_CONDITIONS = ("Approved", "Denied", "Failed")
STATUS_VALUES = ("False", "True", "Unknown")
_EXCLUSIVE = "Approved and Denied conditions are mutually exclusive"
_SIGNER_FORM = "must be a fully qualified domain and path of the form 'example.com/signer-name'"
_MAX_DOMAIN = 253
_MAX_SIGNER = _MAX_DOMAIN + (253 + 63 + 1) + 1


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _obj(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def json_bytes(value: Any) -> bytes:
    """A ``[]byte`` field as JSON carries it (base64); empty when it is not base64."""
    if not isinstance(value, str):
        return b""
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return b""


def _go_bytes(data: bytes) -> fe.GoValue:
    """``%#v`` of a ``[]byte``."""
    return fe.GoValue("[]byte{" + ", ".join(f"0x{b:x}" for b in data) + "}")


def _request_error(pem: bytes) -> str | None:
    """``validateCSR``: ``certificates.ParseCSR`` then ``CheckSignature``."""
    begin = pem.find(b"-----BEGIN ")
    if begin < 0 or not pem[begin:].startswith(b"-----BEGIN CERTIFICATE REQUEST-----"):
        return "PEM block type must be CERTIFICATE REQUEST"
    try:
        request = x509.load_pem_x509_csr(pem[begin:])
    except ValueError:
        return "PEM block type must be CERTIFICATE REQUEST" if b"-----END" not in pem else (
            "x509: malformed certificate request")
    try:
        if not request.is_signature_valid:
            return "x509: ECDSA verification failure"
    except (InvalidSignature, ValueError, TypeError):
        return "x509: cannot verify signature: algorithm unimplemented"
    return None


def parse_csr(request: object) -> x509.CertificateSigningRequest:
    """spec.request (base64 of PEM, as JSON carries a ``[]byte``) as pkg/apis/certificates
    ``ParseCSR`` reads it, for the admission plugins and the signer; ValueError if it is
    none."""
    pem = json_bytes(request)
    begin = pem.find(b"-----BEGIN CERTIFICATE REQUEST-----")
    if begin < 0:
        raise ValueError("PEM block type must be CERTIFICATE REQUEST")
    return x509.load_pem_x509_csr(pem[begin:])


def validate_signer_name(path: str, signer: str) -> list[Cause]:
    """``ValidateSignerName``: ``<domain>/<path>``."""
    if not signer:
        return [fe.required(path)]
    segments = signer.split("/")
    if len(segments) != 2:
        return [fe.invalid(path, signer, _SIGNER_FORM)]
    domain, rest = segments
    causes: list[Cause] = []
    if len(domain) > _MAX_DOMAIN:
        causes.append(fe.too_long(path, _MAX_DOMAIN))
    labels = domain.split(".")
    for label in labels:
        errs = names.is_dns1123_label(label)
        if errs:
            causes.extend(fe.invalid(path, domain, f"validating label {fe.go_quote(label)}: {e}")
                          for e in errs)
            break
    if len(labels) < 2:
        causes.append(fe.invalid(path, domain,
                                 "should be a domain with at least two segments separated by dots"))
    for label in rest.split("."):
        errs = names.is_dns1123_subdomain(label)
        if errs:
            causes.extend(fe.invalid(path, rest, f"validating label {fe.go_quote(label)}: {e}")
                          for e in errs)
            break
    if len(signer) > _MAX_SIGNER:
        causes.append(fe.too_long(path, _MAX_SIGNER))
    return causes


def _conditions(obj: Obj) -> list[Obj]:
    items = (obj.get("status") or {}).get("conditions")
    return [c if isinstance(c, dict) else {} for c in items] if isinstance(items, list) else []


def _usages(obj: Obj) -> list[Any]:
    usages = (obj.get("spec") or {}).get("usages")
    return usages if isinstance(usages, list) else []


def _options(old: Obj | None) -> dict[str, bool]:
    """``getValidationOptions``: what the stored request already had is let through."""
    if old is None:
        return dict.fromkeys(("both", "legacy", "dup_conditions", "empty_type", "unknown",
                              "dup_usages"), False)
    types = [c.get("type") or "" for c in _conditions(old)]
    usages = _usages(old)
    return {
        "both": "Approved" in types and "Denied" in types,
        "legacy": (old.get("spec") or {}).get("signerName") == LEGACY_UNKNOWN_SIGNER,
        "dup_conditions": len(set(types)) != len(types),
        "empty_type": "" in types,
        "unknown": any(u not in VALID_USAGES for u in usages),
        "dup_usages": len({str(u) for u in usages}) != len(usages),
    }


def _validate_conditions(obj: Obj, opts: dict[str, bool]) -> list[Cause]:
    """``validateConditions``."""
    causes: list[Cause] = []
    seen: set[str] = set()
    approved = denied = False
    for i, condition in enumerate(_conditions(obj)):
        path = f"status.conditions[{i}]"
        kind = _str(condition.get("type"))
        if not opts["empty_type"] and not kind:
            causes.append(fe.required(f"{path}.type"))
        allowed = ("True",) if kind in TRUE_ONLY_CONDITIONS else STATUS_VALUES
        status = _str(condition.get("status"))
        if not status:
            causes.append(fe.required(f"{path}.status"))
        elif status not in allowed:
            causes.append(fe.not_supported(f"{path}.status", status, allowed))
        if not opts["both"]:
            if kind == "Approved":
                approved = True
                if denied:
                    causes.append(fe.invalid(f"{path}.type", kind, _EXCLUSIVE))
            elif kind == "Denied":
                denied = True
                if approved:
                    causes.append(fe.invalid(f"{path}.type", kind, _EXCLUSIVE))
        if not opts["dup_conditions"]:
            if kind in seen:
                causes.append(fe.duplicate(f"{path}.type", kind))
            seen.add(kind)
    return causes


def _validate(obj: Obj, opts: dict[str, bool]) -> list[Cause]:
    """``validateCertificateSigningRequest`` past its metadata (names are not checked)."""
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    request = json_bytes(spec.get("request"))
    err = _request_error(request)
    if err is not None:
        causes.append(fe.invalid("spec.request", _go_bytes(request), err))
    usages = _usages(obj)
    if not usages:
        causes.append(fe.required("spec.usages"))
    if not opts["unknown"]:
        causes.extend(fe.not_supported(f"spec.usages[{i}]", u, VALID_USAGES)
                      for i, u in enumerate(usages) if u not in VALID_USAGES)
    if not opts["dup_usages"]:
        seen: set[str] = set()
        for i, usage in enumerate(usages):
            if str(usage) in seen:
                causes.append(fe.duplicate(f"spec.usages[{i}]", usage))
            seen.add(str(usage))
    signer = _str(spec.get("signerName"))
    if not opts["legacy"] and signer == LEGACY_UNKNOWN_SIGNER:
        causes.append(fe.invalid("spec.signerName", signer,
                                 "the legacy signerName is not allowed via this API version"))
    else:
        causes.extend(validate_signer_name("spec.signerName", signer))
    expiration = spec.get("expirationSeconds")
    if isinstance(expiration, int) and expiration < 600:
        causes.append(fe.invalid("spec.expirationSeconds", expiration,
                                 "may not specify a duration less than 600 seconds (10 minutes)"))
    return causes + _validate_conditions(obj, opts)


def validate_certificate_signing_request(obj: Obj) -> list[Cause]:
    """``ValidateCertificateSigningRequestCreate`` past its metadata."""
    return _validate(obj, _options(None))


def _certificate_error(pem: bytes) -> str | None:
    """``validateCertificate``: empty, or CERTIFICATE PEM blocks only, each parseable."""
    if not pem:
        return None
    blocks = 0
    rest = pem
    while True:
        begin = rest.find(b"-----BEGIN ")
        if begin < 0:
            break
        head_end = rest.find(b"-----", begin + 11)
        end_marker = rest.find(b"-----END ", head_end + 5) if head_end >= 0 else -1
        if head_end < 0 or end_marker < 0:
            break
        block_type = rest[begin + 11:head_end].decode("utf-8", "replace")
        tail = rest.find(b"-----", end_marker + 9)
        block, rest = rest[begin:tail + 5], rest[tail + 5:] if tail >= 0 else b""
        if block_type != "CERTIFICATE":
            return f"only CERTIFICATE PEM blocks are allowed, found {fe.go_quote(block_type)}"
        lines = block.split(b"\n")
        if len(lines) > 1 and b":" in lines[1]:
            return "no PEM block headers are permitted"
        blocks += 1
        try:
            x509.load_pem_x509_certificate(block)
        except ValueError:
            return "x509: malformed certificate"
    if blocks == 0:
        return "must contain at least one CERTIFICATE PEM block"
    return None


def _of_type(obj: Obj, kind: str) -> list[Obj]:
    """``findConditions``."""
    return [c for c in _conditions(obj) if c.get("type") == kind]


def _update(new: Obj, old: Obj, *, certificate: bool, approval: bool) -> list[Cause]:
    """``validateCertificateSigningRequestUpdate`` past its metadata: ``certificate`` (the
    ``/status`` endpoint) may set the certificate once, ``approval`` (``/approval``) may
    add or change Approved and Denied conditions; none may remove one."""
    opts = _options(old)
    new_certificate = json_bytes((new.get("status") or {}).get("certificate"))
    old_certificate = json_bytes((old.get("status") or {}).get("certificate"))
    causes = _validate(new, opts)
    # allowArbitraryCertificate: an untouched certificate, or a stored one already bad
    if new_certificate != old_certificate and _certificate_error(old_certificate) is None:
        err = _certificate_error(new_certificate)
        if err is not None:
            causes.append(fe.invalid("status.certificate", "<certificate data>", err))
    for kind in ("Approved", "Denied", "Failed"):
        if len(_of_type(new, kind)) < len(_of_type(old, kind)):
            causes.append(fe.forbidden("status.conditions",
                                       f"updates may not remove a condition of type \"{kind}\""))
    if not approval:
        for kind in ("Approved", "Denied"):
            before, after = _of_type(old, kind), _of_type(new, kind)
            if len(after) > len(before):
                causes.append(fe.forbidden(
                    "status.conditions", f"updates may not add a condition of type \"{kind}\""))
            elif len(after) == len(before) and after != before:
                # (Go appends cmp.Diff's rendering of the two lists, not reproduced here)
                causes.append(fe.forbidden(
                    "status.conditions",
                    f"updates may not modify a condition of type \"{kind}\""))
    if new_certificate != old_certificate:
        if not certificate:
            causes.append(fe.forbidden("status.certificate",
                                       "updates may not set certificate content"))
        elif old_certificate:
            causes.append(fe.forbidden("status.certificate",
                                       "updates may not modify existing certificate content"))
    return causes


def validate_certificate_signing_request_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateCertificateSigningRequestUpdate`` past its metadata (its strategy already
    kept the stored spec and status)."""
    return _update(new, old, certificate=False, approval=False)


def validate_status_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateCertificateSigningRequestStatusUpdate`` past its metadata."""
    return _update(new, old, certificate=True, approval=False)


def validate_approval_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateCertificateSigningRequestApprovalUpdate`` past its metadata."""
    return _update(new, old, certificate=False, approval=True)


def _status(obj: Obj) -> Obj:
    status = obj.get("status")
    if not isinstance(status, dict):
        status = obj["status"] = {}
    return status


def prepare_for_status_update(new: Obj, old: Obj, now: str) -> None:
    """``csrStatusStrategy.PrepareForUpdate`` (spec already the stored one): the stored
    Approved and Denied conditions stay as they were when their counts are unchanged."""
    new_conditions = _conditions(new)
    for kind in ("Approved", "Denied"):
        before = [c for c in _conditions(old) if c.get("type") == kind]
        positions = [i for i, c in enumerate(new_conditions) if c.get("type") == kind]
        if len(before) == len(positions):
            for i, condition in zip(positions, before, strict=True):
                new_conditions[i] = condition
    if new_conditions:
        _status(new)["conditions"] = new_conditions
    populate_condition_timestamps(new, old, now)


def prepare_for_update(new: Obj, old: Obj) -> None:
    """The strategy's ``PrepareForUpdate``: spec and status are the stored ones."""
    for key in ("spec", "status"):
        if key in old:
            new[key] = old[key]
        else:
            new.pop(key, None)
