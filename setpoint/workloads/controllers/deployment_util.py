"""The Deployment controller's arithmetic, on plain dicts: a port of
``pkg/controller/deployment/util`` (revisions and annotations, surge and unavailability,
proportions, conditions, new and old ReplicaSets) and of ``ComputeHash``.

Nothing here talks to the API server.
"""

from __future__ import annotations

import functools
import math
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import orjson

from setpoint.machinery.metatime import meta_time, parse_time
from setpoint.machinery.objects import Obj
from setpoint.runtime._objects import clone, meta, name_of

REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
DEPRECATED_ROLLBACK_TO = "deprecated.deployment.rollback.to"
POD_TEMPLATE_HASH = "pod-template-hash"
MAX_REVISION_HISTORY_CHARS = 2000

ANNOTATIONS_TO_SKIP = frozenset({LAST_APPLIED, REVISION, REVISION_HISTORY, DESIRED_REPLICAS,
                                 MAX_REPLICAS, DEPRECATED_ROLLBACK_TO})
"""Deployment annotations that are never copied to its ReplicaSets (nor back by a rollback)."""

# condition types and reasons
AVAILABLE, PROGRESSING, REPLICA_FAILURE = "Available", "Progressing", "ReplicaFailure"
REPLICA_SET_UPDATED = "ReplicaSetUpdated"
FAILED_RS_CREATE = "ReplicaSetCreateError"
NEW_REPLICA_SET = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"
MINIMUM_REPLICAS_AVAILABLE = "MinimumReplicasAvailable"
MINIMUM_REPLICAS_UNAVAILABLE = "MinimumReplicasUnavailable"

MAX_INT32 = 2**31 - 1


# -- the pod-template-hash ---------------------------------------------------------------------

_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"


def safe_encode(text: str) -> str:
    """``rand.SafeEncodeString``: map each character onto letters and digits that cannot
    spell words."""
    return "".join(_ALPHANUMS[ord(ch) % len(_ALPHANUMS)] for ch in text)


def fnv32a(data: bytes, seed: int = 0x811C9DC5) -> int:
    h = seed
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def compute_hash(template: Mapping[str, Any], collision_count: int | None) -> str:
    """``controller.ComputeHash``: FNV-32a over the template, then the collision count as
    8 little-endian bytes, printed in decimal and safe-encoded.

    Kubernetes hashes Go's deep print of the typed template; here the template is hashed
    as canonical JSON (sorted keys), so the hash is stable for equal templates but not the
    one a real cluster would compute.
    """
    h = fnv32a(orjson.dumps(template, option=orjson.OPT_SORT_KEYS))
    if collision_count is not None:
        h = fnv32a(struct.pack("<I", collision_count & 0xFFFFFFFF) + b"\0\0\0\0", h)
    return safe_encode(str(h))


# -- spec accessors ----------------------------------------------------------------------------

def spec_replicas(obj: Mapping[str, Any]) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def status_int(obj: Mapping[str, Any], field: str) -> int:
    return int((obj.get("status") or {}).get(field) or 0)


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return meta(obj).get("annotations") or {}


def strategy(d: Mapping[str, Any]) -> Mapping[str, Any]:
    return (d.get("spec") or {}).get("strategy") or {}


def is_rolling_update(d: Mapping[str, Any]) -> bool:
    return (strategy(d).get("type") or "RollingUpdate") == "RollingUpdate"


