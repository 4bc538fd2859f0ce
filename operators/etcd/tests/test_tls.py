"""A TLS etcd cluster on the process runtime: real etcd serving clients and peers over
https with client certificates required (etcd's ``--client-cert-auth`` and
``--peer-client-cert-auth``, Documentation/op-guide/security.md), its certificates issued
by the operator into Secrets and renewed before expiry.

The test's own client checks hostnames (unlike the operator, which dials pods by address):
the client Service's certificate name and each member's DNS name must be in the member's
certificate."""

from __future__ import annotations

import base64
import datetime
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from operators.etcd import carotation, certificates, objects, tlssecrets
from operators.etcd.certificates import KeyPair
from operators.etcd.etcdclient import EtcdClient, EtcdError
from operators.etcd.resource import (
    EtcdBackup,
    EtcdBackupSpec,
    EtcdCluster,
    EtcdClusterSpec,
    TLSSpec,
)
from operators.etcd.tests.test_real import V34, keys, member_pods, running
from setpoint.client import Client, Kind
from setpoint.resources.models.core_v1 import Secret, Service
from setpoint.testing import OperatorRunner, present
from setpoint.testing.plugin import Waiter
from setpoint.testing.waiting import wait_for as wait_until

pytestmark = [pytest.mark.setpoint_runtime("process"), pytest.mark.timeout(300),
              pytest.mark.usefixtures("etcd_installed")]
TIMEOUT = 120.0
EVENT = Kind("events.k8s.io/v1", "Event")


async def pair_of(k8s: Client, name: str) -> tuple[KeyPair, bytes]:
    secret = await k8s.get(Secret, name)
    data = {k: base64.b64decode(v) for k, v in (secret.data or {}).items()}
    return KeyPair(data["tls.crt"], data["tls.key"]), data.get("ca.crt", b"")


async def user_context(k8s: Client, name: str, *, certificate: bool = True
                       ) -> ssl.SSLContext:
    """What a user's client builds from the Secret ``<name>-client-tls``: trust the
    cluster's CA, check hostnames, present the client certificate."""
    client, ca = await pair_of(k8s, f"{name}-client-tls")
    context = ssl.create_default_context(cadata=ca.decode())
    if certificate:
        tlssecrets.load_key_pair(context, client)
    return context


async def write_through_service(url: str, context: ssl.SSLContext, name: str,
                                data: dict[str, str]) -> None:
    """Write ``data`` through the client Service of cluster ``name`` once it has a ready
    endpoint."""
    async def written() -> bool:
        try:
            async with EtcdClient(url, timeout=10.0, tls=context,
                                  server_hostname=f"{name}-client.default.svc") as etcd:
                for key, value in data.items():
                    await etcd.put(key, value)
        except EtcdError:
            return False  # the Service has no ready endpoint yet
        return True
    await wait_until(written, timeout=30.0, message="keys written over https")


def available_since(cluster: EtcdCluster) -> object:
    return next(c.last_transition_time for c in cluster.status.conditions or ()
                if c.type == "Available")


