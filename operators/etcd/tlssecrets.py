"""A TLS cluster's Secrets, its member pods' TLS flags, and the operator's own client TLS.

For an EtcdCluster ``e`` with ``spec.tls.enabled``:

- ``Secret e-ca`` (``tls.crt``, ``tls.key``): the cluster's CA, read only by the operator
  (during a rotation, the next or the previous CA beside it: :mod:`.carotation`);
- ``Secret e-<i>-tls`` (``ca.crt``, ``tls.crt``, ``tls.key``): member ``e-<i>``'s
  certificate, for clients and peers alike, mounted into its pod (files 0600); ``ca.crt``
  holds every CA trusted now;
- ``Secret e-client-tls`` (the same keys): a client certificate, what the operator talks
  to etcd with and what a user's client mounts.

Each Secret is written with ``create_or_update`` against the cached version, so two
reconciles racing (or a cache a moment behind) cannot issue two CAs: the second write is a
conflict and the reconcile is retried on the Secret as written. Private keys live only in
Secret data; they are never logged (a :class:`certificates.KeyPair`'s repr hides them)
and are on disk only for the moment Python's ``ssl`` module reads them (it loads a key
from a file only), in a private temporary directory.

A member pod records the serial of the certificate it started with (annotation
``etcd.setpoint.dev/certificate-serial``) and, during a CA rotation, the CAs it trusts:
:mod:`.certrotation` restarts a member whose Secret holds others.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import os
import ssl
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from operators.etcd import carotation, certificates, objects
from operators.etcd.carotation import Authority
from operators.etcd.certificates import KeyPair
from operators.etcd.resource import GROUP, EtcdCluster
from setpoint.resources.models.core_v1 import (
    ContainerPort,
    HTTPGetAction,
    PersistentVolumeClaim,
    Pod,
    Probe,
    Secret,
    SecretVolumeSource,
    Volume,
    VolumeMount,
)
from setpoint.resources.models.meta_v1 import ObjectMeta
from setpoint.runtime import Context

TLS_MOUNT = "/etc/etcd/tls"
METRICS_PORT = objects.METRICS_PORT
"""etcd's plain-http ``--listen-metrics-urls`` (``/health`` and ``/metrics``): the readiness
probe cannot present a client certificate, so it asks here, as kubeadm's etcd pods do."""
SECRET_MODE = 0o600
CERTIFICATE_SERIAL = f"{GROUP}/certificate-serial"


def enabled(cluster: EtcdCluster) -> bool:
    return cluster.spec.tls is not None and cluster.spec.tls.enabled


def ca_secret_name(cluster: EtcdCluster) -> str:
    return f"{cluster.metadata.name}-ca"


def member_secret_name(cluster: EtcdCluster, ordinal: int) -> str:
    return f"{objects.member_name(cluster, ordinal)}-tls"


def member_secret_ordinal(name: str, cluster: EtcdCluster) -> int | None:
    """The ordinal of a member Secret's name (``<cluster>-<i>-tls``), or None for another
    name (the CA's and the client's among them)."""
    stem, suffix, rest = name.rpartition("-tls")
    return objects.ordinal_of(stem, cluster) if suffix and not rest else None


def client_secret_name(cluster: EtcdCluster) -> str:
    return f"{cluster.metadata.name}-client-tls"


def member_dns_names(cluster: EtcdCluster, ordinal: int) -> list[str]:
    """Every name member ``ordinal`` is reached by: its own under the headless Service,
    the client Service's (a client does not know which member answers), and localhost."""
    ns, member = cluster.metadata.namespace, objects.member_name(cluster, ordinal)
    peers, client = objects.peer_service_name(cluster), objects.client_service_name(cluster)
    return [f"{member}.{peers}.{ns}.svc.{objects.CLUSTER_DOMAIN}", f"{member}.{peers}.{ns}.svc",
            f"{member}.{peers}", member,
            f"{client}.{ns}.svc.{objects.CLUSTER_DOMAIN}", f"{client}.{ns}.svc",
            f"{client}.{ns}", client, "localhost"]


def _data(secret: Secret | None) -> dict[str, bytes]:
    return {k: base64.b64decode(v) for k, v in ((secret.data or {}).items()
                                                 if secret is not None else ())}


def _encode(values: dict[str, bytes]) -> dict[str, str]:
    return {k: base64.b64encode(v).decode() for k, v in values.items()}


def key_pair(secret: Secret | None) -> KeyPair | None:
    data = _data(secret)
    if "tls.crt" not in data or "tls.key" not in data:
        return None
    return KeyPair(data["tls.crt"], data["tls.key"])


def _secret(cluster: EtcdCluster, name: str) -> Secret:
    return Secret(metadata=ObjectMeta(name=name, labels=objects.labels(cluster)),
                  type="kubernetes.io/tls")


