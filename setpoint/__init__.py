"""Setpoint: write, test and run Kubernetes operators in Python.

The names operator authors use most are importable from here::

    from setpoint import Context, Controller, Manager, Result

They are loaded on first use, so that importing a part of Setpoint (the embedded server,
say) does not load the whole SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from setpoint._lazy import lazy_exports

if TYPE_CHECKING:
    from setpoint.client import Client, Kind
    from setpoint.resources import CustomResource, Model
    from setpoint.runtime import (
        Context,
        Controller,
        GenerationChanged,
        Manager,
        ManagerSettings,
        Reconciler,
        Request,
        Result,
        TerminalError,
    )
    from setpoint.runtime.webhook import Conversion, Denied, Webhook

__version__ = "0.1.0"

_EXPORTS = {
    "Client": "setpoint.client",
    "Kind": "setpoint.client",
    "CustomResource": "setpoint.resources",
    "Model": "setpoint.resources",
    "Context": "setpoint.runtime",
    "Controller": "setpoint.runtime",
    "GenerationChanged": "setpoint.runtime",
    "Manager": "setpoint.runtime",
    "ManagerSettings": "setpoint.runtime",
    "Reconciler": "setpoint.runtime",
    "Request": "setpoint.runtime",
    "Result": "setpoint.runtime",
    "TerminalError": "setpoint.runtime",
    "Webhook": "setpoint.runtime",
    "Denied": "setpoint.runtime",
    "Conversion": "setpoint.runtime",
}

__all__ = [
    "Client",
    "Context",
    "Controller",
    "Conversion",
    "CustomResource",
    "Denied",
    "GenerationChanged",
    "Kind",
    "Manager",
    "ManagerSettings",
    "Model",
    "Reconciler",
    "Request",
    "Result",
    "TerminalError",
    "Webhook",
    "__version__",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
