"""Finding what the user points the CLI at: ``module:attribute`` or a module's contents.

Mistakes (a module that is not importable, a missing attribute, an object of the wrong
kind) raise :class:`TargetError` with one line that says what to fix; the commands print
it without a traceback. An exception raised by the user's own module while importing is
theirs to see: its traceback in the user's frames only
(:class:`ModuleImportError`).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import click

from setpoint.resources import Permissions
from setpoint.runtime._permissions import controller_permissions, manager_permissions


class TargetError(click.ClickException):
    """A one-line user mistake about the target (exit status 2)."""

    exit_code = 2

    def format_message(self) -> str:
        return self.message


def import_module(name: str) -> ModuleType:
    """Import ``name`` with the working directory on the path (as ``python -m`` has)."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    from setpoint.runtime._controller import ReconcileSignatureError
    from setpoint.runtime._objects import KindNameError

    try:
        return importlib.import_module(name)
    except ReconcileSignatureError as exc:  # setpoint's own check, at the decorator
        raise TargetError(str(exc)) from None
    except KindNameError as exc:  # at the user's line that names the kind
        raise TargetError(f"{_user_line(exc)}{exc}") from None
    except ModuleNotFoundError as exc:
        missing = exc.name or name
        if name == missing or name.startswith(missing + "."):
            raise TargetError(
                f"module {name!r} not found: run from the directory that contains it, or "
                f"install its package (pip install -e .)") from None
        raise ModuleImportError(name, exc) from None
    except Exception as exc:  # the user's code failed: theirs to read, not ours
        raise ModuleImportError(name, exc) from None


class ModuleImportError(click.ClickException):
    """The user's module raised while imported: its traceback (the user's frames, as
    Python shows a script's), then one line naming the module; exit status 1, as
    ``python -c "import module"``'s."""

    exit_code = 1

    def __init__(self, module: str, error: BaseException) -> None:
        super().__init__(f"module {module!r} failed to import: the error above is in "
                         "its code")
        self.error = error

    def show(self, file: Any = None) -> None:
        from setpoint.cli.usertraceback import print_users_traceback

        print_users_traceback(self.error)
        super().show(file)


def _user_line(exc: BaseException) -> str:
    """``file:line: `` of the innermost frame outside Setpoint that led to ``exc``."""
    import traceback

    setpoint_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith(setpoint_dir) and not f.filename.startswith("<")]
    return f"{frames[-1].filename}:{frames[-1].lineno}: " if frames else ""


def split_target(target: str) -> tuple[str, str | None]:
    module, _, attribute = target.partition(":")
    if not module or (":" in target and not attribute):
        raise TargetError(f"{target!r} is not module:attribute (e.g. my_operator:manager)")
    return module, attribute or None


def resolve(target: str) -> tuple[ModuleType, str, Any]:
    """(module, attribute name, object) of ``module:attribute``; a zero-argument callable
    that is not a class is called (a factory)."""
    module_name, attribute = split_target(target)
    if attribute is None:
        raise TargetError(f"{target!r} names no attribute: write {target}:manager (the "
                          f"variable that holds your Manager)")
    module = import_module(module_name)
    obj: Any = module
    for part in attribute.split("."):
        if not hasattr(obj, part):
            found = ", ".join(sorted(n for n, _ in runnables(module))) or "none"
            raise TargetError(f"module {module_name!r} has no attribute {attribute!r} "
                              f"(Managers and controllers it defines: {found})")
        obj = getattr(obj, part)
    if callable(obj) and not isinstance(obj, type) and not _is_runnable(obj):
        obj = obj()
    return module, attribute, obj


def _is_runnable(obj: Any) -> bool:
    from setpoint.runtime import Controller, Manager

    if isinstance(obj, Manager | Controller):
        return True
    return isinstance(obj, list | tuple) and bool(obj) and all(
        isinstance(c, Controller) for c in obj)


def runnables(module: ModuleType) -> Iterator[tuple[str, Any]]:
    """The module's attributes that are Managers, Controllers or lists of controllers."""
    for name, value in vars(module).items():
        if not name.startswith("_") and _is_runnable(value):
            yield name, value