async def _ensure(ctx: Context[EtcdCluster], cluster: EtcdCluster, name: str,
                  issue: Callable[[], KeyPair], ca: Authority) -> KeyPair:
    """The key pair in Secret ``name``, issued anew when it is missing, not signed by the
    signing CA (the CA Secret was made again, or a rotation moved to a new CA) or due for
    renewal; its ``ca.crt`` is every CA trusted now."""
    renew_before = certificates.parse_duration(cluster.spec.tls.renew_before) \
        if cluster.spec.tls is not None else None

    def mutate(current: Secret) -> None:
        values = _data(current)
        held = key_pair(current)
        if held is None or not certificates.signed_by(held.cert, ca.signing.cert) \
                or (renew_before is not None and certificates.due(held.cert, renew_before)):
            fresh: KeyPair = issue()
            values = {"tls.crt": fresh.cert, "tls.key": fresh.key}
        values["ca.crt"] = ca.trusted
        current.data = _encode(values)
        current.type = "kubernetes.io/tls"

    result, _ = await ctx.create_or_update(_secret(cluster, name), mutate)
    pair = key_pair(result)
    assert pair is not None, name
    return pair


def _validity(cluster: EtcdCluster) -> datetime.timedelta:
    assert cluster.spec.tls is not None
    return certificates.parse_duration(cluster.spec.tls.duration)


async def ensure_member(ctx: Context[EtcdCluster], cluster: EtcdCluster, ca: Authority,
                        ordinal: int) -> KeyPair:
    """Member ``ordinal``'s certificate: issued when missing or due (a renewal writes new
    Secret data; :mod:`.certrotation` then restarts the member on it)."""
    return await _ensure(ctx, cluster, member_secret_name(cluster, ordinal), lambda: (
        certificates.issue(ca.signing, objects.member_name(cluster, ordinal),
                           dns_names=member_dns_names(cluster, ordinal), ips=["127.0.0.1"],
                           server=True, validity=_validity(cluster))), ca)


async def ensure_client(ctx: Context[EtcdCluster], cluster: EtcdCluster, ca: Authority
                        ) -> KeyPair:
    """The client certificate; renewing it needs no restart (each connection presents
    the current one)."""
    return await _ensure(ctx, cluster, client_secret_name(cluster), lambda: (
        certificates.issue(ca.signing, "etcd-client", server=False,
                           validity=_validity(cluster))), ca)


def member_serial(ctx: Context[EtcdCluster], cluster: EtcdCluster, ordinal: int
                  ) -> str | None:
    pair = key_pair(ctx.get(Secret, member_secret_name(cluster, ordinal)))
    return certificates.serial(pair.cert) if pair is not None else None


def member_trust(ctx: Context[EtcdCluster], cluster: EtcdCluster, ordinal: int
                 ) -> str | None:
    """What member ``ordinal``'s Secret says to trust, as its pod records it."""
    return carotation.trust_digest(
        _data(ctx.get(Secret, member_secret_name(cluster, ordinal))).get("ca.crt", b""))


def running_as_held(ctx: Context[EtcdCluster], cluster: EtcdCluster, ordinal: int,
                    pod: Pod) -> bool:
    """Whether member ``ordinal``'s pod runs on the certificate and CAs its Secret holds."""
    annotations = pod.metadata.annotations or {}
    return annotations.get(CERTIFICATE_SERIAL) == member_serial(ctx, cluster, ordinal) \
        and annotations.get(carotation.TRUST_ANNOTATION) == member_trust(ctx, cluster, ordinal)


def secured(ctx: Context[EtcdCluster], cluster: EtcdCluster, ordinal: int, pod: Pod) -> Pod:
    """``pod`` (from :func:`objects.member_pod`) serving clients and peers over TLS with
    client certificates required; unchanged when the cluster has no TLS."""
    if not enabled(cluster):
        return pod
    # member_pod always builds the spec with the etcd container first
    assert pod.spec is not None and pod.spec.containers
    container = pod.spec.containers[0]
    files = f"{TLS_MOUNT}/tls.crt", f"{TLS_MOUNT}/tls.key", f"{TLS_MOUNT}/ca.crt"
    container.args = [*(container.args or ()),
                      f"--cert-file={files[0]}", f"--key-file={files[1]}",
                      f"--trusted-ca-file={files[2]}", "--client-cert-auth",
                      f"--peer-cert-file={files[0]}", f"--peer-key-file={files[1]}",
                      f"--peer-trusted-ca-file={files[2]}", "--peer-client-cert-auth",
                      f"--listen-metrics-urls=http://0.0.0.0:{METRICS_PORT}"]
    container.ports = [*(container.ports or ()), ContainerPort(
        name="metrics", container_port=METRICS_PORT, protocol="TCP")]
    container.readiness_probe = Probe(http_get=HTTPGetAction(path="/health", port="metrics"),
                                      period_seconds=2, failure_threshold=3)
    container.volume_mounts = [*(container.volume_mounts or ()),
                               VolumeMount(name="tls", mount_path=TLS_MOUNT, read_only=True)]
    pod.spec.volumes = [*(pod.spec.volumes or ()), Volume(name="tls", secret=(
        SecretVolumeSource(secret_name=member_secret_name(cluster, ordinal),
                           default_mode=SECRET_MODE)))]
    annotations = dict(pod.metadata.annotations or {})
    serial, trust = member_serial(ctx, cluster, ordinal), member_trust(ctx, cluster, ordinal)
    if serial is not None:
        annotations[CERTIFICATE_SERIAL] = serial
    if trust is not None:
        annotations[carotation.TRUST_ANNOTATION] = trust
    pod.metadata.annotations = annotations
    return pod


