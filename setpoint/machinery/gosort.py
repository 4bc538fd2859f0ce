"""Go's ``sort.Sort`` as the Go release kube-apiserver 1.32 is built with (Go 1.23) runs it:
pattern-defeating quicksort (src/sort/sort.go Sort, zsortinterface.go pdqsort), insertion sort
for at most 12 elements.

Ported step by step, for callers whose ``less`` is no strict weak order (goautoneg's Accept
clauses): only the same comparisons and swaps in the same order give the same result. It is
deterministic (breakPatterns' xorshift is seeded with the length) and takes O(n log n)
comparisons at worst (heapsort once ``bits.Len(n)`` partitions were unbalanced). The xorshift
shifts are Go 1.23's (13, 17, 5: golang/go#70144 changed them after 1.23).
"""

from __future__ import annotations

from collections.abc import Callable, MutableSequence
from typing import TypeVar

Item = TypeVar("Item")

_MAX_INSERTION = 12  # pdqsort's maxInsertion
_SHORTEST_NINTHER = 50  # choosePivot's
_MAX_SWAPS = 4 * 3
_MAX_STEPS = 5  # partialInsertionSort's
_SHORTEST_SHIFTING = 50
_UNKNOWN, _INCREASING, _DECREASING = 0, 1, 2  # sortedHint
_MASK64 = (1 << 64) - 1


def go_sort(data: MutableSequence[Item], less: Callable[[Item, Item], bool]) -> None:
    """Sort ``data`` in place as Go's ``sort.Sort`` with ``Less(i, j) = less(data[i],
    data[j])`` does."""
    n = len(data)
    if n <= 1:
        return
    _Sorter(data, less).pdqsort(0, n, n.bit_length())