def scaled_value(value: int | str | None, total: int, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an int as it is, ``"25%"`` of
    ``total`` rounded up or down."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    if not value.endswith("%"):
        raise ValueError(f"invalid value for IntOrString: invalid type: string is not a "
                         f"percentage: {value!r}")
    percent = int(value[:-1])
    scaled = percent * total / 100
    return math.ceil(scaled) if round_up else math.floor(scaled)


def resolve_fenceposts(max_surge: int | str | None, max_unavailable: int | str | None,
                       desired: int) -> tuple[int, int]:
    """``ResolveFenceposts``: surge rounds up, unavailability down; both zero means one
    may be unavailable (surge may be impossible under quota)."""
    surge = scaled_value(max_surge if max_surge is not None else 0, desired, True)
    unavailable = scaled_value(max_unavailable if max_unavailable is not None else 0,
                               desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def _rolling(d: Mapping[str, Any]) -> Mapping[str, Any]:
    return strategy(d).get("rollingUpdate") or {"maxSurge": "25%", "maxUnavailable": "25%"}


def max_surge(d: Mapping[str, Any]) -> int:
    if not is_rolling_update(d):
        return 0
    rolling = _rolling(d)
    return resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"),
                              spec_replicas(d))[0]


def max_unavailable(d: Mapping[str, Any]) -> int:
    replicas = spec_replicas(d)
    if not is_rolling_update(d) or replicas == 0:
        return 0
    rolling = _rolling(d)
    unavailable = resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"),
                                     replicas)[1]
    return min(unavailable, replicas)


def has_progress_deadline(d: Mapping[str, Any]) -> bool:
    value = (d.get("spec") or {}).get("progressDeadlineSeconds")
    return value is not None and int(value) != MAX_INT32


def has_revision_history_limit(d: Mapping[str, Any]) -> bool:
    value = (d.get("spec") or {}).get("revisionHistoryLimit")
    return value is not None and int(value) != MAX_INT32


# -- revisions and annotations -----------------------------------------------------------------

def revision(obj: Mapping[str, Any]) -> int | None:
    """The revision annotation (0 when absent, None when it is no integer)."""
    value = annotations_of(obj).get(REVISION)
    if value is None:
        return 0
    try:
        return int(value)
    except ValueError:
        return None


def max_revision(rss: Iterable[Mapping[str, Any]]) -> int:
    return max((r for r in (revision(rs) for rs in rss) if r is not None), default=0)


def set_deployment_revision(d: Obj, value: str) -> bool:
    """Set the Deployment's revision annotation; returns whether it changed."""
    notes = d.setdefault("metadata", {}).setdefault("annotations", {})
    if notes.get(REVISION) != value:
        notes[REVISION] = value
        return True
    return False


def copy_deployment_annotations(d: Mapping[str, Any], rs: Obj) -> bool:
    """Copy the Deployment's annotations (but the skipped ones) onto ``rs``."""
    changed = False
    notes = rs.setdefault("metadata", {}).setdefault("annotations", {})
    for key, value in annotations_of(d).items():
        if key in ANNOTATIONS_TO_SKIP or notes.get(key) == value:
            continue
        notes[key] = value
        changed = True
    return changed


def set_replicas_annotations(rs: Obj, desired: int, maximum: int) -> bool:
    notes = rs.setdefault("metadata", {}).setdefault("annotations", {})
    changed = False
    for key, value in ((DESIRED_REPLICAS, str(desired)), (MAX_REPLICAS, str(maximum))):
        if notes.get(key) != value:
            notes[key] = value
            changed = True
    return changed


def replicas_annotations_need_update(rs: Mapping[str, Any], desired: int, maximum: int) -> bool:
    notes = annotations_of(rs)
    return notes.get(DESIRED_REPLICAS) != str(desired) or notes.get(MAX_REPLICAS) != str(maximum)


def set_new_replica_set_annotations(d: Mapping[str, Any], rs: Obj, new_revision: str,
                                    exists: bool) -> bool:
    """``SetNewReplicaSetAnnotations``: copy the Deployment's annotations, raise the
    revision to ``new_revision`` (keeping earlier ones in ``revision-history`` when a
    rollback reuses this ReplicaSet) and, for a ReplicaSet about to be created, the
    replica annotations. Returns whether anything changed."""
    changed = copy_deployment_annotations(d, rs)
    notes = rs["metadata"]["annotations"]
    old_revision = notes.get(REVISION)
    try:
        old_int = int(old_revision) if old_revision else 0
        new_int = int(new_revision)
    except ValueError:
        return False
    if old_int < new_int:
        notes[REVISION] = new_revision
        changed = True
        if old_revision is not None:
            history = notes.get(REVISION_HISTORY) or ""
            olds = history.split(",") if history else []
            total = len(history) + len(old_revision) + 1
            start = 0
            while total > MAX_REVISION_HISTORY_CHARS and start < len(olds):
                total -= len(olds[start]) + 1
                start += 1
            if not olds:
                notes[REVISION_HISTORY] = old_revision
            elif total <= MAX_REVISION_HISTORY_CHARS:
                notes[REVISION_HISTORY] = ",".join([*olds[start:], old_revision])
    if not exists and set_replicas_annotations(rs, spec_replicas(d),
                                               spec_replicas(d) + max_surge(d)):
        changed = True
    return changed


