"""The manager's settings, in one dataclass (kopf-style: one place to look)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from setpoint.machinery.objects import Obj


@dataclass(frozen=True)
class CacheScope:
    """What the cache keeps of one kind: a narrower selection than the manager's, and a
    transform applied before storing (None: the manager's default)."""

    label_selector: str | None = None
    field_selector: str | None = None
    transform: Callable[[Obj], Obj] | None = None


@dataclass
class ManagerSettings:
    """Everything a :class:`~setpoint.runtime._manager.Manager` can be told.

    ``name`` is the field manager of every write and the events' reporting controller.
    ``namespace`` limits the cache (and so every controller) to one namespace; None
    watches all. ``http_port`` serves ``/healthz``, ``/readyz`` and ``/metrics`` (0: any
    free port, None: no server). Leader election is off unless ``leader_election``;
    the lease is ``leader_election_id`` (default ``<name>-leader``) in
    ``leader_election_namespace`` (default: the client's namespace).

    Webhooks, when the manager has any, are served over HTTPS on ``webhook_host`` and
    ``webhook_port`` (0: any free port) with ``tls.crt``/``tls.key`` from
    ``webhook_cert_dir`` (default ``<tmp>/k8s-webhook-server/serving-certs``, as
    controller-runtime); ``webhook_generate_certs`` makes a self-signed certificate when
    those files are missing (for tests and local runs).
    """

    name: str = "setpoint"
    namespace: str | None = None
    max_concurrent_reconciles: int = 16
    leader_election: bool = False
    leader_election_id: str | None = None
    leader_election_namespace: str | None = None
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    leader_election_release_on_cancel: bool = True
    """Clear the lease's holder on a graceful stop so a successor takes over at once
    (controller-runtime's ``LeaderElectionReleaseOnCancel``, off by default there because
    a Go binary may keep running after ``Start`` returns; here the manager releases only
    after its workers have stopped). False: a successor waits ``lease_duration``."""
    identity: str | None = None
    http_host: str = "127.0.0.1"  # a pod needs 0.0.0.0: `setpoint run --http-address`
    http_port: int | None = None
    graceful_shutdown_timeout: float = 30.0
    cache_sync_timeout: float = 120.0
    drop_managed_fields: bool = True
    cache_scopes: Mapping[Any, CacheScope] = field(default_factory=dict)
    record_events: bool = True
    kubeconfig: str | None = None
    context: str | None = None
    client_qps: float = -1.0
    """Client-side rate limit of the client the manager makes, in requests a second
    (client-go's ``rest.Config.QPS``): negative (the default) turns it off, as
    controller-runtime does, leaving fairness to the server's API Priority and Fairness;
    0 takes client-go's 5. Not used when the manager is handed a client."""
    client_burst: int = 0
    """The requests that may go at once before ``client_qps`` spaces them
    (``rest.Config.Burst``; 0: client-go's 10)."""
    webhook_host: str = "127.0.0.1"  # a pod needs 0.0.0.0, as for http_host
    webhook_port: int = 9443
    webhook_cert_dir: str | None = None
    webhook_generate_certs: bool = False
    collector_thresholds: tuple[int, int, int] | None = (10_000, 50, 10)
    """The cyclic garbage collector's thresholds while :meth:`Manager.run` runs the process
    (put back when it returns), applied only over Python's own (700, 10, 10); None leaves
    the collector alone. A reconcile's objects live for its requests, often longer than
    700 allocations apart with 16 reconciles in flight: at Python's thresholds they were
    promoted and the oldest generation's collections walked every cached object
    (docs/benchmarks.md, Operators, eighth pass). Cyclic garbage is still collected."""
