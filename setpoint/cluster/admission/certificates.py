"""The certificates admission plugins: CertificateApproval, CertificateSigning and
CertificateSubjectRestriction (k8s.io/kubernetes plugin/pkg/admission/certificates).

Approving a CertificateSigningRequest (its ``approval`` subresource) takes ``approve``, and
changing ``status.certificate`` or the conditions through ``status`` takes ``sign``, on the
``signers`` resource of ``certificates.k8s.io`` named by the request's signerName or by
``<domain>/*`` (certificates/util.go ``IsAuthorizedForSignerName``); both judge the stored
object, so a write cannot change the signer it is judged by. A request to
``kubernetes.io/kube-apiserver-client`` may not ask for the ``system:masters`` group
(subjectrestriction/admission.go). The server's own writes (no user: the signer) pass.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from setpoint.cluster.authorization.rbac import Attributes as AuthorizationAttributes
from setpoint.cluster.registry.admissionpoints import Attributes
from setpoint.machinery import errors
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.authorization.rbac import Authorizer

GROUP = "certificates.k8s.io"
RESOURCE = "certificatesigningrequests"
KUBE_APISERVER_CLIENT = "kubernetes.io/kube-apiserver-client"
MASTERS = "system:masters"


def _is_csr(attributes: Attributes) -> bool:
    return (attributes.rt.group, attributes.rt.resource) == (GROUP, RESOURCE)


def _forbidden(attributes: Attributes, reason: str) -> errors.StatusError:
    # admission.NewForbidden: the resource and the object's name
    name = (attributes.obj.get("metadata") or {}).get("name") or ""
    return errors.forbidden(RESOURCE, name, reason, GROUP)


def _signer_name(obj: Obj) -> str:
    spec = obj.get("spec")
    return str(spec.get("signerName") or "") if isinstance(spec, dict) else ""


class SignerAuthorization:
    """``IsAuthorizedForSignerName``: the verb on the signer, else on its domain's ``/*``."""

    def __init__(self, authorizer: Authorizer) -> None:
        self._authorizer = authorizer

    def allowed(self, user: Obj, verb: str, signer_name: str) -> bool:
        for name in (signer_name, signer_name.split("/")[0] + "/*"):
            attrs = AuthorizationAttributes(verb, resource="signers", group=GROUP,
                                            version="*", name=name)
            if self._authorizer.decide(user, attrs)[0]:
                return True
        return False


class CertificateApproval(SignerAuthorization):
    """approval/admission.go: an ``approval`` update needs ``approve`` on the signer."""

    def __call__(self, attributes: Attributes) -> None:
        if attributes.subresource != "approval" or not _is_csr(attributes) \
                or attributes.user is None or attributes.old is None:
            return
        signer = _signer_name(attributes.old)
        if not self.allowed(attributes.user, "approve", signer):
            raise _forbidden(attributes, "user not permitted to approve requests with "
                                         f'signerName "{signer}"')


class CertificateSigning(SignerAuthorization):
    """signing/admission.go: a ``status`` update that changes ``status.certificate`` or
    ``status.conditions`` (a ``Failed`` one is the signer's to add) needs ``sign`` on the
    signer."""

    def __call__(self, attributes: Attributes) -> None:
        if attributes.subresource != "status" or not _is_csr(attributes) \
                or attributes.user is None or attributes.old is None:
            return
        old_status = attributes.old.get("status") or {}
        new_status = attributes.obj.get("status") or {}
        # only a changed certificate or conditions (Semantic.DeepEqual: none and [] alike)
        if old_status.get("certificate") == new_status.get("certificate") and \
                (old_status.get("conditions") or []) == (new_status.get("conditions") or []):
            return
        signer = _signer_name(attributes.old)
        if not self.allowed(attributes.user, "sign", signer):
            raise _forbidden(attributes, "user not permitted to sign requests with "
                                         f'signerName "{signer}"')


def certificate_subject_restriction(attributes: Attributes) -> None:
    """subjectrestriction/admission.go: no ``system:masters`` from the client signer."""
    if attributes.operation != "CREATE" or attributes.subresource or not _is_csr(attributes):
        return
    signer = _signer_name(attributes.obj)
    if signer != KUBE_APISERVER_CLIENT:
        return
    # with cryptography's x509 package: loaded by the first such request, not at start
    from cryptography.x509.oid import NameOID

    from setpoint.cluster.registry.validation_certificates import parse_csr

    try:
        request = parse_csr(attributes.obj["spec"]["request"])
    except ValueError as err:
        raise _forbidden(attributes, f"failed to parse CSR: {err}") from None
    organizations = [a.value for a in request.subject.get_attributes_for_oid(
        NameOID.ORGANIZATION_NAME)]
    if MASTERS in organizations:
        raise _forbidden(attributes, f"use of {signer} signer with {MASTERS} group is not "
                                     "allowed")
