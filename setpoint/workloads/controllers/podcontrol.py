"""What every pod-owning controller shares: pods from a template, readiness, expectations
and the deletion ranking.

Ports of ``pkg/controller/controller_utils.go`` and ``pkg/api/v1/pod``:

- :func:`create_pods` creates pods from a template in slow-start batches (1, 2, 4, 8 …,
  stopping at the first failure) with a controller ``ownerReference`` and ``generateName``
  ``<owner>-``, recording ``SuccessfulCreate``/``FailedCreate`` events on the owner;
- :class:`Expectations` remembers the creations and deletions a controller issued and has
  not yet seen in its cache, so that it never acts twice on a lagging cache;
- :func:`rank_pods_for_deletion` orders pods the way a ReplicaSet picks which to delete.

Adoption and release of orphans are :mod:`.controllerref`'s.

Everything works on the plain dicts the cache holds.
"""

from __future__ import annotations

import asyncio
import functools
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from setpoint.client import Client, Kind, NotFoundError
from setpoint.machinery import labels as label_selectors
from setpoint.machinery.metatime import parse_time
from setpoint.machinery.objects import Obj
from setpoint.runtime import EventRecorder, Manager
from setpoint.runtime._objects import clone, meta, name_of, namespace_of
from setpoint.runtime._ownership import owner_reference

POD = Kind("v1", "Pod")

SLOW_START_INITIAL_BATCH = 1
EXPECTATIONS_TIMEOUT = 300.0
"""Seconds after which unmet expectations are ignored (a watch event may have been lost)."""

Record = Callable[[Obj], None]


# -- time and readiness -----------------------------------------------------------------------

