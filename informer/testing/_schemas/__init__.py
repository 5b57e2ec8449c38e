"""Object schemas and their validation.

``types``: the structure of the built-in types (patch merge keys, list types, what is a map),
for validation, strategic merge patch and managed fields; ``validation``: names, labels,
required fields and unknown fields of built-in objects, as the apiserver refuses them;
``builtin_schemas``: the published schemas of the built-in types; ``known_fields``: their
fields, as the strict decoder and server-side apply know them; ``key_order``: the order of
the keys in answers (maps sorted, as Go encodes them).
"""
