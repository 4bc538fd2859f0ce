"""Pod IP addresses, allocated per node as the CNI's host-local IPAM does.

A node's pods get addresses from the node's ``spec.podCIDR`` when it has one, else from a
/24 of the loopback range reserved for that node (``127.16.0.0/24`` for the first node seen,
``127.16.1.0/24`` for the next …). The addresses are only data in the simulation, but staying
in 127/8 keeps them reachable on this machine for a runtime that runs real processes, each
pod on its own loopback address. ``.1`` is the node's bridge and never given to a pod.
Addresses are handed out next-fit (as host-local does), so a freed address is not reused at
once.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

LOOPBACK_BLOCKS = ipaddress.IPv4Network("127.16.0.0/12")
BLOCK_PREFIX = 24


class AddressesExhausted(Exception):
    """No free address is left in a node's range."""


@dataclass
class _Range:
    network: ipaddress.IPv4Network
    used: dict[str, str] = field(default_factory=dict)  # ip -> pod uid
    cursor: int = 1  # offset of the last address handed out

    def host_offsets(self) -> range:
        # skip the network address, .1 (the bridge) and the broadcast address
        return range(2, self.network.num_addresses - 1)


class AddressAllocator:
    """Pod IPs per node (see the module docstring)."""

    def __init__(self, blocks: ipaddress.IPv4Network = LOOPBACK_BLOCKS) -> None:
        self.blocks = blocks
        """Where nodes without a podCIDR get their /24s (a process-runtime cluster's own
        loopback network, :mod:`setpoint.workloads.loopbacknet`)."""
        self._ranges: dict[str, _Range] = {}
        self._blocks: dict[int, str] = {}  # loopback block index -> node
        self._by_pod: dict[str, tuple[str, str]] = {}  # pod uid -> (node, ip)

    def __repr__(self) -> str:
        return f"AddressAllocator(nodes={len(self._ranges)}, pods={len(self._by_pod)})"

    def range_for(self, node: str, pod_cidr: str | None = None) -> ipaddress.IPv4Network:
        """The node's pod range (created on first use)."""
        return self._range(node, pod_cidr).network

    def bridge_address(self, node: str, pod_cidr: str | None = None) -> str:
        """The node's own address in its pod range (``.1``)."""
        return str(self._range(node, pod_cidr).network.network_address + 1)

    def allocate(self, node: str, pod_uid: str, pod_cidr: str | None = None) -> str:
        """An address for the pod (the same one when asked again); raises
        :class:`AddressesExhausted` when the range is full."""
        held = self._by_pod.get(pod_uid)
        if held is not None and held[0] == node:
            return held[1]
        rng = self._range(node, pod_cidr)
        offsets = rng.host_offsets()
        if not offsets:
            raise AddressesExhausted(f"no addresses in {rng.network}")
        start = rng.cursor
        span = len(offsets)
        for step in range(1, span + 1):
            offset = offsets.start + (start - offsets.start + step) % span
            ip = str(rng.network.network_address + offset)
            if ip not in rng.used:
                rng.used[ip] = pod_uid
                rng.cursor = offset
                self._by_pod[pod_uid] = (node, ip)
                return ip
        raise AddressesExhausted(
            f"failed to allocate for range 0: no IP addresses available in range set: "
            f"{rng.network[2]}-{rng.network[-2]}")

    def reserve(self, node: str, pod_uid: str, ip: str, pod_cidr: str | None = None) -> None:
        """Record an address a pod already holds (after a kubelet restart); a loopback
        block seen this way is given to that node."""
        try:
            address = ipaddress.ip_address(ip)
        except ValueError:
            return
        if node not in self._ranges and not pod_cidr and address in self.blocks:
            index = (int(address) - int(self.blocks.network_address)) >> (32 - BLOCK_PREFIX)
            if index not in self._blocks:
                self._blocks[index] = node
                self._ranges[node] = _Range(self._block(index))
        rng = self._range(node, pod_cidr)
        if address in rng.network:
            rng.used[ip] = pod_uid
            self._by_pod[pod_uid] = (node, ip)
            # continue after the highest address seen, as host-local resumes after its last
            rng.cursor = max(rng.cursor, int(address) - int(rng.network.network_address))

    def release(self, pod_uid: str) -> None:
        """Free the pod's address (its sandbox is gone)."""
        held = self._by_pod.pop(pod_uid, None)
        if held is None:
            return
        rng = self._ranges.get(held[0])
        if rng is not None and rng.used.get(held[1]) == pod_uid:
            del rng.used[held[1]]

    def address_of(self, pod_uid: str) -> str | None:
        held = self._by_pod.get(pod_uid)
        return held[1] if held else None

    # -- internals ---------------------------------------------------------------------

    def _range(self, node: str, pod_cidr: str | None) -> _Range:
        rng = self._ranges.get(node)
        if rng is not None:
            return rng
        network = _parse_cidr(pod_cidr)
        if network is None:
            index = next(i for i in range(len(self._blocks) + 1) if i not in self._blocks)
            self._blocks[index] = node
            network = self._block(index)
        rng = self._ranges[node] = _Range(network)
        return rng

    def _block(self, index: int) -> ipaddress.IPv4Network:
        base = int(self.blocks.network_address) + (index << (32 - BLOCK_PREFIX))
        if base >= int(self.blocks.broadcast_address):
            raise AddressesExhausted("no loopback block left for another node")
        return ipaddress.IPv4Network((base, BLOCK_PREFIX))


def _parse_cidr(cidr: str | None) -> ipaddress.IPv4Network | None:
    if not cidr:
        return None
    try:
        network = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return None
    return network if isinstance(network, ipaddress.IPv4Network) else None