def pod_condition(pod: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    condition: Mapping[str, Any]
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == type_:
            return condition
    return None


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    """``podutil.IsPodReady``: the Ready condition is True."""
    condition = pod_condition(pod, "Ready")
    return condition is not None and condition.get("status") == "True"


def pod_ready_time(pod: Mapping[str, Any]) -> float | None:
    """When a ready pod became ready (None: not ready, or unknown)."""
    condition = pod_condition(pod, "Ready")
    if condition is None or condition.get("status") != "True":
        return None
    return parse_time(condition.get("lastTransitionTime"))


def is_pod_available(pod: Mapping[str, Any], min_ready_seconds: int,
                     now: float | None = None) -> bool:
    """``podutil.IsPodAvailable``: ready for at least ``min_ready_seconds``."""
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    ready_since = pod_ready_time(pod)
    if ready_since is None:
        return False
    return ready_since + min_ready_seconds < (time.time() if now is None else now)


def is_pod_active(pod: Mapping[str, Any]) -> bool:
    """``controller.IsPodActive``: not Succeeded, not Failed, not being deleted."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not meta(pod).get("deletionTimestamp")


def filter_active_pods(pods: Iterable[Obj]) -> list[Obj]:
    return [p for p in pods if is_pod_active(p)]


def pod_key(pod: Mapping[str, Any]) -> str:
    return f"{namespace_of(pod)}/{name_of(pod)}"


# -- selectors --------------------------------------------------------------------------------

@functools.lru_cache(maxsize=4096)
def _parsed_selector(text: bytes) -> label_selectors.Selector:
    return label_selectors.from_label_selector(orjson.loads(text))


def selector_of(label_selector: Mapping[str, Any] | None) -> label_selectors.Selector:
    """``metav1.LabelSelectorAsSelector`` (memoized: the same selectors come back often).
    Raises ``SelectorError`` for an invalid one."""
    if label_selector is None:
        return label_selectors.from_label_selector(None)
    return _parsed_selector(orjson.dumps(label_selector, option=orjson.OPT_SORT_KEYS))


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return meta(obj).get("labels") or {}


# -- pods from a template ---------------------------------------------------------------------

def pods_prefix(owner_name: str) -> str:
    """``getPodsPrefix``: ``<owner>-`` unless that is no valid generateName prefix."""
    prefix = f"{owner_name}-"
    return prefix if len(prefix) <= 253 else owner_name


def pod_from_template(template: Mapping[str, Any], owner: Mapping[str, Any], *,
                      name: str | None = None) -> Obj:
    """``GetPodFromTemplate``: a pod with the template's labels, annotations, finalizers
    and spec, controlled by ``owner`` (blockOwnerDeletion), named ``name`` or generated
    from ``<owner>-``."""
    template_meta = template.get("metadata") or {}
    metadata: Obj = {"namespace": namespace_of(owner)}
    if name:
        metadata["name"] = name
    else:
        metadata["generateName"] = pods_prefix(name_of(owner))
    for key in ("labels", "annotations", "finalizers"):
        if template_meta.get(key):
            metadata[key] = clone({key: template_meta[key]})[key]
    metadata["ownerReferences"] = [owner_reference(owner, controller=True,
                                                   block_owner_deletion=True)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": clone(dict(template.get("spec") or {}))}


async def slow_start_batch(count: int, initial_batch: int,
                           fn: Callable[[], Awaitable[None]]) -> tuple[int, Exception | None]:
    """``slowStartBatch``: call ``fn`` ``count`` times, in concurrent batches of 1, 2, 4 …
    (starting at ``initial_batch``), stopping after the first batch with a failure.
    Returns how many calls succeeded and the first error."""
    remaining = count
    successes = 0
    batch = min(remaining, initial_batch)
    while batch > 0:
        results = await asyncio.gather(*(fn() for _ in range(batch)), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        for error in errors:
            if not isinstance(error, Exception):
                raise error
        successes += batch - len(errors)
        if errors:
            first = errors[0]
            assert isinstance(first, Exception)
            return successes, first
        remaining -= batch
        batch = min(2 * batch, remaining)
    return successes, None


def error_text(error: BaseException) -> str:
    """An error as Go's ``err.Error()`` would read (an API error's message)."""
    message = getattr(error, "message", None)
    return str(message) if message else str(error)


async def create_pod(client: Client, owner: Mapping[str, Any], pod: Obj, *,
                     record: Record | None = None,
                     events: EventRecorder | None = None) -> Obj:
    """``RealPodControl.CreatePods`` for one prepared pod: create it, record the answer in
    the cache and a ``SuccessfulCreate`` (or ``FailedCreate``) event on ``owner``."""
    if not labels_of(pod):
        raise ValueError("unable to create pods, no labels")
    try:
        created: Obj = await client.create(pod, namespace=namespace_of(owner))
    except Exception as exc:
        if events is not None:
            events.warning(owner, "FailedCreate", f"Error creating: {error_text(exc)}")
        raise
    if record is not None:
        record(created)
    if events is not None:
        events.normal(owner, "SuccessfulCreate", f"Created pod: {name_of(created)}")
    return created


async def create_pods(client: Client, owner: Mapping[str, Any], template: Mapping[str, Any],
                      count: int, *, record: Record | None = None,
                      events: EventRecorder | None = None,
                      initial_batch: int = SLOW_START_INITIAL_BATCH,
                      ) -> tuple[int, Exception | None]:
    """Create ``count`` pods from ``template`` owned by ``owner`` in slow-start batches;
    returns how many were created and the error that stopped it (None: all were)."""

    async def one() -> None:
        await create_pod(client, owner, pod_from_template(template, owner), record=record,
                         events=events)

    return await slow_start_batch(count, initial_batch, one)


async def delete_pod(client: Client, owner: Mapping[str, Any], pod: Mapping[str, Any], *,
                     events: EventRecorder | None = None) -> None:
    """``RealPodControl.DeletePod``: delete the pod and record ``SuccessfulDelete`` (or
    ``FailedDelete``) on ``owner``. A pod already gone raises ``NotFoundError``."""
    try:
        await client.delete(POD, name_of(pod), namespace=namespace_of(pod))
    except NotFoundError:
        raise
    except Exception as exc:
        if events is not None:
            events.warning(owner, "FailedDelete", f"Error deleting: {error_text(exc)}")
        raise
    if events is not None:
        events.normal(owner, "SuccessfulDelete", f"Deleted pod: {name_of(pod)}")


# -- expectations -----------------------------------------------------------------------------

@dataclass
class _Expectation:
    add: int = 0
    delete: int = 0
    timestamp: float = field(default_factory=time.monotonic)
    deleting: set[str] = field(default_factory=set)

    def fulfilled(self) -> bool:
        return self.add <= 0 and self.delete <= 0


class Expectations:
    """``UIDTrackingControllerExpectations``: per controller key, how many creations and
    which deletions were issued but not yet observed through the watch.

    A controller acts only when :meth:`satisfied` (nothing pending, or pending for longer
    than :data:`EXPECTATIONS_TIMEOUT`); creations are counted down by
    :meth:`creation_observed`, deletions by :meth:`deletion_observed` with the pod's key.
    """

    def __init__(self, timeout: float = EXPECTATIONS_TIMEOUT,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.timeout = timeout
        self._clock = clock
        self._items: dict[str, _Expectation] = {}

    def __repr__(self) -> str:
        return f"Expectations({len(self._items)} controllers)"

    def satisfied(self, key: str) -> bool:
        item = self._items.get(key)
        if item is None or item.fulfilled():
            return True
        return self._clock() - item.timestamp > self.timeout

    def expect_creations(self, key: str, count: int) -> None:
        self._items[key] = _Expectation(add=count, timestamp=self._clock())

    def expect_deletions(self, key: str, pod_keys: Iterable[str]) -> None:
        keys = set(pod_keys)
        self._items[key] = _Expectation(delete=len(keys), timestamp=self._clock(),
                                        deleting=keys)

    def creation_observed(self, key: str) -> None:
        item = self._items.get(key)
        if item is not None:
            item.add -= 1

    def deletion_observed(self, key: str, pod_key_: str) -> None:
        item = self._items.get(key)
        if item is not None and pod_key_ in item.deleting:
            item.deleting.discard(pod_key_)
            item.delete -= 1

    def pending(self, key: str) -> tuple[int, int]:
        """(creations, deletions) still expected for ``key``."""
        item = self._items.get(key)
        return (0, 0) if item is None else (max(item.add, 0), max(item.delete, 0))

    def forget(self, key: str) -> None:
        """Drop what is expected of a controller that is gone."""
        self._items.pop(key, None)


# -- which pods to delete first ---------------------------------------------------------------

_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}


def _max_restarts(pod: Mapping[str, Any]) -> tuple[int, int]:
    status = pod.get("status") or {}
    regular = max((int(c.get("restartCount") or 0)
                   for c in status.get("containerStatuses") or ()), default=0)
    sidecars = {c.get("name") for c in (pod.get("spec") or {}).get("initContainers") or ()
                if c.get("restartPolicy") == "Always"}
    sidecar = max((int(c.get("restartCount") or 0)
                   for c in status.get("initContainerStatuses") or ()
                   if c.get("name") in sidecars), default=0)
    return regular, sidecar


def _deletion_cost(pod: Mapping[str, Any]) -> int:
    value = (meta(pod).get("annotations") or {}).get("controller.kubernetes.io/pod-deletion-cost")
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0


def _log_rank(t: float, now: float) -> int:
    """``logarithmicRankDiff``'s bucket: log2 of the age in nanoseconds."""
    age = (now - t) * 1e9
    return int(math.log2(age)) if age > 0 else -1


