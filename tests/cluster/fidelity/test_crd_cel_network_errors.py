"""The runtime errors of the Kubernetes CEL IP and CIDR libraries, worded as kube-apiserver 1.32.

apiserver v0.32.0 pkg/cel/library/ip.go ``parseIPAddr`` quotes Go's ``netip.ParseAddr``
error ("IP Address %q parse error during conversion from string: %v"), cidr.go ``parseCIDR``
quotes ``netip.ParsePrefix``'s and ``stringToCIDR`` words it once more; ``ip.isCanonical``
returns the parse error; ``cidr.containsIP(string)`` given an unparsable address answers
``MaybeNoSuchOverloadErr`` of the CIDR: "no such overload". netip's words are Go 1.23's
(net/netip/netip.go ``parseIPv4``, ``parseIPv6``, ``ParsePrefix``). A runtime error is the
rule's Invalid cause "<error> evaluating rule: <message>" (apiextensions-apiserver
pkg/apiserver/schema/cel/validation.go ``validateExpressions``).
"""

from __future__ import annotations

import pytest
import pytest_asyncio

from tests.cluster.conftest import API
from tests.cluster.fidelity.widgets import create_served, widget, widget_crd

pytestmark = pytest.mark.asyncio(loop_scope="module")

PARSE = "network address parse error during conversion from string: "


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def widgets(module_api: API) -> tuple[dict[str, object], str]:
    spec = {"type": "object",
            "properties": {"ip": {"type": "string", "maxLength": 64},
                           "cidr": {"type": "string", "maxLength": 64}},
            "x-kubernetes-validations": [
                {"rule": "!has(self.ip) || ip(self.ip).family() > 0", "message": "ip"},
                {"rule": "!has(self.ip) || ip.isCanonical(self.ip)", "message": "canonical"},
                {"rule": "!has(self.cidr) || cidr(self.cidr).prefixLength() > 0",
                 "message": "cidr"},
                {"rule": "!has(self.ip) || cidr('10.0.0.0/8').containsIP(self.ip)",
                 "message": "contains"}]}
    crd = widget_crd("netip.example.com", spec)
    return crd, await create_served(module_api, crd)


async def _messages(api: API, widgets: tuple[dict[str, object], str], spec: dict[str, str]
                    ) -> list[str]:
    crd, path = widgets
    status, body = await api.post(f"{path}?dryRun=All", widget(crd, "w", spec))
    assert status == 422, body
    return [c["message"].removeprefix('Invalid value: "object": ')
            for c in body["details"]["causes"]]


@pytest.mark.parametrize(("ip", "netip"), [
    ("1.2.3", 'ParseAddr("1.2.3"): IPv4 address too short'),
    ("10.001.0.1", 'ParseAddr("10.001.0.1"): IPv4 field has octet with leading zero'),
    ("1..2.3", 'ParseAddr("1..2.3"): IPv4 field must have at least one digit (at ".2.3")'),
    ("1:2", 'ParseAddr("1:2"): address string too short'),
    ("1::2::3", 'ParseAddr("1::2::3"): multiple :: in address (at ":3")'),
    ("host", 'ParseAddr("host"): unable to parse IP'),
])
async def test_an_address_netip_refuses(module_api: API, widgets: tuple[dict[str, object], str],
                                        ip: str, netip: str) -> None:
    error = f'IP Address "{ip}" parse error during conversion from string: {netip}'
    assert await _messages(module_api, widgets, {"ip": ip}) == [
        f"{error} evaluating rule: ip",
        f"{error} evaluating rule: canonical",
        "'no such overload': call arguments did not match a supported operator, function or "
        "macro signature for rule: contains"]


async def test_zones_and_mapped_addresses_are_refused(
        module_api: API, widgets: tuple[dict[str, object], str]) -> None:
    zoned = 'IP address "fe80::1%eth0" with zone value is not allowed'
    assert (await _messages(module_api, widgets, {"ip": "fe80::1%eth0"}))[:2] == [
        f"{zoned} evaluating rule: ip", f"{zoned} evaluating rule: canonical"]
    mapped = 'IPv4-mapped IPv6 address "::ffff:10.0.0.1" is not allowed'
    assert (await _messages(module_api, widgets, {"ip": "::ffff:10.0.0.1"}))[:2] == [
        f"{mapped} evaluating rule: ip", f"{mapped} evaluating rule: canonical"]


@pytest.mark.parametrize(("cidr", "error"), [
    ("10.0.0.0/33", f'{PARSE}{PARSE}netip.ParsePrefix("10.0.0.0/33"): prefix length out of '
                    "range"),
    ("10.0.0.0/08", f'{PARSE}{PARSE}netip.ParsePrefix("10.0.0.0/08"): bad bits after slash: '
                    '"08"'),
    ("10.0.0.0", f"{PARSE}{PARSE}netip.ParsePrefix(\"10.0.0.0\"): no '/'"),
    ("1.2.3/8", f'{PARSE}{PARSE}netip.ParsePrefix("1.2.3/8"): ParseAddr("1.2.3"): IPv4 '
                "address too short"),
    ("::ffff:10.0.0.0/104", f'{PARSE}IPv4-mapped IPv6 address "::ffff:10.0.0.0/104" is not '
                            "allowed"),
])
async def test_a_prefix_netip_refuses(module_api: API, widgets: tuple[dict[str, object], str],
                                      cidr: str, error: str) -> None:
    assert await _messages(module_api, widgets, {"cidr": cidr}) == [
        f"{error} evaluating rule: cidr"]


async def test_an_uppercase_address_is_not_canonical(
        module_api: API, widgets: tuple[dict[str, object], str]) -> None:
    assert await _messages(module_api, widgets, {"ip": "2001:DB8::1"}) == [
        "canonical", "contains"]
