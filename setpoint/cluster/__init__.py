"""The embedded, Kubernetes-API-compatible cluster.

``async with serve() as cluster:`` starts one on a free loopback port and yields its
kubeconfig path and base URL.
"""

from setpoint.machinery import librarypatterns

# before any module of the server imports cryptography.x509 (docs/benchmarks.md, Start-up)
librarypatterns.prime_x509()

from setpoint.cluster.runner import RunningCluster, serve  # noqa: E402

__all__ = ["RunningCluster", "serve"]
