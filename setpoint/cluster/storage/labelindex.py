"""An index of one resource's keys by label: a LIST with an equality label selector
(``app=web``) visits the objects that carry the label, not every object of its range.

kube-apiserver's watch cache keeps indexers for the selectors its callers use most
(k8s.io/apiserver/pkg/storage/cacher/cacher.go ``Indexers``, pods by ``spec.nodeName``);
this one indexes every label pair, which is what controllers and ``kubectl get -l`` select
on. It narrows the candidates only: the list's filter still checks every selector term on
each candidate, so what a LIST answers is the same with or without it.

An index is built the first time a resource is listed by label (decoding each of its objects
once) and kept up to date on every write from then on, so resources never listed by label
cost nothing.
"""

from __future__ import annotations

import heapq
import sys
from collections.abc import Iterable, Iterator, Mapping

Pair = tuple[str, str]  # (label key, value)


class LabelIndex:
    """Keys ("<namespace>/<name>") of one resource by each (label key, value) they carry."""

    __slots__ = ("_keys", "_labels")

    def __init__(self) -> None:
        self._keys: dict[Pair, set[str]] = {}
        # each labelled key's labels, flat (k1, v1, k2, v2, ...): what to take out on change
        self._labels: dict[str, tuple[str, ...]] = {}

    def put(self, key: str, labels: Mapping[str, str] | None) -> None:
        """``key`` now carries ``labels`` (None or empty: none)."""
        flat: tuple[str, ...] = ()
        if labels:
            flat = tuple(sys.intern(s) for pair in labels.items() for s in pair
                         if isinstance(s, str))
            if len(flat) != 2 * len(labels):  # not strings: never selected by a selector
                flat = ()
        old = self._labels.get(key, ())
        if old == flat:
            return
        if old:
            self._remove(key, old)
        if flat:
            self._labels[key] = flat
            for i in range(0, len(flat), 2):
                self._keys.setdefault((flat[i], flat[i + 1]), set()).add(key)

    def discard(self, key: str) -> None:
        old = self._labels.get(key)
        if old:
            self._remove(key, old)

    def _remove(self, key: str, flat: tuple[str, ...]) -> None:
        del self._labels[key]
        for i in range(0, len(flat), 2):
            pair = (flat[i], flat[i + 1])
            keys = self._keys[pair]
            keys.discard(key)
            if not keys:
                del self._keys[pair]

    def candidates(self, pairs: Iterable[Pair]) -> set[str]:
        """The keys that carry every one of ``pairs`` (at least one pair)."""
        sets = sorted((self._keys.get(p, _NONE) for p in pairs), key=len)
        return sets[0].intersection(*sets[1:])


_NONE: set[str] = set()


def in_order(keys: Iterable[str]) -> Iterator[str]:
    """``keys`` in order, each taken as it is asked for: a page of ``p`` keys out of ``m``
    costs ``m + p log m``, not a sort of all ``m``."""
    heap = list(keys)
    heapq.heapify(heap)
    while heap:
        yield heapq.heappop(heap)
