"""``kube-system/extension-apiserver-authentication``, kept as clusterauthenticationtrust does.

pkg/controlplane/controller/clusterauthenticationtrust/cluster_authentication_trust_controller.go
(1.32): whenever the ConfigMap is added, changed or deleted, and once a minute, the data read
back from it is combined with what this server requires (``combinedClusterAuthenticationInfo``:
the header lists as an ordered union, the CA bundles as the union of their unexpired
certificates, five minutes' slack) and written back as ``getConfigMapDataFor`` lays it out
(keys it does not know are dropped) when that differs; a deleted ConfigMap is created again.
Data it cannot read (a list that is not a JSON string list, a bundle that is not PEM) is an
error retried with backoff, as there.

The bundles are read as client-go's ``cert.ParseCertsPEM`` reads them: each ``CERTIFICATE``
block parsed (by cryptography), the others skipped, none at all an error. The certificates
this server requires are its own, made or read by it: their end is read from their DER
without cryptography's ``x509`` package, about a sixth of the server's start to import,
which the sync at start would otherwise load; any other certificate loads it.
"""

from __future__ import annotations

import binascii
import copy
import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import orjson

from setpoint.cluster.aggregator.frontproxy import AUTHENTICATION_CONFIGMAP
from setpoint.cluster.controllers.queue import Retry, WorkQueue
from setpoint.cluster.controllers.resources import CONFIGMAPS
from setpoint.cluster.registry.options import WriteOptions
from setpoint.cluster.serializer.decode import Decoded
from setpoint.cluster.storage import Event
from setpoint.machinery.cabundle import certificate_blocks
from setpoint.machinery.errors import StatusError
from setpoint.machinery.x509encode import certificate_pem, not_after

if TYPE_CHECKING:
    from setpoint.cluster.registry.rest import REST
    from setpoint.cluster.registry.types import ResourceType
    from setpoint.cluster.storage import Informer

log = logging.getLogger("setpoint.cluster.controllers")

NAMESPACE = "kube-system"
RESYNC_S = 60.0  # "checks are cheap. run once a minute just to be sure we stay in sync"
_LISTS = ("requestheader-username-headers", "requestheader-uid-headers",
          "requestheader-group-headers", "requestheader-extra-headers-prefix",
          "requestheader-allowed-names")
_BUNDLES = ("client-ca-file", "requestheader-client-ca-file")


def _string_list(text: str) -> list[str]:
    if not text:
        return []
    value = orjson.loads(text)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("not a JSON list of strings")
    return value


def _union(lhs: list[str], rhs: list[str]) -> list[str]:
    return list(dict.fromkeys([*lhs, *rhs]))


def _certificates(bundle: str, own: frozenset[bytes]) -> list[tuple[bytes, datetime]]:
    """``cert.ParseCertsPEM``: each certificate's DER and end (ValueError if one does not
    parse, or there is none); those of ``own`` (DER) are this server's, not parsed again."""
    if not bundle:
        return []
    try:
        blocks = certificate_blocks(bundle.encode())
    except binascii.Error as err:
        raise ValueError(f"a certificate block is not base64: {err}") from None
    if not blocks:
        raise ValueError("data does not contain any valid RSA or ECDSA certificates")
    out = []
    for der in blocks:
        if der not in own:
            from cryptography import x509

            out.append((der, x509.load_der_x509_certificate(der).not_valid_after_utc))
        else:
            out.append((der, not_after(der)))
    return out


def _combined_bundle(lhs: str, rhs: str, own: frozenset[bytes]) -> str:
    """``combineCertLists``: both bundles' certificates, expired ones (five minutes' slack)
    and repeats dropped, in order, each written back as ``pem.Encode`` writes its DER."""
    five_minutes_ago = datetime.now(UTC) - timedelta(minutes=5)
    out: dict[bytes, None] = {}
    for der, end in [*_certificates(lhs, own), *_certificates(rhs, own)]:
        if end > five_minutes_ago:
            out[certificate_pem(der)] = None
    return b"".join(out).decode()


