"""The Widget operator of the benchmark, written with the runtime (shared by tests)."""

from __future__ import annotations

from setpoint.resources import CustomResource, Model
from setpoint.resources.models.core_v1 import ConfigMap
from setpoint.runtime import Context, Controller, Result


class WidgetSpec(Model):
    size: int = 1
    message: str = ""


class WidgetStatus(Model):
    ready: bool = False
    observed_generation: int | None = None


class Widget(CustomResource, group="bench.setpoint.dev", version="v1"):
    spec: WidgetSpec
    status: WidgetStatus = WidgetStatus()


def config_map_for(widget: Widget) -> ConfigMap:
    return ConfigMap(name=f"{widget.metadata.name}-cfg",
                     data={"message": widget.spec.message, "size": str(widget.spec.size)})


def widget_controller(name: str = "widget") -> Controller[Widget]:
    ctrl = Controller.for_(Widget, name=name).owns(ConfigMap)

    @ctrl.reconcile
    async def reconcile(ctx: Context[Widget], widget: Widget) -> Result:
        await ctx.apply(config_map_for(widget))
        widget.status.ready = True
        widget.status.observed_generation = widget.metadata.generation
        await ctx.update_status(widget)
        return Result()

    return ctrl
