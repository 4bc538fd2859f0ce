"""Storage and retention of a Prometheus, derived when the spec does not give them.

The rule (also in the README):

1. **Volume.** ``storage.volumeClaimTemplate`` gives each replica a PVC of its requested
   size; ``storage.emptyDir`` an emptyDir. With neither, an emptyDir whose ``sizeLimit``
   is **8 x the memory limit** when a memory limit is set: the memory limit bounds the
   series Prometheus can hold in its head block (the last ~2 h of samples, uncompressed,
   plus the index), and the compressed blocks of a day at the same series count take
   about as much disk as that head takes memory; 8 x leaves room for several days of
   blocks. No memory limit and no storage: an emptyDir without limit.
2. **Retention size.** ``retentionSize`` when given; otherwise **80 % of the volume size**
   (when one is known): Prometheus counts blocks and WAL against the limit, and
   compaction writes the new block before deleting the ones it replaces, so the last
   20 % is the compaction headroom.
3. **Retention time.** ``retention`` when given; otherwise ``24h`` when no retention size
   applies (the prometheus-operator's default), and ``15d`` (Prometheus' own default,
   bounded by the size limit anyway) when one does.
4. **Memory.** ``GOMEMLIMIT`` is 90 % of the memory limit, so the Go garbage collector
   works harder before the container would be killed.
"""

from __future__ import annotations

from dataclasses import dataclass

from operators.monitoring.resources.prometheus import PrometheusSpec
from setpoint.machinery.quantity import Quantity, QuantityError

DISK_PER_MEMORY = 8
RETENTION_FRACTION = 0.8
GOMEMLIMIT_FRACTION = 0.9
DEFAULT_RETENTION = "24h"
SIZE_BOUNDED_RETENTION = "15d"


@dataclass(frozen=True)
class Storage:
    """What the rule decided for one Prometheus."""

    volume_bytes: int | None
    """The size of each replica's data volume, when known."""
    empty_dir_size_limit: str | None
    """The emptyDir ``sizeLimit`` the operator sets (rule 1), when it sets one."""
    retention: str
    retention_size: str | None
    gomemlimit: int | None


def _bytes(value: object) -> int | None:
    if value is None:
        return None
    try:
        return int(Quantity.from_json(value).value())
    except (QuantityError, TypeError, ValueError):
        return None


def memory_limit(spec: PrometheusSpec) -> int | None:
    limits = spec.resources.limits if spec.resources is not None else None
    return _bytes((limits or {}).get("memory"))


def prometheus_bytes(value: int) -> str:
    """A byte count as ``--storage.tsdb.retention.size`` reads it, rounded down to MB."""
    return f"{max(1, value // (1024 * 1024))}MB"


def derive(spec: PrometheusSpec) -> Storage:
    memory = memory_limit(spec)
    storage = spec.storage
    volume: int | None = None
    size_limit: str | None = None
    if storage is not None and storage.volume_claim_template is not None:
        requests = storage.volume_claim_template.spec.resources
        volume = _bytes(((requests.requests or {}) if requests else {}).get("storage"))
    elif storage is not None and storage.empty_dir is not None:
        volume = _bytes(storage.empty_dir.size_limit)
    elif memory is not None:
        volume = memory * DISK_PER_MEMORY
        size_limit = f"{volume // (1024 * 1024)}Mi"
    retention_size = spec.retention_size
    if retention_size is None and volume is not None:
        retention_size = prometheus_bytes(int(volume * RETENTION_FRACTION))
    retention = spec.retention or (SIZE_BOUNDED_RETENTION if retention_size
                                   else DEFAULT_RETENTION)
    gomemlimit = int(memory * GOMEMLIMIT_FRACTION) if memory is not None else None
    return Storage(volume, size_limit, retention, retention_size, gomemlimit)
