"""What the server knows about each resource it serves.

``specs``: ``ResourceSpec`` (discovery names, verbs, subresources, generation, default
propagation, printer columns, field labels) and the built-ins served at start; ``crd``: the
specs a CustomResourceDefinition serves, its validation and accepted status.
"""
