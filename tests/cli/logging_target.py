"""An operator whose reconcile writes, records an event and sets a condition (for the
log tests): a Gadget gets a ConfigMap ``<name>-cfg`` and a ``Ready`` condition."""

from __future__ import annotations

from setpoint.resources import ConditionedStatus, CustomResource, Model
from setpoint.resources.models.core_v1 import ConfigMap
from setpoint.runtime import Context, Controller, Manager, ManagerSettings, Result


class GadgetSpec(Model):
    message: str = ""


class GadgetStatus(ConditionedStatus):
    pass


class Gadget(CustomResource, group="logs.setpoint.dev", version="v1"):
    spec: GadgetSpec
    status: GadgetStatus = GadgetStatus()


gadgets = Controller.for_(Gadget, name="gadget").owns(ConfigMap)


@gadgets.reconcile
async def reconcile(ctx: Context[Gadget], gadget: Gadget) -> Result:
    _, operation = await ctx.create_or_update(
        ConfigMap(name=f"{gadget.metadata.name}-cfg", data={"message": gadget.spec.message}))
    if operation != "unchanged":
        ctx.events.normal("ConfigMapWritten", f"ConfigMap {operation}")
    ctx.set_condition("Ready", True, reason="ConfigMapWritten")
    await ctx.update_status(gadget)
    return Result()


manager = Manager([gadgets], settings=ManagerSettings(name="gadget-operator"))
