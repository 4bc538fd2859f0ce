"""The top entries of a py-spy profile (``py-spy record --format raw``: collapsed stacks).

    .venv/bin/python bench/profile_top.py FILE [--top 15] [--under MODULE_PART]

Prints each function's share of the samples: self (it was running) and total (it was on the
stack), as the profile's top entries in docs/benchmarks.md are given. ``--under`` keeps only
frames whose file contains it (``setpoint/runtime``, say) for the self list.
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path


def _frame(text: str) -> str:
    """``function (path/to/file.py:LINE)`` without the line and the path's prefix."""
    name, _, where = text.partition(" (")
    path = where.rsplit(":", 1)[0]
    for marker in ("site-packages/", "/setpoint/", "/examples/", "python3.11/"):
        if marker in path:
            path = marker.strip("/") + "/" + path.split(marker, 1)[1] \
                if marker != "site-packages/" else path.split(marker, 1)[1]
            break
    return f"{name} ({path})"


def top(path: Path, count: int, under: str | None) -> str:
    self_samples: collections.Counter[str] = collections.Counter()
    total_samples: collections.Counter[str] = collections.Counter()
    samples = 0
    for line in path.read_text().splitlines():
        stack, _, n_text = line.rpartition(" ")
        if not stack or not n_text.isdigit():
            continue
        n = int(n_text)
        frames = [_frame(f) for f in stack.split(";") if " (" in f]
        if not frames:
            continue
        samples += n
        for frame in set(frames):
            total_samples[frame] += n
        leaf = frames[-1]
        if under:
            inside = [f for f in frames if under in f]
            leaf = inside[-1] if inside else leaf
        self_samples[leaf] += n
    lines = [f"{samples} samples", "", "self %  function"]
    lines += [f"{100 * v / samples:5.1f}  {k}" for k, v in self_samples.most_common(count)]
    lines += ["", "total %  function"]
    lines += [f"{100 * v / samples:5.1f}  {k}" for k, v in total_samples.most_common(count)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", type=Path)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--under")
    args = parser.parse_args()
    print(top(args.file, args.top, args.under))


if __name__ == "__main__":
    main()
