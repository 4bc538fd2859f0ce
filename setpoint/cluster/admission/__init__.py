"""The built-in admission plugins: steps every write passes after defaulting, before validation.

Each plugin is a callable given the admission attributes
(:class:`setpoint.cluster.registry.admissionpoints.Attributes`: operation, resource type,
object, old object, requesting user) that may mutate the object or raise a StatusError, as
the apiserver's mutating and validating admission plugins do. Each is built with only what
it reads (``setpoint.cluster.apiserver`` wires them); ``webhook/`` holds the admission
webhooks.
"""