def _time_less(t1: float | None, t2: float | None, uid1: str, uid2: str, now: float) -> bool:
    """Newer first (zero first), compared by logarithmic age buckets as with the
    LogarithmicScaleDown feature, ties broken by uid."""
    if t1 is None or t2 is None:
        return t1 is None and t2 is not None
    r1, r2 = _log_rank(t1, now), _log_rank(t2, now)
    if r1 == r2:
        return uid1 < uid2
    return r1 < r2


class _Ranked(NamedTuple):
    """What ``ActivePodsWithRanks.Less`` reads of one pod, read once per ranking (a sort
    compares each pod with several others, twice per comparison)."""

    pod: Obj
    rank: int
    node: str
    phase: int
    ready: bool
    cost: int
    uid: str
    ready_time: float | None
    ready_rank: int
    """:func:`_log_rank` of ``ready_time`` (0 when None: not read then)."""
    restarts: tuple[int, int]
    created: str


def _ranked(pod: Obj, rank: int, now: float) -> _Ranked:
    m = meta(pod)
    status = pod.get("status") or {}
    ready_time = pod_ready_time(pod)
    return _Ranked(pod, rank, (pod.get("spec") or {}).get("nodeName") or "",
                   _PHASE_ORDINAL.get(status.get("phase") or "", 0), is_pod_ready(pod),
                   _deletion_cost(pod), str(m.get("uid") or ""), ready_time,
                   0 if ready_time is None else _log_rank(ready_time, now),
                   _max_restarts(pod), m.get("creationTimestamp") or "")


