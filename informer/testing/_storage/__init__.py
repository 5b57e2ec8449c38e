"""Storage: the etcd of the test server.

``store`` keeps objects by resource and key with one global revision, the change log and the
encodings a LIST or WATCH sends; ``history`` adds what depends on time and personality
(compaction by count or age, ``restore``, the lagging views of a stale replica, the waits for a
revision). Nothing here knows the API's rules or HTTP; it imports only ``_status``, ``_options``
and ``_signals`` beside itself.
"""
