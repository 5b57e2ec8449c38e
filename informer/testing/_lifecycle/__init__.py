"""Object lifecycle: deletion rules and the control-plane loops.

``finalizers``: the finalizers the server itself understands; ``deletion``: graceful deletion,
finalizers, propagation policies, namespace rules; ``controllers``: garbage collector, namespace
controller and CRD cleanup, which act through the narrow ``Cluster`` protocol the registry
satisfies (so this package does not import the registry).
"""
