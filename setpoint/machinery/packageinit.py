"""A package's submodules without its ``__init__``, until a name only ``__init__`` binds is read.

Some libraries' package ``__init__`` imports every feature they have: importing
``prometheus_client.metrics`` first runs ``prometheus_client/__init__.py``, which loads its
exposition servers (``http.server``, ``wsgiref``, ``socketserver``) and collectors, about a
seventh of the workloads' process's imports on ``cluster up``'s critical path, where the
runtime needs the metric classes and a registry only (docs/benchmarks.md, Start-up,
eighteenth pass). :func:`defer_package_init` puts the package in ``sys.modules`` with its
``__path__`` and without having run its ``__init__``: its submodules import as usual (a
relative ``from . import x`` of one of them included), and the first read of any other
name (``prometheus_client.Counter``, ``from prometheus_client import REGISTRY``) runs the
``__init__`` in the same module object, so every other user in the process sees the
package as a plain import leaves it (``tests/machinery/test_packageinit.py``).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any


def defer_package_init(name: str) -> None:
    """Put package ``name`` in ``sys.modules`` with its ``__init__`` not yet run (nothing
    if it is imported already, or not installed: its import then fails as it would)."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    package = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def __getattr__(attribute: str) -> Any:  # PEP 562: only names not yet set get here
        if attribute.startswith("__") and attribute != "__version__":
            raise AttributeError(attribute)
        if importlib.util.find_spec(f"{name}.{attribute}") is not None:
            # a submodule (``from . import values``): imported and bound, no __init__
            return importlib.import_module(f"{name}.{attribute}")
        del package.__dict__["__getattr__"]
        loader.exec_module(package)  # the package's own __init__, in the same module
        return getattr(package, attribute)

    package.__dict__["__getattr__"] = __getattr__
    sys.modules[name] = package
