"""The memcached operator: memcached pods behind an mcrouter proxy.

- :mod:`operators.memcached.resource`: the ``Memcached`` custom resource;
- :mod:`operators.memcached.mcrouter`: the proxy's configuration;
- :mod:`operators.memcached.objects`: the objects a Memcached owns;
- :mod:`operators.memcached.pods`, :mod:`operators.memcached.health`: what the pods say,
  and the conditions drawn from it;
- :mod:`operators.memcached.controller`: the reconcile;
- :mod:`operators.memcached.operator`: the Manager (``setpoint run
  operators.memcached.operator:manager``).
"""
