"""uvicorn's HTTP protocol modules without its package's ``__init__``.

The server uses uvicorn's httptools protocol, its ``Config`` and ``ServerState`` only, but
importing any ``uvicorn.*`` module first runs ``uvicorn/__init__.py``, which loads
``uvicorn.main``: its command line (click), supervisors and ``multiprocessing``, about 60 M
instructions of ``cluster up``'s critical path (docs/benchmarks.md, Start-up). Importing
this module first puts the package in ``sys.modules`` with its ``__path__`` set and its
``__init__`` not yet run; the first read of a name the package exports (``uvicorn.Config``,
``uvicorn.run``, ``__version__``, ``from uvicorn import Server``) runs it, so any other
user of uvicorn in the process sees the package as a plain import leaves it.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

from setpoint.machinery.packageinit import defer_init


def _defer_package_init() -> None:
    if "uvicorn" in sys.modules:
        return  # already imported (whole, or deferred by an earlier import of this module)
    spec = importlib.util.find_spec("uvicorn")
    if spec is None or spec.loader is None:
        return  # (the import below then fails as it would have)
    package = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def __getattr__(name: str) -> Any:  # PEP 562: only names not yet set get here
        if name.startswith("__") and name != "__version__":
            raise AttributeError(name)
        del package.__dict__["__getattr__"]
        loader.exec_module(package)  # the package's own __init__, in the same module
        return getattr(package, name)

    package.__dict__["__getattr__"] = __getattr__
    sys.modules["uvicorn"] = package


_defer_package_init()
# uvicorn.config imports logging.config for a log_config the server never gives (httpserver:
# log_config=None): loaded at the first read of its names, by whoever reads them
defer_init("logging.config")

# what the server uses, loaded here so that importing this module is enough
from uvicorn.config import Config  # noqa: E402
from uvicorn.protocols.http import httptools_impl  # noqa: E402
from uvicorn.server import Server, ServerState  # noqa: E402

# the two names the package exports from modules loaded above, the same objects its
# __init__ would bind: uvicorn's own modules import them from the package
# (``lifespan/off.py``: ``from uvicorn import Config``, loaded by ``Config.load``)
_package = sys.modules["uvicorn"]
if "__getattr__" in _package.__dict__:
    _package.__dict__.update(Config=Config, Server=Server)

__all__ = ["Config", "ServerState", "httptools_impl"]