def as_manager(obj: Any, where: str) -> Any:
    """A Manager for ``obj``: itself, or a new one running the controller(s)."""
    from setpoint.runtime import Controller, Manager

    if isinstance(obj, Manager):
        return obj
    if isinstance(obj, Controller):
        return Manager([obj])
    if _is_runnable(obj):
        return Manager(list(obj))
    what = f"the class {obj.__name__}" if isinstance(obj, type) else \
        f"a {type(obj).__name__}"
    raise TargetError(f"{where} is {what}, not a Manager, a Controller or a "
                      f"list of controllers: point at the variable that holds your Manager")


# -- permissions -------------------------------------------------------------------------


def permissions_of(target: str) -> tuple[Permissions, str | None]:
    """The Permissions ``target`` declares, and the ``module:attribute`` of its Manager
    when there is one. ``target`` is ``module:attribute`` (Permissions, a Manager, a
    Controller, controllers) or a module: its ``permissions`` attribute, else its
    Managers, else its controllers."""
    from setpoint.runtime import Controller, Manager

    module_name, attribute = split_target(target)
    if attribute is not None:
        _, _, obj = resolve(target)
        candidates = [(attribute, obj)]
    else:
        module = import_module(module_name)
        declared = getattr(module, "permissions", None)
        if isinstance(declared, Permissions):
            return declared, _first_manager(module)
        found = list(runnables(module))
        managers = [(n, v) for n, v in found if isinstance(v, Manager)]
        candidates = managers or found
        if not candidates:
            raise TargetError(f"module {module_name!r} defines no Manager, controllers or "
                              f"`permissions`: name one as {module_name}:attribute")
    merged: Permissions | None = None
    manager_ref: str | None = None
    for name, obj in candidates:
        if isinstance(obj, Permissions):
            perms = obj
        elif isinstance(obj, Manager):
            perms = manager_permissions(obj)
            manager_ref = manager_ref or f"{module_name}:{name}"
        elif isinstance(obj, Controller):
            perms = controller_permissions(obj)
        elif _is_runnable(obj):
            perms = Permissions()
            for controller in obj:
                perms = perms | controller_permissions(controller)
        else:
            raise TargetError(f"{module_name}:{name} is a {type(obj).__name__}: point at "
                              f"Permissions, a Manager or controllers")
        merged = perms if merged is None else merged | perms
    assert merged is not None
    return merged, manager_ref


def _first_manager(module: ModuleType) -> str | None:
    from setpoint.runtime import Manager

    for name, value in runnables(module):
        if isinstance(value, Manager):
            return f"{module.__name__}:{name}"
    return None


# -- webhooks ----------------------------------------------------------------------------


def _is_webhook(obj: Any) -> bool:
    from setpoint.runtime import Conversion, Webhook

    return isinstance(obj, Webhook | Conversion)


def webhooks_of(target: str) -> list[Any]:
    """The admission Webhooks and Conversions ``target`` holds: ``module:attribute`` (a
    Manager, a Webhook or Conversion, or a list of them) or a module (its Managers'
    webhooks, else every Webhook and Conversion it defines)."""
    from setpoint.runtime import Manager

    module_name, attribute = split_target(target)
    if attribute is not None:
        obj = resolve(target)[2]
        found = obj.webhooks if isinstance(obj, Manager) else \
            list(obj) if isinstance(obj, list | tuple) else [obj]
        if not all(_is_webhook(o) for o in found):
            raise TargetError(f"{target!r} is not a Manager, a Webhook, a Conversion or a "
                              "list of them")
    else:
        module = import_module(module_name)
        values = [v for n, v in vars(module).items() if not n.startswith("_")]
        managers = [v for v in values if isinstance(v, Manager)]
        found = [w for m in managers for w in m.webhooks] or \
            [v for v in values if _is_webhook(v)]
    if not found:
        raise TargetError(f"{target!r} holds no webhooks: build them with Webhook.for_(Kind) "
                          "or Conversion() and pass them to Manager(webhooks=[...])")
    return list(found)
