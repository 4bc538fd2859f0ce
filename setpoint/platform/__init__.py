"""``setpoint.platform``: tools for platform teams over application stacks.

The relationship graph of a stack (:class:`StackGraph`, read from a shared cache filled by
:func:`load_cache` once or kept current by :class:`Watch`), its resource figures
(``usage.py``, ``chargeback.py``) and the operator maturity check (``maturity.py``). It
uses the public SDK only: the client, the runtime's cache and informers, the resources'
relationship annotations, and the API machinery.
"""

from setpoint.platform.graph import Edge, NotFound, Stack, StackGraph
from setpoint.platform.kinds import ObjectRef
from setpoint.platform.snapshot import Watch, load_cache

__all__ = ["Edge", "NotFound", "ObjectRef", "Stack", "StackGraph", "Watch", "load_cache"]
