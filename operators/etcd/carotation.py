"""Rotating a TLS cluster's CA without a member ever refusing a peer's certificate.

etcd loads ``--trusted-ca-file`` when it starts, so a member trusts only the CAs it started
with. Replacing the CA and every certificate at once would leave restarted members
presenting certificates that the members not yet restarted refuse, peers and quorum
included. The rotation therefore goes as kubeadm's "Manual Rotation of CA Certificates"
does (trust both, sign with the new, then drop the old), each step waiting for every
member to run on the one before:

1. **Trusting.** The CA is within ``spec.tls.renewBefore`` of its expiry: a new CA is issued
   into the CA Secret's ``next.crt``/``next.key``. It signs nothing yet, but every
   ``ca.crt`` (members' and the client's) now holds both, and the members restart on that
   bundle, one at a time (:mod:`.certrotation`).
2. **Reissuing.** Once every member trusts both, the new CA becomes the signing one
   (``tls.crt``/``tls.key``) and the old certificate moves to ``previous.crt``, still
   trusted: members not yet restarted present certificates it signed. Every certificate is
   issued again by the new CA and the members restart on theirs.
3. **Steady.** Once every member runs a certificate of the new CA, ``previous.crt`` is
   dropped and the members restart once more, trusting the new CA alone.

A pod records what it trusts (:data:`TRUST_ANNOTATION`) only while more than one CA is
trusted, so pods made outside a rotation carry nothing and need no restart.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from operators.etcd import certificates, objects
from operators.etcd.certificates import KeyPair
from operators.etcd.resource import GROUP, EtcdCluster
from setpoint.resources.models.core_v1 import Secret
from setpoint.resources.models.meta_v1 import ObjectMeta
from setpoint.runtime import Context

TRUST_ANNOTATION = f"{GROUP}/trusted-cas"
INCOMING = ("next.crt", "next.key")
OUTGOING = "previous.crt"
_BEGIN = b"-----BEGIN CERTIFICATE-----"


@dataclass(frozen=True)
class Authority:
    """A cluster's CAs at one moment of a rotation: the one that signs, and the ones
    trusted besides it."""

    signing: KeyPair
    incoming: KeyPair | None = None
    outgoing: bytes | None = None

    @property
    def trusted(self) -> bytes:
        """Every CA a member or client must trust now, PEM certificates end to end."""
        return b"".join(c if c.endswith(b"\n") else c + b"\n" for c in (
            self.signing.cert, self.incoming.cert if self.incoming else None,
            self.outgoing) if c)

    @property
    def phase(self) -> str:
        return "Trusting" if self.incoming else "Reissuing" if self.outgoing else "Steady"


def trust_digest(bundle: bytes) -> str | None:
    """What a pod records of the CAs it trusts: None for a single CA (the steady state)."""
    if bundle.count(_BEGIN) < 2:
        return None
    return hashlib.sha256(bundle).hexdigest()[:16]


def authority_of(secret: Secret | None) -> Authority | None:
    """The CA Secret read, or None when it holds no usable signing pair."""
    data = {k: base64.b64decode(v) for k, v in ((secret.data or {}).items()
                                                 if secret is not None else ())}
    if not data.get("tls.crt") or not data.get("tls.key"):
        return None
    incoming = KeyPair(data[INCOMING[0]], data[INCOMING[1]]) \
        if data.get(INCOMING[0]) and data.get(INCOMING[1]) else None
    return Authority(KeyPair(data["tls.crt"], data["tls.key"]), incoming,
                     data.get(OUTGOING) or None)


def _data(authority: Authority) -> dict[str, str]:
    values = {"tls.crt": authority.signing.cert, "tls.key": authority.signing.key}
    if authority.incoming is not None:
        values |= dict(zip(INCOMING, (authority.incoming.cert, authority.incoming.key),
                           strict=True))
    if authority.outgoing is not None:
        values[OUTGOING] = authority.outgoing
    return {k: base64.b64encode(v).decode() for k, v in values.items()}


def next_authority(held: Authority | None, cluster: EtcdCluster,
                   members_settled: Callable[[Authority], bool]) -> Authority:
    """The authority to hold after ``held``: the same until its step is done everywhere.
    ``members_settled(a)`` says whether every member runs trusting ``a.trusted`` on a
    certificate its signing CA issued."""
    def issue() -> KeyPair:
        return certificates.issue_ca(f"etcd-ca-{cluster.metadata.name}")

    if held is None:
        return Authority(issue())
    if held.phase == "Steady":
        renew_before = certificates.parse_duration(cluster.spec.tls.renew_before) \
            if cluster.spec.tls is not None else None
        if renew_before is not None and certificates.due(held.signing.cert, renew_before):
            return Authority(held.signing, incoming=issue())
        return held
    if not members_settled(held):
        return held
    if held.incoming is not None:
        return Authority(held.incoming, outgoing=held.signing.cert)
    return Authority(held.signing)


async def ensure(ctx: Context[EtcdCluster], cluster: EtcdCluster, name: str,
                 members_settled: Callable[[Authority], bool]) -> Authority:
    """The CA Secret ``name`` brought one step on (made when missing); its authority."""
    before = authority_of(ctx.get(Secret, name))

    def mutate(current: Secret) -> None:
        held = authority_of(current)
        wanted = next_authority(held, cluster, members_settled)
        if wanted != held:
            current.data = _data(wanted)
            current.type = "kubernetes.io/tls"

    result, _ = await ctx.create_or_update(Secret(
        metadata=ObjectMeta(name=name, labels=objects.labels(cluster)),
        type="kubernetes.io/tls"), mutate)
    authority = authority_of(result)
    assert authority is not None, name
    if before is not None and authority.phase != before.phase:
        ctx.events.normal("CARotation", f"the CA rotation of {name} is now "
                          f"{authority.phase} (was {before.phase})", action="RotateCA")
    return authority
