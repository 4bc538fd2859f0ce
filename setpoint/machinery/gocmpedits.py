"""The edit script github.com/google/go-cmp v0.6.0 computes between two slices
(cmp/internal/diff/diff.go Difference): a greedy meet-in-the-middle search over the edit
graph, forward first (``flags.Deterministic``; go-cmp starts backward in half of its
processes, see gocmptext), with a search budget of 4(nx+ny)."""

from __future__ import annotations

from collections.abc import Callable

IDENTITY, UNIQUE_X, UNIQUE_Y, MODIFIED = ".", "X", "Y", "M"

# (NumSame, NumDiff) of comparing element ix of x with element iy of y
Compare = Callable[[int, int], tuple[int, int]]


def _equal(r: tuple[int, int]) -> bool:
    return r[1] == 0


def _similar(r: tuple[int, int]) -> bool:
    return r[0] + 1 >= r[1]


class _Path:
    def __init__(self, direction: int, x: int, y: int) -> None:
        self.dir, self.x, self.y = direction, x, y
        self.es: list[str] = []

    def append(self, t: str) -> None:
        self.es.append(t)
        if t in (IDENTITY, MODIFIED):
            self.x += self.dir
            self.y += self.dir
        elif t == UNIQUE_X:
            self.x += self.dir
        else:
            self.y += self.dir

    def connect(self, dx: int, dy: int, f: Compare) -> None:
        if self.dir > 0:
            while dx > self.x and dy > self.y:
                r = f(self.x, self.y)
                if _equal(r):
                    self.append(IDENTITY)
                elif _similar(r):
                    self.append(MODIFIED)
                elif dx - self.x >= dy - self.y:
                    self.append(UNIQUE_X)
                else:
                    self.append(UNIQUE_Y)
            while dx > self.x:
                self.append(UNIQUE_X)
            while dy > self.y:
                self.append(UNIQUE_Y)
        else:
            while self.x > dx and self.y > dy:
                r = f(self.x - 1, self.y - 1)
                if _equal(r):
                    self.append(IDENTITY)
                elif _similar(r):
                    self.append(MODIFIED)
                elif self.y - dy >= self.x - dx:
                    self.append(UNIQUE_Y)
                else:
                    self.append(UNIQUE_X)
            while self.x > dx:
                self.append(UNIQUE_X)
            while self.y > dy:
                self.append(UNIQUE_Y)


def _zigzag(x: int) -> int:
    if x & 1:
        x = ~x
    return x >> 1


def difference(nx: int, ny: int, f: Compare) -> list[str]:
    """diff.Difference's edit script turning x (length nx) into y (length ny)."""
    fwd, rev = _Path(1, 0, 0), _Path(-1, nx, ny)
    ffx, ffy, rfx, rfy = 0, 0, nx, ny  # the forward and reverse frontiers
    budget = 4 * (nx + ny)
    forward = True
    while not (ffx >= rfx or ffy >= rfy or budget == 0):
        stop1 = stop2 = False
        i = 0
        if forward:
            while not (stop1 and stop2) and budget > 0:
                z = _zigzag(i)
                px, py = ffx + z, ffy - z
                if px >= rev.x or py < fwd.y:
                    stop1 = True
                elif py >= rev.y or px < fwd.x:
                    stop2 = True
                elif _equal(f(px, py)):
                    fwd.connect(px, py, f)
                    fwd.append(IDENTITY)
                    while fwd.x < rev.x and fwd.y < rev.y and _equal(f(fwd.x, fwd.y)):
                        fwd.append(IDENTITY)
                    ffx, ffy = fwd.x, fwd.y
                    stop1 = stop2 = True
                else:
                    budget -= 1
                i += 1
            if rev.x - ffx >= rev.y - ffy:
                ffx += 1
            else:
                ffy += 1
        else:
            while not (stop1 and stop2) and budget > 0:
                z = _zigzag(i)
                px, py = rfx - z, rfy + z
                if fwd.x >= px or rev.y < py:
                    stop1 = True
                elif fwd.y >= py or rev.x < px:
                    stop2 = True
                elif _equal(f(px - 1, py - 1)):
                    rev.connect(px, py, f)
                    rev.append(IDENTITY)
                    while fwd.x < rev.x and fwd.y < rev.y and _equal(f(rev.x - 1, rev.y - 1)):
                        rev.append(IDENTITY)
                    rfx, rfy = rev.x, rev.y
                    stop1 = stop2 = True
                else:
                    budget -= 1
                i += 1
            if rfx - fwd.x >= rfy - fwd.y:
                rfx -= 1
            else:
                rfy -= 1
        forward = not forward
    fwd.connect(rev.x, rev.y, f)
    return fwd.es + rev.es[::-1]
