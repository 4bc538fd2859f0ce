"""A module imported without running it, until a name only its code binds is read.

Some libraries' modules load far more than their importer uses. Importing
``prometheus_client.metrics`` first runs ``prometheus_client/__init__.py``, which loads the
exposition servers (``http.server``, ``wsgiref``, ``socketserver``) and collectors, about a
fifteenth of the workloads' process's imports, where the runtime needs the metric classes
and a registry only; ``uvicorn.config`` imports ``logging.config`` (with ``socketserver``)
for a ``log_config`` the server never gives, about 2 % of the server's start. Both are on
``cluster up``'s critical path (docs/benchmarks.md, Start-up, eighteenth pass).

:func:`defer_init` puts the module in ``sys.modules`` (and on its parent package) with its
spec and without having run its code: ``import name`` and, for a package, importing its
submodules (a relative ``from . import x`` included) run nothing more; the first read of
any other name (``prometheus_client.Counter``, ``from prometheus_client import REGISTRY``,
``logging.config.dictConfig``) runs the code in the same module object, so every other user
in the process sees the module as a plain import leaves it
(``tests/machinery/test_packageinit.py``).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any


def defer_init(name: str) -> None:
    """Put module ``name`` in ``sys.modules`` with its code not yet run (nothing if it is
    imported already, or not installed: its import then fails as it would)."""
    if name in sys.modules:
        return
    parent, _, child = name.rpartition(".")
    if parent:
        importlib.import_module(parent)
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader
    package = spec.submodule_search_locations is not None

    def __getattr__(attribute: str) -> Any:  # PEP 562: only names not yet set get here
        # a dunder the module object lacks stays missing, but for those its code defines
        # and readers ask for (``from m import *`` reads ``__all__``)
        if attribute.startswith("__") and attribute not in ("__version__", "__all__"):
            raise AttributeError(attribute)
        if package and importlib.util.find_spec(f"{name}.{attribute}") is not None:
            # a submodule (``from . import values``): imported and bound, nothing more run
            return importlib.import_module(f"{name}.{attribute}")
        del module.__dict__["__getattr__"]
        loader.exec_module(module)  # the module's own code, in the same module
        return getattr(module, attribute)

    module.__dict__["__getattr__"] = __getattr__
    sys.modules[name] = module
    if parent:  # as an import binds it: ``import a.b`` then reads ``a.b``
        setattr(sys.modules[parent], child, module)
