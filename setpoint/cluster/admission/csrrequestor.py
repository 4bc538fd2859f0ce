"""The requesting user of a CertificateSigningRequest, as the apiserver records it.

pkg/registry/certificates/certificates/strategy.go ``csrStrategy.PrepareForCreate`` clears any
user information the body carries and writes the request's own: ``spec.username``, ``uid``,
``groups`` and ``extra`` (what ``kubectl get csr`` shows as REQUESTOR and ``kubectl describe
csr`` as *Requesting User*). It runs where the storage's create rules run, after the
mutating webhooks; the server's own writes (no user) are left as sent.
"""

from __future__ import annotations

from setpoint.cluster.registry.admissionpoints import Attributes

_USER_FIELDS = ("username", "uid", "groups", "extra")


def record_requesting_user(attributes: Attributes) -> None:
    """On the create of a CertificateSigningRequest, its spec names the requesting user."""
    rt = attributes.rt
    if attributes.operation != "CREATE" or (rt.group, rt.kind) != (
            "certificates.k8s.io", "CertificateSigningRequest") or attributes.user is None:
        return
    spec = attributes.obj.get("spec")
    if not isinstance(spec, dict):
        return  # (validation refuses it)
    for key in _USER_FIELDS:
        spec.pop(key, None)
    user = attributes.user
    if user.get("username"):
        spec["username"] = user["username"]
    if user.get("uid"):
        spec["uid"] = user["uid"]
    if user.get("groups"):
        spec["groups"] = list(user["groups"])
    if user.get("extra"):
        spec["extra"] = {k: list(v) for k, v in user["extra"].items()}
