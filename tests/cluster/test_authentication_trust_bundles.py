"""``extension-apiserver-authentication``'s CA bundles combined as clusterauthenticationtrust
combines them, with the server's own certificates read without cryptography's x509 package.

pkg/controlplane/controller/clusterauthenticationtrust/cluster_authentication_trust_controller.go
``combinedClusterAuthenticationInfo``/``combineCertLists``: both bundles' certificates, by
client-go's ``cert.ParseCertsPEM`` (util/cert/pem.go: each ``CERTIFICATE`` block without
headers parsed, other blocks skipped, an unparsable certificate or none at all an error),
expired ones (five minutes' slack) and repeats dropped, each written back by ``pem.Encode``.
The server's own certificates (``own``) have their end read from their DER
(docs/benchmarks.md, Start-up, eighteenth pass); the result must not depend on it.
"""

from __future__ import annotations

import datetime

import pytest

from setpoint.cluster.controllers.clusterauthenticationtrust import (
    combined_data,
    own_certificates,
)
from setpoint.machinery import x509encode


def _ca(name: str, days: float) -> bytes:
    key = x509encode.new_key()
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=10)
    return x509encode.certificate_pem(x509encode.certificate(
        subject=name, issuer=name, public_key=key.public_key(), signing_key=key,
        not_before=now, not_after=now + datetime.timedelta(days=10 + days),
        extensions=x509encode.ca_extensions()))


def test_own_certificates_combine_as_foreign_ones_do() -> None:
    client, header, foreign, expired = _ca("client", 365), _ca("header", 365), \
        _ca("foreign", 30), _ca("expired", -1)
    required = {"client-ca-file": client.decode(), "requestheader-client-ca-file":
                header.decode(), "requestheader-allowed-names": '["front-proxy-client"]'}
    # a user's copy: another CA, an expired one, a key block (skipped) and a repeat
    existing = {"client-ca-file": (foreign + expired + b"-----BEGIN EC PRIVATE KEY-----\n"
                                   b"AAAA\n-----END EC PRIVATE KEY-----\n" + client).decode(),
                "requestheader-client-ca-file": header.decode(),
                "requestheader-allowed-names": '["other"]'}
    own = own_certificates(required)
    assert len(own) == 2
    combined = combined_data(existing, required, own)
    assert combined == combined_data(existing, required)  # every certificate parsed
    assert combined["client-ca-file"] == (foreign + client).decode()
    assert combined["requestheader-client-ca-file"] == header.decode()
    assert combined["requestheader-allowed-names"] == '["other","front-proxy-client"]'


def test_a_foreign_certificate_that_does_not_parse_is_an_error_even_beside_own_ones() -> None:
    client = _ca("client", 365)
    required = {"client-ca-file": client.decode()}
    broken = b"-----BEGIN CERTIFICATE-----\nMIIBAAAA\n-----END CERTIFICATE-----\n"
    with pytest.raises(ValueError):
        combined_data({"client-ca-file": (client + broken).decode()}, required,
                      own_certificates(required))
    with pytest.raises(ValueError):  # a bundle of no certificate at all
        combined_data({"client-ca-file": "not PEM"}, required, own_certificates(required))
