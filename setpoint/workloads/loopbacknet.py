"""The loopback addresses of one process-runtime cluster, claimed so that several can run on
one machine at once.

A cluster whose kubelets run real programs puts its pods, its Service ClusterIPs and its
cluster DNS server on this machine's loopback network (127.0.0.0/8), where programs really
listen. Two such clusters with the same addresses would fail to bind each other's, so each
claims a block by its index ``N`` (0 to 31):

- pods: ``127.(32+N).0.0/16``, a /24 for each node;
- Service ClusterIPs: ``127.(64+N).0.0/16`` (the cluster's ``--service-cluster-ip-range``);
- cluster DNS: ``127.53.(N+1).10:53``.

A claim is an abstract unix socket named after the block, bound for as long as the claiming
process lives: the kernel releases it when the process ends, ``kill -9`` included, so no
claim outlives its cluster and no file is left behind. Nothing here listens beyond loopback.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass, field

BLOCKS = 32


class NoFreeLoopbackNetwork(Exception):
    """Every block is claimed by a running process-runtime cluster."""


@dataclass(frozen=True)
class LoopbackNetwork:
    """The addresses of block ``index`` (see the module docstring)."""

    index: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.index < BLOCKS:
            raise ValueError(f"loopback network index {self.index} is not in 0..{BLOCKS - 1}")

    @property
    def pods(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(f"127.{32 + self.index}.0.0/16")

    @property
    def services(self) -> str:
        return f"127.{64 + self.index}.0.0/16"

    @property
    def cluster_dns(self) -> str:
        return f"127.53.{self.index + 1}.10"


@dataclass
class LoopbackClaim:
    """A claimed block; :meth:`release` (or the end of the process) gives it back."""

    network: LoopbackNetwork
    _socket: socket.socket | None = field(default=None, repr=False)

    def release(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def __enter__(self) -> LoopbackNetwork:
        return self.network

    def __exit__(self, *_: object) -> None:
        self.release()


def _claim_name(index: int) -> str:
    return f"\0setpoint-loopback-network-{index}"


def claim_loopback_network() -> LoopbackClaim:
    """The first block no running cluster holds."""
    for index in range(BLOCKS):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(_claim_name(index))
        except OSError:
            sock.close()
            continue
        return LoopbackClaim(LoopbackNetwork(index), sock)
    raise NoFreeLoopbackNetwork(
        f"all {BLOCKS} loopback networks are held by running process-runtime clusters")
