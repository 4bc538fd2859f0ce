"""The Widget operator: per Widget, a ConfigMap ``<name>-cfg`` with its message and size.

Run it with ``setpoint run examples.widget.operator:manager`` (see the README).

The reconcile is level-triggered: it states what the ConfigMap should hold and what the
status should say. ``ctx.apply`` sends a server-side apply only when the cached ConfigMap
differs from it (and makes the Widget its controller owner, so deleting the Widget deletes
it); ``ctx.update_status`` sends only what changed. A Widget therefore costs two requests
when created and two per change of its spec, and none at all while nothing changes.
"""

from __future__ import annotations

from examples.widget.api import Widget
from setpoint.resources.models.core_v1 import ConfigMap
from setpoint.runtime import Context, Controller, Manager, ManagerSettings, Result

widgets = Controller.for_(Widget, name="widget").owns(ConfigMap)


def config_map_for(widget: Widget) -> ConfigMap:
    """The ConfigMap a widget should have (namespace and owner are set by ``ctx.apply``)."""
    return ConfigMap(name=f"{widget.metadata.name}-cfg",
                     data={"message": widget.spec.message, "size": str(widget.spec.size)})


@widgets.reconcile
async def reconcile(ctx: Context[Widget], widget: Widget) -> Result:
    await ctx.apply(config_map_for(widget))
    widget.status.ready = True
    widget.status.observed_generation = widget.metadata.generation
    await ctx.update_status(widget)
    return Result()


manager = Manager([widgets], settings=ManagerSettings(name="widget-operator"))