async def test_a_tls_cluster_serves_over_https_with_client_certificates_and_refuses_http(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter, tmp_path: Path) -> None:
    """Clients must use https and present a certificate; an EtcdBackup of the cluster is
    taken over https with the operator's client certificate and holds the keys written."""
    cluster = EtcdCluster(name="s", spec=EtcdClusterSpec(size=3, version=V34,
                                                         tls=TLSSpec(enabled=True)))
    await k8s.create(cluster)
    await wait_for(EtcdCluster, "s", running(3), timeout=TIMEOUT)
    cluster = await k8s.get(EtcdCluster, "s")
    assert all(m.peer_url and m.peer_url.startswith("https://")
               for m in cluster.status.members or ())

    service = await k8s.get(Service, objects.client_service_name(cluster))
    address = f"{present(service.spec).cluster_ip}:{objects.CLIENT_PORT}"
    context = await user_context(k8s, "s")
    data = keys("tls")

    await write_through_service(f"https://{address}", context, "s", data)

    with pytest.raises(EtcdError):  # plain http on the client port
        async with EtcdClient(f"http://{address}") as etcd:
            await etcd.put("/test/plain", "x")
    with pytest.raises(EtcdError):  # https without a client certificate
        async with EtcdClient(f"https://{address}",
                              tls=await user_context(k8s, "s", certificate=False),
                              server_hostname="s-client.default.svc") as etcd:
            await etcd.put("/test/anonymous", "x")

    for name, pod in sorted((await member_pods(k8s, "s")).items()):
        volume = next(v for v in present(pod.spec).volumes or () if v.name == "tls")
        assert volume.secret is not None and volume.secret.default_mode == 0o600
        assert volume.secret.secret_name == f"{name}-tls"
        async with EtcdClient(f"https://{present(pod.status).pod_ip}:{objects.CLIENT_PORT}",
                              tls=context,
                              server_hostname=f"{name}.s.default.svc.cluster.local") as etcd:
            assert await etcd.get_prefix("/test/", serializable=True) == data
    ca = (await k8s.get(Secret, "s-ca"))
    assert ca.type == "kubernetes.io/tls"

    await k8s.create(EtcdBackup(name="sb", spec=EtcdBackupSpec(
        cluster_name="s", directory=str(tmp_path / "backups"))))
    backup = await wait_for(EtcdBackup, "sb", lambda b: b.status.phase in ("Complete",
                                                                          "Failed"),
                            timeout=TIMEOUT)
    assert backup.status.phase == "Complete", backup.status.conditions
    assert backup.status.path is not None
    snapshot = Path(backup.status.path).read_bytes()
    assert len(snapshot) == backup.status.size
    assert all(key.encode() in snapshot and value.encode() in snapshot  # bbolt keeps them raw
               for key, value in data.items())

    # scaled down, the removed members' certificates and keys go with their pods and claims
    cluster = await k8s.get(EtcdCluster, "s")
    cluster.spec.size = 1
    await k8s.update(cluster)
    await wait_for(EtcdCluster, "s", running(1), timeout=TIMEOUT)

    async def only_the_members_secrets() -> bool:
        return {str(s.metadata.name) for s in await k8s.list(Secret) if
                tlssecrets.member_secret_ordinal(str(s.metadata.name), cluster) is not None
                } == {"s-0-tls"}
    await wait_until(only_the_members_secrets, timeout=TIMEOUT,
                     message="s-1-tls and s-2-tls deleted with their members")
    assert {"s-ca", "s-client-tls"} <= {str(s.metadata.name) for s in await k8s.list(Secret)}