_contexts: dict[tuple[str, str], ssl.SSLContext] = {}


def client_context(trusted: bytes, client: KeyPair) -> ssl.SSLContext:
    """An SSL context that presents ``client`` and trusts only the cluster's CAs
    (``trusted``: one, or two during a CA rotation).

    Hostnames are not checked: the operator dials members by pod address, which no
    certificate can name in advance (it is known only once the pod runs). The CA is this
    cluster's own and signs nothing but its members and its client, and the client
    certificate lacks serverAuth, so a verified chain with serverAuth is one of the
    members. Contexts are kept per (CAs, client certificate), built once."""
    key = (hashlib.sha256(trusted).hexdigest(), certificates.serial(client.cert))
    found = _contexts.get(key)
    if found is not None:
        return found
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cadata=trusted.decode())
    context.check_hostname = False
    load_key_pair(context, client)
    _contexts[key] = context
    return context


def load_key_pair(context: ssl.SSLContext, pair: KeyPair) -> None:
    """``load_cert_chain`` reads files only: the pair is written 0600 into a 0700 directory
    for the call and removed with it."""
    with tempfile.TemporaryDirectory(prefix="etcd-tls-") as directory:
        paths = Path(directory) / "tls.crt", Path(directory) / "tls.key"
        for path, content in zip(paths, (pair.cert, pair.key), strict=True):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(content)
        context.load_cert_chain(*paths)


def cached_client_context(ctx: Context[Any], cluster: EtcdCluster) -> ssl.SSLContext | None:
    """The operator's client context for ``cluster`` from the cached Secret
    ``<name>-client-tls`` (its ``ca.crt`` is the cluster's CA), issuing nothing: for the
    controllers other than the EtcdCluster one (a backup). None while the Secret is not
    there yet (the EtcdCluster controller issues it)."""
    secret = ctx.get(Secret, client_secret_name(cluster), cluster.metadata.namespace)
    pair, ca = key_pair(secret), _data(secret).get("ca.crt")
    if pair is None or not ca:
        return None
    return client_context(ca, pair)


async def ensure(ctx: Context[EtcdCluster], cluster: EtcdCluster, pods: list[Pod],
                 claims: list[PersistentVolumeClaim]) -> ssl.SSLContext:
    """The CA, the client certificate and a certificate for every ordinal the spec wants or
    that has a pod or claim (made before the member's pod, which mounts it; kept until
    the member is gone); the context the operator dials etcd with.

    A member's Secret goes with the last of its pod and claim: a removed member's key
    must not outlive it (the garbage collector would keep it as long as the cluster)."""
    ordinals = set(range(cluster.spec.size))
    for item in [*pods, *claims]:
        found = objects.ordinal_of(str(item.metadata.name), cluster)
        if found is not None:
            ordinals.add(found)
    live = {ordinal: pod for pod in pods if not pod.metadata.deletion_timestamp
            and (ordinal := objects.ordinal_of(str(pod.metadata.name), cluster)) is not None}

    def members_settled(ca: Authority) -> bool:
        """Every member's pod runs on what its Secret holds, issued by ``ca`` and
        trusting all of ``ca``'s CAs (the step of a CA rotation is done everywhere)."""
        for ordinal in range(cluster.spec.size):
            pod, pair = live.get(ordinal), key_pair(
                ctx.get(Secret, member_secret_name(cluster, ordinal)))
            if pod is None or pair is None or not running_as_held(ctx, cluster, ordinal, pod) \
                    or not certificates.signed_by(pair.cert, ca.signing.cert) \
                    or member_trust(ctx, cluster, ordinal) != carotation.trust_digest(
                        ca.trusted):
                return False
        return True

    ca = await carotation.ensure(ctx, cluster, ca_secret_name(cluster), members_settled)
    client = await ensure_client(ctx, cluster, ca)
    for ordinal in sorted(ordinals):
        await ensure_member(ctx, cluster, ca, ordinal)
    for secret in ctx.list(Secret, labels=objects.selector(cluster)):
        held_by = member_secret_ordinal(str(secret.metadata.name), cluster)
        if held_by is not None and held_by not in ordinals:
            await ctx.delete(secret)
    return client_context(ca.trusted, client)
