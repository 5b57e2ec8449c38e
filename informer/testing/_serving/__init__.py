"""HTTP serving: what turns requests into the registry's and storage's answers.

``routing`` (paths, verbs, recording, dispatch), ``content`` and ``protobuf`` (content types),
``lists`` and ``watches`` (LIST/GET and WATCH serving), ``writes`` (create, update, patch,
delete), ``discovery``, ``openapi``, ``tables`` (kubectl's Table answers), ``faults`` (how fault
rules change answers). The top layer under ``server``.
"""