class _Sorter:
    """One sort.Sort: the data and its Less, and zsortinterface.go's functions over them."""

    def __init__(self, data: MutableSequence[Item], less_items: Callable[[Item, Item], bool]
                 ) -> None:
        # closures, not methods: these two are the sort's inner loop
        def less(i: int, j: int) -> bool:
            return less_items(data[i], data[j])

        def swap(i: int, j: int) -> None:
            data[i], data[j] = data[j], data[i]

        self.less = less
        self.swap = swap

    def insertion_sort(self, a: int, b: int) -> None:
        for i in range(a + 1, b):
            j = i
            while j > a and self.less(j, j - 1):
                self.swap(j, j - 1)
                j -= 1

    def sift_down(self, lo: int, hi: int, first: int) -> None:
        root = lo
        while True:
            child = 2 * root + 1
            if child >= hi:
                return
            if child + 1 < hi and self.less(first + child, first + child + 1):
                child += 1
            if not self.less(first + root, first + child):
                return
            self.swap(first + root, first + child)
            root = child

    def heap_sort(self, a: int, b: int) -> None:
        first, hi = a, b - a
        for i in range((hi - 1) // 2, -1, -1):
            self.sift_down(i, hi, first)
        for i in range(hi - 1, -1, -1):
            self.swap(first, first + i)
            self.sift_down(0, i, first)

    def pdqsort(self, a: int, b: int, limit: int) -> None:
        was_balanced = was_partitioned = True
        while True:
            length = b - a
            if length <= _MAX_INSERTION:
                self.insertion_sort(a, b)
                return
            if limit == 0:  # too many bad pivots
                self.heap_sort(a, b)
                return
            if not was_balanced:
                self.break_patterns(a, b)
                limit -= 1
            pivot, hint = self.choose_pivot(a, b)
            if hint == _DECREASING:
                self.reverse_range(a, b)
                pivot = (b - 1) - (pivot - a)
                hint = _INCREASING
            if was_balanced and was_partitioned and hint == _INCREASING \
                    and self.partial_insertion_sort(a, b):
                return
            if a > 0 and not self.less(a - 1, pivot):
                a = self.partition_equal(a, b, pivot)
                continue
            mid, was_partitioned = self.partition(a, b, pivot)
            left, right = mid - a, b - mid
            threshold = length // 8
            if left < right:
                was_balanced = left >= threshold
                self.pdqsort(a, mid, limit)
                a = mid + 1
            else:
                was_balanced = right >= threshold
                self.pdqsort(mid + 1, b, limit)
                b = mid

    def partition(self, a: int, b: int, pivot: int) -> tuple[int, bool]:
        self.swap(a, pivot)
        i, j = a + 1, b - 1
        while i <= j and self.less(i, a):
            i += 1
        while i <= j and not self.less(j, a):
            j -= 1
        if i > j:
            self.swap(j, a)
            return j, True
        self.swap(i, j)
        i += 1
        j -= 1
        while True:
            while i <= j and self.less(i, a):
                i += 1
            while i <= j and not self.less(j, a):
                j -= 1
            if i > j:
                break
            self.swap(i, j)
            i += 1
            j -= 1
        self.swap(j, a)
        return j, False

    def partition_equal(self, a: int, b: int, pivot: int) -> int:
        self.swap(a, pivot)
        i, j = a + 1, b - 1
        while True:
            while i <= j and not self.less(a, i):
                i += 1
            while i <= j and self.less(a, j):
                j -= 1
            if i > j:
                return i
            self.swap(i, j)
            i += 1
            j -= 1

    def partial_insertion_sort(self, a: int, b: int) -> bool:
        i = a + 1
        for _ in range(_MAX_STEPS):
            while i < b and not self.less(i, i - 1):
                i += 1
            if i == b:
                return True
            if b - a < _SHORTEST_SHIFTING:
                return False
            self.swap(i, i - 1)
            if i - a >= 2:  # the smaller one to the left (down to index 1, as Go's loop)
                for j in range(i - 1, 0, -1):
                    if not self.less(j, j - 1):
                        break
                    self.swap(j, j - 1)
            if b - i >= 2:  # the greater one to the right
                for j in range(i + 1, b):
                    if not self.less(j, j - 1):
                        break
                    self.swap(j, j - 1)
        return False

    def break_patterns(self, a: int, b: int) -> None:
        length = b - a
        if length < 8:
            return
        random = length  # xorshift(length)
        modulus = 1 << length.bit_length()  # nextPowerOfTwo
        start = a + (length // 4) * 2 - 1
        for idx in range(start, start + 3):
            random ^= (random << 13) & _MASK64
            random ^= random >> 17
            random ^= (random << 5) & _MASK64
            other = random & (modulus - 1)
            if other >= length:
                other -= length
            self.swap(idx, a + other)

    def choose_pivot(self, a: int, b: int) -> tuple[int, int]:
        length = b - a
        swaps = [0]
        i, j, k = a + length // 4, a + length // 4 * 2, a + length // 4 * 3
        if length >= 8:
            if length >= _SHORTEST_NINTHER:  # Tukey's ninther
                i = self.median(i - 1, i, i + 1, swaps)
                j = self.median(j - 1, j, j + 1, swaps)
                k = self.median(k - 1, k, k + 1, swaps)
            j = self.median(i, j, k, swaps)
        if swaps[0] == 0:
            return j, _INCREASING
        if swaps[0] == _MAX_SWAPS:
            return j, _DECREASING
        return j, _UNKNOWN

    def order2(self, a: int, b: int, swaps: list[int]) -> tuple[int, int]:
        if self.less(b, a):
            swaps[0] += 1
            return b, a
        return a, b

    def median(self, a: int, b: int, c: int, swaps: list[int]) -> int:
        a, b = self.order2(a, b, swaps)
        b, c = self.order2(b, c, swaps)
        a, b = self.order2(a, b, swaps)
        return b

    def reverse_range(self, a: int, b: int) -> None:
        i, j = a, b - 1
        while i < j:
            self.swap(i, j)
            i += 1
            j -= 1
