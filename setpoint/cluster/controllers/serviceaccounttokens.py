"""The tokens controller: Secrets of type ``kubernetes.io/service-account-token`` get a token.

As kube-controller-manager's ``serviceaccount-token-controller``
(pkg/controller/serviceaccount/tokens_controller.go, 1.32): a token Secret whose
ServiceAccount exists (and is the one its uid annotation names) is filled with ``token`` (a
legacy, secret-based token), ``ca.crt`` and ``namespace``, and annotated with the account's
uid; one whose account is gone is deleted, and so are an account's token Secrets when the
account is deleted.
"""

from __future__ import annotations

import base64
import copy
from typing import TYPE_CHECKING

from setpoint.cluster.controllers.queue import WorkQueue
from setpoint.cluster.controllers.resources import SERVICEACCOUNTS, controller_write
from setpoint.cluster.registry.options import DeleteOptions
from setpoint.cluster.serializer.decode import Decoded
from setpoint.cluster.storage import Event
from setpoint.machinery.errors import StatusError

if TYPE_CHECKING:
    from setpoint.cluster.authentication.tokens import TokenIssuer
    from setpoint.cluster.registry.rest import REST
    from setpoint.cluster.registry.types import ResourceType
    from setpoint.cluster.storage import Informer

SECRETS = "/secrets"
TOKEN_TYPE = "kubernetes.io/service-account-token"
NAME_ANNOTATION = "kubernetes.io/service-account.name"
UID_ANNOTATION = "kubernetes.io/service-account.uid"


def _b64(text: str | bytes) -> str:
    return base64.b64encode(text.encode() if isinstance(text, str) else text).decode()


class TokensController:
    """Fills and cleans up service account token Secrets."""

    def __init__(self, store: Informer, rest: REST, rt: ResourceType, issuer: TokenIssuer,
                 ca_pem: bytes) -> None:
        self._store = store
        self._rest = rest
        self._rt = rt
        self._issuer = issuer
        self._ca = _b64(ca_pem)
        self.queue: WorkQueue[tuple[str, str]] = WorkQueue("serviceaccount-token",
                                                            self._sync)
        store.add_listener(self._on_event, (SECRETS, SERVICEACCOUNTS))

    def start(self) -> None:
        for secret in self._store.list(SECRETS):
            if secret.get("type") == TOKEN_TYPE:
                meta = secret["metadata"]
                self.queue.add((meta.get("namespace", ""), meta["name"]))

    def _on_event(self, event: Event) -> None:
        if event.resource == SECRETS:
            if event.type != "DELETED" and (event.obj or {}).get("type") == TOKEN_TYPE:
                self.queue.add((event.namespace, event.name))
        elif event.type == "DELETED":
            # the account is gone: its token Secrets follow
            for secret in self._store.list(SECRETS):
                meta = secret["metadata"]
                if (secret.get("type") == TOKEN_TYPE
                        and meta.get("namespace") == event.namespace
                        and (meta.get("annotations") or {}).get(NAME_ANNOTATION)
                        == event.name):
                    self.queue.add((event.namespace, meta["name"]))

    def _sync(self, key: tuple[str, str]) -> None:
        namespace, name = key
        secret = self._store.get(SECRETS, namespace, name)
        if secret is None or secret.get("type") != TOKEN_TYPE:
            return
        meta = secret["metadata"]
        if meta.get("deletionTimestamp"):
            return
        annotations = meta.get("annotations") or {}
        account = self._store.get(SERVICEACCOUNTS, namespace,
                                  annotations.get(NAME_ANNOTATION, ""))
        want_uid = annotations.get(UID_ANNOTATION)
        if account is None or (want_uid and want_uid != account["metadata"].get("uid")):
            self._delete(namespace, name, meta.get("uid", ""))
            return
        data = dict(secret.get("data") or {})
        needs_ca, needs_ns = data.get("ca.crt") != self._ca, not data.get("namespace")
        needs_token = not data.get("token")
        uid = account["metadata"].get("uid", "")
        if not (needs_ca or needs_ns or needs_token) and annotations.get(UID_ANNOTATION) == uid:
            return
        new = copy.deepcopy(secret)
        if needs_ca:
            data["ca.crt"] = self._ca
        if needs_ns:
            data["namespace"] = _b64(namespace)
        if needs_token:
            data["token"] = _b64(self._issuer.issue_legacy(
                namespace, account["metadata"]["name"], uid, name))
        new["data"] = data
        new["metadata"].setdefault("annotations", {}).update(
            {NAME_ANNOTATION: account["metadata"]["name"], UID_ANNOTATION: uid})
        try:
            self._rest.update(self._rt, namespace, name, Decoded(new), controller_write())
        except StatusError as err:
            if err.code not in (404, 409):  # gone, or changed: the next event syncs again
                raise

    def _delete(self, namespace: str, name: str, uid: str) -> None:
        try:
            self._rest.delete(self._rt, namespace, name,
                              DeleteOptions(precondition_uid=uid or None))
        except StatusError as err:
            if err.code not in (404, 409):
                raise
