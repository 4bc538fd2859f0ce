"""Leader election over a ``coordination.k8s.io/v1`` Lease, as client-go does it.

Candidates race to write their identity into the Lease. The holder renews it every
``retry_period``; if it cannot renew for ``renew_deadline`` it gives up leadership. The
others keep checking every ``retry_period`` and take over once the lease has not changed
for ``lease_duration``, measured on their own clock from when they last saw it change (so
clocks need not agree). On a clean shutdown the leader releases the lease by clearing
``holderIdentity``, so a successor takes over at once instead of waiting for it to expire.
Defaults are client-go's: 15 s lease, 10 s renew deadline, 2 s retry.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from setpoint.client import ApiError, Client, ConflictError, Kind, NotFoundError
from setpoint.machinery.metatime import micro_time

log = logging.getLogger(__name__)

LEASE = Kind("coordination.k8s.io/v1", "Lease")


def default_identity() -> str:
    """``<hostname>_<random>``, unique per process as controller-runtime's default is."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass
class LeaderElectionConfig:
    """Where the lease lives and how patient the candidates are."""

    name: str
    namespace: str = "default"
    identity: str = field(default_factory=default_identity)
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True

    def __post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline > self.retry_period > 0:
            raise ValueError("leader election needs lease_duration > renew_deadline > "
                             "retry_period > 0")


class LeaderElectionLost(RuntimeError):
    """This process was the leader and could not renew its lease in time."""