def own_certificates(required: dict[str, str]) -> frozenset[bytes]:
    """The DER of the certificates of ``required``'s bundles (this server's own)."""
    return frozenset(der for key in _BUNDLES
                     for der in certificate_blocks(required.get(key, "").encode()))


def combined_data(existing: dict[str, str], required: dict[str, str],
                  own: frozenset[bytes] = frozenset()) -> dict[str, str]:
    """The ConfigMap data clusterauthenticationtrust writes for ``existing`` and
    ``required`` (raises ValueError on data it cannot read); ``own``: the DER of
    certificates known good (:func:`own_certificates` of ``required``)."""
    data: dict[str, str] = {}
    client_ca = _combined_bundle(existing.get("client-ca-file", ""),
                                 required.get("client-ca-file", ""), own)
    if client_ca:
        data["client-ca-file"] = client_ca
    header_ca = _combined_bundle(existing.get("requestheader-client-ca-file", ""),
                                 required.get("requestheader-client-ca-file", ""), own)
    if not header_ca:
        return data  # without a requestheader CA the header lists are not written
    for key in _LISTS:
        merged = _union(_string_list(existing.get(key, "")), _string_list(required.get(key, "")))
        data[key] = orjson.dumps(merged).decode()
    data["requestheader-client-ca-file"] = header_ca
    return data


class ClusterAuthenticationTrust:
    """Keeps ``extension-apiserver-authentication`` carrying this server's trust."""

    def __init__(self, store: Informer, rest: REST, rt: ResourceType,
                 required: dict[str, str]) -> None:
        self._store = store
        self._rest = rest
        self._rt = rt
        self._required = dict(required)
        self._own = own_certificates(self._required)
        self.queue: WorkQueue[str] = WorkQueue("cluster_authentication_trust_controller",
                                               self._sync)
        store.add_listener(self._on_event, (CONFIGMAPS,))

    def __repr__(self) -> str:
        return f"ClusterAuthenticationTrust({NAMESPACE}/{AUTHENTICATION_CONFIGMAP})"

    def sync_now(self) -> None:
        """Write the ConfigMap at once (the server's start), then keep it."""
        self.queue.add_after(AUTHENTICATION_CONFIGMAP, RESYNC_S)
        try:
            self._sync(AUTHENTICATION_CONFIGMAP)
        except Exception as err:  # the queue retries it
            log.warning("extension-apiserver-authentication not written at start: %s", err)
            self.queue.add(AUTHENTICATION_CONFIGMAP)

    def _on_event(self, event: Event) -> None:
        if (event.resource == CONFIGMAPS and event.namespace == NAMESPACE
                and event.name == AUTHENTICATION_CONFIGMAP):
            self.queue.add(AUTHENTICATION_CONFIGMAP)

    def _sync(self, name: str) -> float:
        live = self._store.get(CONFIGMAPS, NAMESPACE, name)
        existing: dict[str, str] = dict((live or {}).get("data") or {})
        try:
            data = combined_data(existing, self._required, self._own)
        except ValueError as err:
            raise Retry(f"{NAMESPACE}/{name}: {err}") from None
        opts = WriteOptions(field_manager="kube-apiserver", field_validation="Ignore")
        try:
            if live is None:
                body = {"metadata": {"name": name, "namespace": NAMESPACE}, "data": data}
                self._rest.create(self._rt, NAMESPACE, Decoded(body), opts)
            elif live.get("data") != data:
                new = copy.deepcopy(live)
                new["data"] = data
                self._rest.update(self._rt, NAMESPACE, name, Decoded(new), opts)
        except StatusError as err:
            if err.code not in (404, 409):
                raise
            raise Retry(str(err)) from None  # it moved on meanwhile: look again
        return RESYNC_S
