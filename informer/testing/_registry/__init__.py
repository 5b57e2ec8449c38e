"""The registry: served resources and the rules of writing them.

``registry``: a ``Strategy`` per resource and the create/update/patch/delete rules around it,
committing to storage and letting the lifecycle controllers react; ``apply``: server-side apply
on top of it. Imports storage, catalog, schemas, patches and lifecycle; nothing from HTTP.
"""