class LeaderElector:
    """Acquires, renews and releases one lease for one identity."""

    def __init__(self, client: Client, config: LeaderElectionConfig, *,
                 on_change: Callable[[bool], None] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 record_event: Callable[[dict[str, Any], str], None] | None = None) -> None:
        self.client = client
        self._record_event = record_event
        """Records a ``LeaderElection`` event about the Lease (client-go's
        ``LeaseLock.RecordEvent``): ``record_event(lease, message)``."""
        self.config = config
        self._on_change = on_change
        self._clock = clock
        self._lease: dict[str, Any] | None = None
        self._observed_spec: dict[str, Any] | None = None
        self._observed_at = 0.0
        self._renewed_at = 0.0
        self.elected = asyncio.Event()
        self.leader = False
        self._checking = asyncio.Lock()

    def __repr__(self) -> str:
        return (f"LeaderElector({self.config.namespace}/{self.config.name}, "
                f"identity={self.config.identity!r}, leader={self.leader})")

    @property
    def holder(self) -> str | None:
        """The holder last observed (None when unknown or released)."""
        spec = self._observed_spec or {}
        return spec.get("holderIdentity") or None

    async def run(self) -> None:
        """Acquire the lease, then keep renewing it; raises :class:`LeaderElectionLost`
        when a renewal misses the deadline. Cancelling releases the lease (when held and
        ``release_on_cancel``) within ``renew_deadline``, as client-go's ``release`` bounds
        its request: an API that does not answer must not hold up the shutdown. A second
        cancellation abandons the release (the lease then expires on its own)."""
        try:
            await self._acquire()
            await self._renew()
        except asyncio.CancelledError:
            if self.leader and self.config.release_on_cancel:
                try:
                    await asyncio.wait_for(self.release(), self.config.renew_deadline)
                except TimeoutError:
                    log.warning("lease_release_timeout lease=%s/%s identity=%s",
                                self.config.namespace, self.config.name,
                                self.config.identity)
            raise
        finally:
            self._set_leader(False)

    async def _acquire(self) -> None:
        while True:
            if await self.try_acquire_or_renew():
                self._renewed_at = self._clock()
                self._set_leader(True)
                log.info("leader_elected lease=%s/%s identity=%s", self.config.namespace,
                         self.config.name, self.config.identity)
                if self._record_event is not None and self._lease is not None:
                    # leaderelection.go acquire: RecordEvent("became leader"), whose
                    # message LeaseLock prefixes with the identity
                    self._record_event(self._lease,
                                       f"{self.config.identity} became leader")
                return
            await asyncio.sleep(self.config.retry_period * (1.0 + 0.2 * random.random()))

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(self.config.retry_period)
            if await self.try_acquire_or_renew():
                self._renewed_at = self._clock()
                continue
            if self._clock() - self._renewed_at >= self.config.renew_deadline:
                log.error("leader_election_lost lease=%s/%s identity=%s",
                          self.config.namespace, self.config.name, self.config.identity)
                raise LeaderElectionLost(
                    f"failed to renew lease {self.config.namespace}/{self.config.name}")

    async def check_leading(self) -> None:
        """Before a write: raise :class:`LeaderElectionLost` unless this process still
        leads. Within ``renew_deadline`` of the last renewal that is certain without a
        request (a successor waits ``lease_duration``, which is longer, from the renewal it
        saw). Past it (the process was paused, or renewals fail) the lease is renewed
        first, and a leader that cannot renew stops leading, as client-go's elector stops
        once ``renewDeadline`` passes: a paused leader does not act on stale leadership."""
        if self.leader and self._clock() - self._renewed_at < self.config.renew_deadline:
            return
        async with self._checking:  # one lease request for every write waiting on it
            if self.leader and self._clock() - self._renewed_at < self.config.renew_deadline:
                return
            if self.leader and await self.try_acquire_or_renew():
                self._renewed_at = self._clock()
                return
            if self.leader:
                log.error("leader_election_lost lease=%s/%s identity=%s reason=stale",
                          self.config.namespace, self.config.name, self.config.identity)
                self._set_leader(False)
        raise LeaderElectionLost(f"not the holder of lease {self.config.namespace}/"
                                 f"{self.config.name}: refusing to write")

    async def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this identity holds the lease afterwards."""
        cfg = self.config
        now = self._clock()
        if self.leader and self._lease is not None:
            # fast path: the leader updates the lease it wrote last, without reading it
            try:
                self._store(await self.client.update(self._renewed(self._lease)))
                return True
            except ApiError as exc:
                log.debug("lease_fast_renew_failed error=%r", exc)
            except Exception as exc:
                log.warning("lease_renew_failed error=%r", exc)
                return False
        try:
            lease = await self.client.get(LEASE, cfg.name, namespace=cfg.namespace)
        except NotFoundError:
            return await self._create()
        except Exception as exc:
            log.warning("lease_read_failed error=%r", exc)
            return False
        spec = lease.get("spec") or {}
        if spec != self._observed_spec:
            # observed when the answer came, not when it was asked for (client-go's
            # setObservedRecord after Lock.Get): a renewal that landed while the read was
            # in flight must count its whole lease duration from here
            self._observed_spec = spec
            self._observed_at = self._clock()
        holder = spec.get("holderIdentity")
        duration = float(spec.get("leaseDurationSeconds") or cfg.lease_duration)
        if holder and holder != cfg.identity and self._observed_at + duration > now:
            return False
        try:
            self._store(await self.client.update(self._renewed(lease)))
        except Exception as exc:
            log.debug("lease_update_failed error=%r", exc)
            return False
        return True

    async def _create(self) -> bool:
        cfg = self.config
        wall = time.time()
        lease = {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": cfg.name, "namespace": cfg.namespace},
            "spec": {"holderIdentity": cfg.identity,
                     "leaseDurationSeconds": math.ceil(cfg.lease_duration),
                     "acquireTime": micro_time(wall), "renewTime": micro_time(wall),
                     "leaseTransitions": 0},
        }
        try:
            self._store(await self.client.create(lease))
        except Exception as exc:
            log.debug("lease_create_failed error=%r", exc)
            return False
        return True

    def _renewed(self, lease: dict[str, Any]) -> dict[str, Any]:
        cfg = self.config
        spec = dict(lease.get("spec") or {})
        wall = micro_time(time.time())
        if spec.get("holderIdentity") != cfg.identity:
            spec["acquireTime"] = wall
            if spec.get("holderIdentity"):
                spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
            else:
                spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0)
        spec["holderIdentity"] = cfg.identity
        spec["leaseDurationSeconds"] = math.ceil(cfg.lease_duration)
        spec["renewTime"] = wall
        return {**lease, "spec": spec}

    def _store(self, lease: dict[str, Any]) -> None:
        self._lease = lease
        self._observed_spec = lease.get("spec") or {}
        self._observed_at = self._clock()

    async def release(self) -> bool:
        """Give the lease up (clear ``holderIdentity``, as client-go does) when held;
        returns whether it was released."""
        if not self.leader or self._lease is None:
            return False
        try:
            try:
                await self._clear_holder(self._lease)
            except ConflictError:
                # our own renewal, cut short by the stop, landed after we last read the
                # lease: read it again, and release it only if it is still ours
                current = await self.client.get(LEASE, self.config.name,
                                                namespace=self.config.namespace)
                if (current.get("spec") or {}).get("holderIdentity") != self.config.identity:
                    return False
                await self._clear_holder(current)
        except Exception as exc:
            log.warning("lease_release_failed error=%s", exc)
            return False
        finally:
            self._set_leader(False)
        log.info("leader_released lease=%s/%s identity=%s", self.config.namespace,
                 self.config.name, self.config.identity)
        return True

    async def _clear_holder(self, lease: dict[str, Any]) -> None:
        spec = dict(lease.get("spec") or {})
        wall = micro_time(time.time())
        spec.update(holderIdentity="", leaseDurationSeconds=1, renewTime=wall,
                    acquireTime=wall)
        self._store(await self.client.update({**lease, "spec": spec}))

    def _set_leader(self, leader: bool) -> None:
        if leader == self.leader:
            return
        self.leader = leader
        if leader:
            self.elected.set()
        else:
            self.elected.clear()
        if self._on_change is not None:
            self._on_change(leader)
