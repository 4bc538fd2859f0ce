"""Setpoint: write, test and run Kubernetes operators in Python.

The names operator authors use most are importable from here::

    from setpoint import Context, Controller, Manager, Result

They are loaded on first use, so that importing a part of Setpoint (the embedded server,
say) does not load the whole SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from setpoint._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers read; at run time each is loaded on first use
    from setpoint.client import Client as Client
    from setpoint.client import Kind as Kind
    from setpoint.resources import CustomResource as CustomResource
    from setpoint.resources import Model as Model
    from setpoint.runtime import Context as Context
    from setpoint.runtime import Controller as Controller
    from setpoint.runtime import Conversion as Conversion
    from setpoint.runtime import Denied as Denied
    from setpoint.runtime import GenerationChanged as GenerationChanged
    from setpoint.runtime import Manager as Manager
    from setpoint.runtime import ManagerSettings as ManagerSettings
    from setpoint.runtime import Reconciler as Reconciler
    from setpoint.runtime import Request as Request
    from setpoint.runtime import Result as Result
    from setpoint.runtime import TerminalError as TerminalError
    from setpoint.runtime import Webhook as Webhook

__version__ = "0.1.0"

# The one list of the names above: each public package and the names taken from it.
# (The TYPE_CHECKING imports say the same to type checkers; a test holds them equal.)
_PUBLIC: dict[str, tuple[str, ...]] = {
    "setpoint.client": ("Client", "Kind"),
    "setpoint.resources": ("CustomResource", "Model"),
    "setpoint.runtime": ("Context", "Controller", "Conversion", "Denied", "GenerationChanged",
                         "Manager", "ManagerSettings", "Reconciler", "Request", "Result",
                         "TerminalError", "Webhook"),
}
_EXPORTS = {name: module for module, names in _PUBLIC.items() for name in names}

__all__ = [*_EXPORTS, "__version__"]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
