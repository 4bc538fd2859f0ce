"""A package whose ``__init__`` is deferred (setpoint/machinery/packageinit.py) gives its
submodules without running it, and becomes the whole package at the first read of a name
only its ``__init__`` binds: another user of the library in the process sees no difference;
a plain module deferred (``logging.config``) the same at its first name.

prometheus_client is the case it is used for: the runtime's metric classes come from its
submodules, while its ``__init__`` loads the exposition servers (docs/benchmarks.md,
Start-up, eighteenth pass). Each case runs in a fresh interpreter (this one has the package
imported whole).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path


def _run(code: str) -> object:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, check=True, cwd=Path(__file__).resolve().parents[2])
    return json.loads(done.stdout)


def test_submodules_load_without_the_init_and_any_other_name_runs_it() -> None:
    result = _run("""
        import json, sys
        from setpoint.machinery.packageinit import defer_init
        defer_init("prometheus_client")
        from prometheus_client.metrics import Counter  # its "from . import values" too
        from prometheus_client.registry import CollectorRegistry
        deferred = ["prometheus_client.exposition" in sys.modules,
                    "prometheus_client.process_collector" in sys.modules]
        registry = CollectorRegistry()
        Counter("deferred_total", "Counted before the package's init ran.",
                registry=registry).inc()
        import prometheus_client
        from prometheus_client import REGISTRY, generate_latest
        whole = [prometheus_client.Counter is Counter,
                 prometheus_client.CollectorRegistry is CollectorRegistry,
                 "process_cpu_seconds_total" in generate_latest(REGISTRY).decode(),
                 "deferred_total 1.0" in generate_latest(registry).decode(),
                 "__getattr__" in vars(prometheus_client)]
        try:
            prometheus_client.no_such_name
        except AttributeError:
            whole.append("AttributeError")
        print(json.dumps([deferred, whole]))
    """)
    assert result == [[False, False], [True, True, True, True, False, "AttributeError"]]


def test_a_package_imported_already_or_missing_is_left_as_it_is() -> None:
    result = _run("""
        import json, sys
        import prometheus_client
        from setpoint.machinery.packageinit import defer_init
        defer_init("prometheus_client")
        defer_init("no_such_package_here")
        print(json.dumps([sys.modules["prometheus_client"] is prometheus_client,
                          "no_such_package_here" in sys.modules]))
    """)
    assert result == [True, False]


def test_a_plain_module_is_deferred_on_its_package_and_runs_at_its_first_name() -> None:
    """uvicorn.config's ``import logging.config`` (the server gives no ``log_config``)."""
    result = _run("""
        import json, sys
        from setpoint.machinery.packageinit import defer_init
        defer_init("logging.config")
        import logging.config
        deferred = [logging.config is sys.modules["logging.config"],
                    "socketserver" in sys.modules, "__getattr__" in vars(logging.config)]
        logging.config.dictConfig({"version": 1, "loggers": {"deferred": {"level": "WARNING"}}})
        from logging.config import fileConfig
        import logging
        print(json.dumps([deferred, [logging.getLogger("deferred").level, callable(fileConfig),
                                     "socketserver" in sys.modules,
                                     "__getattr__" in vars(logging.config)]]))
    """)
    assert result == [[True, False, True], [30, True, True, False]]


def test_a_star_import_of_a_deferred_package_gives_its_public_names() -> None:
    result = _run("""
        import json
        from setpoint.machinery.packageinit import defer_init
        defer_init("prometheus_client")
        from prometheus_client import *  # noqa: F403
        print(json.dumps([callable(globals().get(name))
                          for name in ("Counter", "start_http_server", "generate_latest")]))
    """)
    assert result == [True, True, True]
