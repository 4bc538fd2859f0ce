"""The embedded, Kubernetes-API-compatible cluster.

``async with serve() as cluster:`` starts one on a free loopback port and yields its
kubeconfig path and base URL.
"""

from setpoint.cluster.runner import RunningCluster, serve

__all__ = ["RunningCluster", "serve"]
