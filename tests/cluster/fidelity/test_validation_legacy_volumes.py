"""azureDisk and quobyte pod volumes over HTTP, with kube-apiserver 1.32's causes and words.

Sources, pkg/apis/core/validation/validation.go: validateVolumeSource, validateAzureDisk,
validateQuobyteVolumeSource (net.SplitHostPort per comma-separated pair);
pkg/apis/core/v1/defaults.go SetDefaults_AzureDiskVolumeSource (kind Shared, cachingMode
ReadWrite: so an unspecified kind wants a blob URL).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import Kube

PODS = "/api/v1/namespaces/default/pods"
REQ, INV, UNSUP = "FieldValueRequired", "FieldValueInvalid", "FieldValueNotSupported"
AD, QB = "spec.volumes[0].azureDisk", "spec.volumes[0].quobyte"
BLOB = "https://acct.blob.core.windows.net/c/d.vhd"
MANAGED = "/subscriptions/s/resourcegroups/g/providers/microsoft.compute/disks/d"

CASES: list[tuple[str, dict[str, Any], dict[tuple[str, str], int]]] = [
    ("azure-bad-enums", {"azureDisk": {"diskName": "d", "diskURI": BLOB,
                                       "cachingMode": "Sometimes", "kind": "Floppy"}},
     {(f"{AD}.cachingMode", UNSUP): 1, (f"{AD}.kind", UNSUP): 1}),
    # kind defaults to Shared: a managed disk's URI needs kind Managed
    ("azure-default-kind", {"azureDisk": {"diskName": "d", "diskURI": MANAGED}},
     {(f"{AD}.diskURI", UNSUP): 1}),
    ("azure-managed-blob", {"azureDisk": {"diskName": "d", "diskURI": BLOB, "kind": "Managed"}},
     {(f"{AD}.diskURI", UNSUP): 1}),
    # an empty URI is required and, for the defaulted kind, not a blob URL either
    ("azure-empty", {"azureDisk": {"diskName": "", "diskURI": ""}},
     {(f"{AD}.diskName", REQ): 1, (f"{AD}.diskURI", REQ): 1, (f"{AD}.diskURI", UNSUP): 1}),
    ("quobyte-empty", {"quobyte": {"registry": "", "volume": ""}},
     {(f"{QB}.registry", REQ): 1, (f"{QB}.volume", REQ): 1}),
    ("quobyte-tenant", {"quobyte": {"registry": "nope", "volume": "v", "tenant": "t" * 65}},
     {(f"{QB}.tenant", REQ): 1}),
    # each bad pair: no port, too many colons, an unclosed bracket, a stray bracket
    ("quobyte-pairs", {"quobyte": {
        "registry": "a:1,b,::1:2,[::1]:3,[::1:4,a]:5,[::1]", "volume": "v"}},
     {(f"{QB}.registry", INV): 5}),
]


@pytest.mark.parametrize(("case", "volume", "expected"), CASES, ids=[c[0] for c in CASES])
def test_legacy_volume_sources_are_validated(kube: Kube, case: str, volume: dict[str, Any],
                                             expected: dict[tuple[str, str], int]) -> None:
    body = {"metadata": {"name": case}, "spec": {
        "containers": [{"name": "c", "image": "i"}], "volumes": [{"name": "v", **volume}]}}
    assert kube.reject("POST", PODS, body) == Counter(expected)


def test_legacy_volume_messages_are_kubernetes_words(kube: Kube) -> None:
    got = kube.messages("POST", PODS, {"metadata": {"name": "words"}, "spec": {
        "containers": [{"name": "c", "image": "i"}], "volumes": [
            {"name": "a", "azureDisk": {"diskName": "d", "diskURI": BLOB, "kind": "Managed",
                                        "cachingMode": "x"}},
            {"name": "q", "quobyte": {"registry": "r", "volume": "v"}}]}})
    assert got == {
        f"{AD}.cachingMode": ['Unsupported value: "x": supported values: "None", "ReadOnly", '
                              '"ReadWrite"'],
        f"{AD}.diskURI": [f'Unsupported value: "{BLOB}": supported values: '
                          '"/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/'
                          'microsoft.compute/disks/{disk-id}"'],
        "spec.volumes[1].quobyte.registry": [
            'Invalid value: "r": must be a host:port pair or multiple pairs separated by '
            "commas"]}


def test_well_formed_legacy_volumes_are_accepted(kube: Kube) -> None:
    status, body = kube.call("POST", PODS, {"metadata": {"name": "legacy-ok"}, "spec": {
        "containers": [{"name": "c", "image": "i"}], "volumes": [
            {"name": "a", "azureDisk": {"diskName": "d", "diskURI": BLOB}},
            {"name": "m", "azureDisk": {"diskName": "d", "diskURI": MANAGED,
                                        "kind": "Managed", "cachingMode": "None"}},
            {"name": "q", "quobyte": {"registry": "r1:7861,[::1]:7861", "volume": "v"}}]}})
    assert status == 201, body