def _int_annotation(rs: Mapping[str, Any], key: str) -> int | None:
    value = annotations_of(rs).get(key)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def desired_replicas_annotation(rs: Mapping[str, Any]) -> int | None:
    return _int_annotation(rs, DESIRED_REPLICAS)


# -- templates, new and old ReplicaSets --------------------------------------------------------

def _semantic(value: Any) -> Any:
    """A value with empty maps, lists and nulls dropped (Go's semantic equality treats
    them as unset)."""
    if isinstance(value, dict):
        out = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def template_without_hash(template: Mapping[str, Any]) -> Obj:
    body = clone(dict(template))
    labels = (body.get("metadata") or {}).get("labels")
    if labels:
        labels.pop(POD_TEMPLATE_HASH, None)
    return body


def equal_ignore_hash(t1: Mapping[str, Any], t2: Mapping[str, Any]) -> bool:
    """``EqualIgnoreHash``: equal templates once the pod-template-hash label is ignored."""
    return bool(_semantic(template_without_hash(t1)) == _semantic(template_without_hash(t2)))


_SEMANTIC_MEMO: dict[tuple[str, str], Any] = {}
_MEMO_LIMIT = 8192


def _semantic_template(obj: Mapping[str, Any]) -> Any:
    """The semantic form of an object's template, memoized per object and generation
    (every sync compares the same templates many times). The template is in the spec, and
    the apiserver moves ``metadata.generation`` on every change of a Deployment's or a
    ReplicaSet's spec (pkg/registry/apps/deployment/strategy.go and
    replicaset/strategy.go, PrepareForUpdate), not on a status write: keyed by the
    resourceVersion instead, each of the rollout's status writes (2-4 per replaced pod)
    made the next comparison miss. Without a generation, per resourceVersion."""
    m = meta(obj)
    uid = m.get("uid")
    generation = m.get("generation")
    version = f"g{generation}" if generation else m.get("resourceVersion")
    if not uid or not version:
        return _semantic(template_without_hash(template_of(obj)))
    key = (str(uid), str(version))
    found = _SEMANTIC_MEMO.get(key)
    if found is None:
        if len(_SEMANTIC_MEMO) >= _MEMO_LIMIT:
            _SEMANTIC_MEMO.clear()
        found = _SEMANTIC_MEMO[key] = _semantic(template_without_hash(template_of(obj)))
    return found