async def test_certificates_near_expiry_are_renewed_and_members_restarted_one_at_a_time(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    """Each member's Secret is given a certificate expiring within ``renewBefore`` (as if
    time had passed): the operator issues new ones and restarts the members on them, one
    at a time, so a quorum answers throughout and no key is lost."""
    cluster = EtcdCluster(name="r", spec=EtcdClusterSpec(
        size=3, version=V34, tls=TLSSpec(enabled=True, duration="2h", renew_before="1h")))
    await k8s.create(cluster)
    await wait_for(EtcdCluster, "r", running(3), timeout=TIMEOUT)
    cluster = await k8s.get(EtcdCluster, "r")
    before = {n: p.metadata.uid for n, p in (await member_pods(k8s, "r")).items()}
    ca, _ = await pair_of(k8s, "r-ca")
    soon = datetime.timedelta(minutes=30)
    for ordinal in range(3):
        expiring = certificates.issue(ca, f"r-{ordinal}", server=True, validity=soon,
                                      dns_names=tlssecrets.member_dns_names(cluster, ordinal),
                                      ips=["127.0.0.1"])
        secret = await k8s.get(Secret, f"r-{ordinal}-tls")
        secret.data = {**(secret.data or {}),
                       "tls.crt": base64.b64encode(expiring.cert).decode(),
                       "tls.key": base64.b64encode(expiring.key).decode()}
        await k8s.update(secret)

    async def every_member_restarted() -> bool:
        pods = await member_pods(k8s, "r")
        if sorted(pods) != ["r-0", "r-1", "r-2"] or any(
                pods[n].metadata.uid == before[n] for n in pods):
            return False
        for name, pod in pods.items():
            pair, _ = await pair_of(k8s, f"{name}-tls")
            if (pod.metadata.annotations or {}).get(tlssecrets.CERTIFICATE_SERIAL) != \
                    certificates.serial(pair.cert):
                return False
        return True

    await wait_until(every_member_restarted, timeout=TIMEOUT,
                     message="every member restarted on a renewed certificate")
    after = await wait_for(EtcdCluster, "r", running(3), timeout=TIMEOUT)
    # Available never went False: its last transition is still the cluster's first one
    assert available_since(after) == available_since(cluster)
    assert {m.name: m.id for m in after.status.members or ()} == \
        {m.name: m.id for m in cluster.status.members or ()}
    for ordinal in range(3):
        pair, _ = await pair_of(k8s, f"r-{ordinal}-tls")
        left = certificates.not_after(pair.cert) - datetime.datetime.now(datetime.UTC)
        assert left > datetime.timedelta(hours=1), left



def expiring_copy(ca: KeyPair, validity: datetime.timedelta) -> bytes:
    """``ca``'s certificate issued again, same subject and key, ending after ``validity``:
    as if the CA had grown old (what it signed still verifies against it)."""
    cert = x509.load_pem_x509_certificate(ca.cert)
    key = serialization.load_pem_private_key(ca.key, password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(cert.subject).issuer_name(cert.subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + validity))
    for extension in cert.extensions:
        builder = builder.add_extension(extension.value, critical=extension.critical)
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


async def test_a_ca_near_expiry_is_rotated_and_members_trust_both_on_the_way(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    """A CA within ``renewBefore`` of its end is replaced in kubeadm's order for a manual CA
    rotation (carotation.py): every member first trusts the old and the new CA, then gets
    a certificate of the new one, then trusts it alone; the members restart one at a time
    for each step, so a quorum answers throughout, and the keys written before are read
    after with a client that trusts the new CA only."""
    cluster = EtcdCluster(name="c", spec=EtcdClusterSpec(
        size=3, version=V34, tls=TLSSpec(enabled=True, duration="2h", renew_before="1h")))
    await k8s.create(cluster)
    await wait_for(EtcdCluster, "c", running(3), timeout=TIMEOUT)
    cluster = await k8s.get(EtcdCluster, "c")
    service = await k8s.get(Service, objects.client_service_name(cluster))
    address = f"https://{present(service.spec).cluster_ip}:{objects.CLIENT_PORT}"
    data = keys("ca")

    await write_through_service(address, await user_context(k8s, "c"), "c", data)

    old_ca = (await pair_of(k8s, "c-ca"))[0]
    secret = await k8s.get(Secret, "c-ca")
    secret.data = {**(secret.data or {}), "tls.crt": base64.b64encode(
        expiring_copy(old_ca, datetime.timedelta(minutes=30))).decode()}
    await k8s.update(secret)

    async def rotated() -> bool:
        ca_secret = await k8s.get(Secret, "c-ca")
        if set(ca_secret.data or {}) != {"tls.crt", "tls.key"}:
            return False  # a rotation step is still under way
        ca, _ = await pair_of(k8s, "c-ca")
        if ca.key == old_ca.key:
            return False
        for name, pod in (await member_pods(k8s, "c")).items():
            pair, trusted = await pair_of(k8s, f"{name}-tls")
            annotations = pod.metadata.annotations or {}
            if trusted != ca.cert or not certificates.signed_by(pair.cert, ca.cert) \
                    or annotations.get(tlssecrets.CERTIFICATE_SERIAL) != \
                    certificates.serial(pair.cert) or carotation.TRUST_ANNOTATION in annotations:
                return False
        return True
    await wait_until(rotated, timeout=3 * TIMEOUT,
                     message="the CA rotated and every member restarted on the new one alone")
    after = await wait_for(EtcdCluster, "c", running(3), timeout=TIMEOUT)
    # Available never went False: its last transition is still the cluster's first one
    assert available_since(after) == available_since(cluster)
    assert {m.name: m.id for m in after.status.members or ()} == \
        {m.name: m.id for m in cluster.status.members or ()}
    events = (await k8s.list(EVENT)).items
    assert [e["note"].rsplit(" is now ", 1)[1] for e in sorted(
        (e for e in events if e.get("reason") == "CARotation"),
        key=lambda e: e["metadata"]["creationTimestamp"])] == [
        "Trusting (was Steady)", "Reissuing (was Trusting)", "Steady (was Reissuing)"]

    client, ca_bundle = await pair_of(k8s, "c-client-tls")
    assert ca_bundle == (await pair_of(k8s, "c-ca"))[0].cert
    assert certificates.signed_by(client.cert, ca_bundle)
    context = await user_context(k8s, "c")

    async def read_back() -> dict[str, str] | None:
        try:
            async with EtcdClient(address, timeout=10.0, tls=context,
                                  server_hostname="c-client.default.svc") as etcd:
                return await etcd.get_prefix("/test/")
        except EtcdError:
            return None  # the Service still routes to the pod a restart replaced
    assert await wait_until(read_back, timeout=30.0, message="keys read over https") == data