def _less(a: _Ranked, b: _Ranked, now: float) -> bool:
    """``ActivePodsWithRanks.Less``: whether ``a`` should be deleted before ``b``."""
    if a.node != b.node and (not a.node or not b.node):
        return not a.node
    if a.phase != b.phase:
        return a.phase < b.phase
    if a.ready != b.ready:
        return not a.ready
    if a.cost != b.cost:
        return a.cost < b.cost
    if a.rank != b.rank:
        return a.rank > b.rank
    if a.ready and b.ready and a.ready_time != b.ready_time:
        if a.ready_time is None or b.ready_time is None:
            return a.ready_time is None
        if a.ready_rank == b.ready_rank:  # _time_less, the buckets read once per pod
            return a.uid < b.uid
        return a.ready_rank < b.ready_rank
    if a.restarts[0] != b.restarts[0]:
        return a.restarts[0] > b.restarts[0]
    if a.restarts[1] != b.restarts[1]:
        return a.restarts[1] > b.restarts[1]
    if a.created != b.created:  # the same text is the same time: parsed only if not
        created_a, created_b = parse_time(a.created or None), parse_time(b.created or None)
        if created_a != created_b:
            return _time_less(created_a, created_b, a.uid, b.uid, now)
    return False


def rank_pods_for_deletion(pods: Sequence[Obj], related: Iterable[Obj] = (),
                           now: float | None = None) -> list[Obj]:
    """``pods`` in the order a ReplicaSet deletes them: unscheduled before scheduled,
    Pending before Unknown before Running, not ready before ready, lower
    ``pod-deletion-cost`` first, pods sharing a node with more active ``related`` pods
    first, then more recently ready, more restarted, newer."""
    on_node: dict[str, int] = {}
    for pod in related:
        if is_pod_active(pod):
            node = (pod.get("spec") or {}).get("nodeName") or ""
            on_node[node] = on_node.get(node, 0) + 1
    moment = time.time() if now is None else now
    ranked = [_ranked(pod, on_node.get((pod.get("spec") or {}).get("nodeName") or "", 0),
                      moment) for pod in pods]

    def compare(x: _Ranked, y: _Ranked) -> int:
        if _less(x, y, moment):
            return -1
        if _less(y, x, moment):
            return 1
        return 0

    ranked.sort(key=functools.cmp_to_key(compare))
    return [r.pod for r in ranked]


# -- events under a component's name ----------------------------------------------------------

def component_recorder(manager: Manager, component: str) -> EventRecorder:
    """An event recorder reporting as ``component`` (``replicaset-controller``: what
    ``kubectl describe`` shows under *From*), started and flushed with the manager."""
    recorder = EventRecorder(manager.client, reporting_controller=component)

    async def run(_: Manager) -> None:
        await recorder.start()
        try:
            await asyncio.Event().wait()
        finally:
            await recorder.stop(timeout=2.0)

    manager.add_runnable(run)
    return recorder