def same_template(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two objects (Deployment, ReplicaSet) have equal templates, ignoring the
    hash label."""
    return bool(_semantic_template(a) == _semantic_template(b))


def template_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return (obj.get("spec") or {}).get("template") or {}


def _created(obj: Mapping[str, Any]) -> float:
    text = meta(obj).get("creationTimestamp")
    return _parsed_time(text) if isinstance(text, str) else 0.0


@functools.lru_cache(maxsize=4096)
def _parsed_time(text: str) -> float:
    """A creation time's seconds, remembered: every sync sorts the Deployment's ReplicaSets
    by it (``ReplicaSetsByCreationTimestamp``), a parse per ReplicaSet per comparison key."""
    return parse_time(text) or 0.0


def by_creation(rss: Iterable[Obj]) -> list[Obj]:
    """``ReplicaSetsByCreationTimestamp``: oldest first, then by name."""
    return sorted(rss, key=lambda rs: (_created(rs), name_of(rs)))


def by_size_older(rss: Iterable[Obj]) -> list[Obj]:
    """``ReplicaSetsBySizeOlder``: larger first, older first among equals."""
    return sorted(rss, key=lambda rs: (-spec_replicas(rs), _created(rs), name_of(rs)))


def by_size_newer(rss: Sequence[Obj]) -> list[Obj]:
    """``ReplicaSetsBySizeNewer``: larger first, newer first among equals."""
    def compare(a: Obj, b: Obj) -> int:
        if spec_replicas(a) != spec_replicas(b):
            return spec_replicas(b) - spec_replicas(a)
        ka, kb = (_created(a), name_of(a)), (_created(b), name_of(b))
        return -1 if ka > kb else 1 if ka < kb else 0
    return sorted(rss, key=functools.cmp_to_key(compare))


def by_revision(rss: Sequence[Obj]) -> list[Obj]:
    """``ReplicaSetsByRevision``: lowest revision first, by creation among equals."""
    def compare(a: Obj, b: Obj) -> int:
        ra, rb = revision(a), revision(b)
        if ra is None or rb is None or ra == rb:
            ka, kb = (_created(a), name_of(a)), (_created(b), name_of(b))
            return -1 if ka < kb else 1 if ka > kb else 0
        return ra - rb
    return sorted(rss, key=functools.cmp_to_key(compare))


def find_new_replica_set(d: Mapping[str, Any], rss: Iterable[Obj]) -> Obj | None:
    """The oldest ReplicaSet whose template equals the Deployment's (ignoring the hash)."""
    for rs in by_creation(rss):
        if same_template(rs, d):
            return rs
    return None


def find_old_replica_sets(d: Mapping[str, Any], rss: Iterable[Obj]) -> tuple[list[Obj], list[Obj]]:
    """(old ReplicaSets with replicas, every old ReplicaSet)."""
    rss = list(rss)
    new = find_new_replica_set(d, rss)
    new_uid = meta(new).get("uid") if new is not None else None
    everything = [rs for rs in rss if new is None or meta(rs).get("uid") != new_uid]
    return [rs for rs in everything if spec_replicas(rs) != 0], everything


def active(rss: Iterable[Obj | None]) -> list[Obj]:
    """``FilterActiveReplicaSets``: those with replicas."""
    return [rs for rs in rss if rs is not None and spec_replicas(rs) > 0]


def replica_count(rss: Iterable[Obj | None]) -> int:
    return sum(spec_replicas(rs) for rs in rss if rs is not None)


def actual_count(rss: Iterable[Obj | None]) -> int:
    return sum(status_int(rs, "replicas") for rs in rss if rs is not None)


def ready_count(rss: Iterable[Obj | None]) -> int:
    return sum(status_int(rs, "readyReplicas") for rs in rss if rs is not None)


def available_count(rss: Iterable[Obj | None]) -> int:
    return sum(status_int(rs, "availableReplicas") for rs in rss if rs is not None)


def pods_in_flight(rss: Iterable[Obj | None]) -> int:
    """Pods the ReplicaSets want or still run: a scale-down counts until its pods are
    gone (``status.replicas``), so surge bounds running pods, not only the wanted ones."""
    return sum(max(spec_replicas(rs), status_int(rs, "replicas")) for rs in rss if rs is not None)


def settled_available(rss: Iterable[Obj | None]) -> int:
    """Available pods, each ReplicaSet counting at most what it wants (pods of a
    scale-down still reported available are going)."""
    return sum(min(spec_replicas(rs), status_int(rs, "availableReplicas"))
               for rs in rss if rs is not None)


def find_active_or_latest(new: Obj | None, olds: list[Obj]) -> Obj | None:
    """The only active ReplicaSet, or the newest when none is active (None: several)."""
    if new is None and not olds:
        return None
    olds_newest_first = list(reversed(by_creation(olds)))
    actives = active([*olds_newest_first, new])
    if not actives:
        return new if new is not None else olds_newest_first[0]
    return actives[0] if len(actives) == 1 else None


def new_rs_new_replicas(d: Mapping[str, Any], all_rss: Iterable[Obj | None], new: Obj,
                        current: int | None = None) -> int:
    """``NewRSNewReplicas``: how far the new ReplicaSet may grow now, given ``current``
    pods (default: the ReplicaSets' ``spec.replicas``)."""
    replicas = spec_replicas(d)
    if not is_rolling_update(d):
        return replicas
    surge = scaled_value(_rolling(d).get("maxSurge", 0), replicas, True)
    if current is None:
        current = replica_count(all_rss)
    max_total = replicas + surge
    if current >= max_total:
        return spec_replicas(new)
    scale_up = min(max_total - current, replicas - spec_replicas(new))
    return spec_replicas(new) + scale_up


def is_saturated(d: Mapping[str, Any], rs: Obj | None) -> bool:
    if rs is None:
        return False
    desired = desired_replicas_annotation(rs)
    if desired is None:
        return False
    replicas = spec_replicas(d)
    return spec_replicas(rs) == replicas and desired == replicas and \
        status_int(rs, "availableReplicas") == replicas


def _round_half_away(x: float) -> int:
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


def _fraction(rs: Obj, d: Mapping[str, Any]) -> int:
    if spec_replicas(d) == 0:
        return -spec_replicas(rs)
    deployment_max = spec_replicas(d) + max_surge(d)
    before = _int_annotation(rs, MAX_REPLICAS)
    if not before:
        before = status_int(d, "replicas")
        if before == 0:
            return 0
    return _round_half_away(spec_replicas(rs) * deployment_max / before) - spec_replicas(rs)


def get_proportion(rs: Obj | None, d: Mapping[str, Any], to_add: int, added: int) -> int:
    """``GetProportion``: this ReplicaSet's share of ``to_add`` replicas, bounded by what
    is left to add (or remove)."""
    if rs is None or spec_replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = _fraction(rs, d)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


# -- status and conditions ---------------------------------------------------------------------

def new_condition(type_: str, status: str, reason: str, message: str) -> Obj:
    now = meta_time()
    return {"type": type_, "status": status, "lastUpdateTime": now,
            "lastTransitionTime": now, "reason": reason, "message": message}


def get_condition(status: Mapping[str, Any], type_: str) -> Obj | None:
    condition: Obj
    for condition in status.get("conditions") or ():
        if condition.get("type") == type_:
            return condition
    return None


def set_condition(status: Obj, condition: Obj) -> None:
    """``SetDeploymentCondition``: nothing when status and reason are unchanged; the
    transition time is kept while the status is."""
    current = get_condition(status, condition["type"])
    if current is not None and current.get("status") == condition["status"] and \
            current.get("reason") == condition["reason"]:
        return
    if current is not None and current.get("status") == condition["status"]:
        condition = {**condition, "lastTransitionTime": current.get("lastTransitionTime")}
    remove_condition(status, condition["type"])
    status.setdefault("conditions", []).append(condition)


def remove_condition(status: Obj, type_: str) -> None:
    kept = [c for c in status.get("conditions") or [] if c.get("type") != type_]
    if kept:
        status["conditions"] = kept
    else:
        status.pop("conditions", None)


def deployment_complete(d: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    replicas = spec_replicas(d)
    return int(status.get("updatedReplicas") or 0) == replicas and \
        int(status.get("replicas") or 0) == replicas and \
        int(status.get("availableReplicas") or 0) == replicas and \
        int(status.get("observedGeneration") or 0) >= int(meta(d).get("generation") or 0)


def deployment_progressing(d: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    old = d.get("status") or {}

    def get(s: Mapping[str, Any], k: str) -> int:
        return int(s.get(k) or 0)

    return get(status, "updatedReplicas") > get(old, "updatedReplicas") or \
        get(status, "replicas") - get(status, "updatedReplicas") < \
        get(old, "replicas") - get(old, "updatedReplicas") or \
        get(status, "readyReplicas") > get(old, "readyReplicas") or \
        get(status, "availableReplicas") > get(old, "availableReplicas")


def deployment_timed_out(d: Mapping[str, Any], status: Mapping[str, Any],
                         now: Callable[[], float]) -> bool:
    if not has_progress_deadline(d):
        return False
    condition = get_condition(status, PROGRESSING)
    if condition is None or condition.get("reason") == NEW_RS_AVAILABLE:
        return False
    if condition.get("reason") == TIMED_OUT:
        return True
    updated = parse_time(condition.get("lastUpdateTime"))
    if updated is None:
        return False
    deadline = int((d.get("spec") or {}).get("progressDeadlineSeconds") or 0)
    return updated + deadline < now()
