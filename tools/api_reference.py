"""Build the API reference (HTML, into build/api) from the docstrings of the public modules,
and fail on any warning pdoc gives (an annotation it cannot resolve, a module that does not
import): `make docs`, and `make test` builds it too, so a broken reference fails the build."""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path

import pdoc

PUBLIC = ["setpoint", "setpoint.runtime", "setpoint.client", "setpoint.resources",
          "setpoint.testing"]

# typing makes a NamedTuple's __new__ in a namespace of its own, where pdoc cannot resolve
# the module's type variables; the class itself is documented correctly
_SYNTHESIZED_INIT = re.compile(r"for [\w.]+\.__init__\. Import of \w+ failed")


def main(output: Path = Path("build/api")) -> int:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.pdoc(*PUBLIC, output_directory=output)
    problems = [str(w.message) for w in caught if not _SYNTHESIZED_INIT.search(str(w.message))]
    for problem in problems:
        print(f"api reference: {problem}", file=sys.stderr)
    if not problems:
        print(f"api reference: {output / 'index.html'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("build/api")))
