"""A range read of one resource as the store keeps it: ``(key, stored JSON)`` pairs in
etcd's key order from a start key, as they were at a revision, the keys changed since merged
back from the event history (etcd's range at a revision). A LIST that serves objects as stored
hands out these bytes themselves."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from typing import Protocol

from sortedcontainers import SortedList

from setpoint.cluster.storage.labelindex import in_order

Raw = bytes  # an object as its JSON, as stored


class ScanCounter(Protocol):
    """What a scan reports its cost to: the store's count of keys visited."""

    keys_scanned: int


class Scan:
    """``(key, stored JSON)`` pairs of one resource in key order from a start key, at a
    revision given by ``then`` (the value at that revision of each key changed since)."""

    def __init__(self, store: ScanCounter, index: SortedList[str], objs: dict[str, Raw],
                 prefix: str, start: str, then: dict[str, Raw | None],
                 candidates: set[str] | None = None) -> None:
        self._store = store
        self._index = index
        self._objs = objs
        self._prefix, self._start, self._then = prefix, start, then
        self._candidates = candidates  # the only keys worth visiting (a label index's)

    def _in_range(self, key: str, start: str) -> bool:
        return key >= start and key.startswith(self._prefix)

    def __iter__(self) -> Iterator[tuple[str, Raw]]:
        index, objs, then, prefix = self._index, self._objs, self._then, self._prefix
        # keys deleted since the revision are no longer in the index: merged back in order
        gone = sorted(k for k, v in then.items()
                      if v is not None and self._in_range(k, self._start) and k not in objs)
        keys: Iterable[str]
        if self._candidates is not None:  # and the keys changed since, which may have matched
            keys = in_order(k for k in self._candidates.union(then)
                            if self._in_range(k, self._start))
        else:
            keys = heapq.merge(index.irange(self._start), gone) if gone else index.irange(
                self._start)
        store = self._store
        for key in keys:
            if not key.startswith(prefix):
                return
            store.keys_scanned += 1
            if key in then:
                raw = then[key]
                if raw is None:
                    continue  # created since the revision
            else:
                raw = objs[key]
            yield key, raw

    def count_after(self, key: str) -> int:
        """How many keys of the range sort after ``key``, by bisection."""
        index, prefix = self._index, self._prefix
        start = key + "\x00"
        end = (index.bisect_left(prefix[:-1] + chr(ord(prefix[-1]) + 1)) if prefix
               else len(index))
        count = max(0, end - index.bisect_left(start))
        for k, v in self._then.items():
            if self._in_range(k, start):
                count += (v is not None) - (k in self._objs)
        return count
