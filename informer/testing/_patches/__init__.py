"""Patch formats and field ownership, as pure functions of JSON documents.

``json_patches``: JSON merge patch (RFC 7386) and JSON patch (RFC 6902, as evanphx/json-patch v4
applies it); ``strategic``: strategic merge patch of built-in types; ``managed_fields``: field
sets and ``managedFields`` entries of writes and server-side apply. No registry, no HTTP.
"""
