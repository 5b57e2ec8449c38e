"""A compressed object's uid, held as the 128-bit int of its UUID (48 bytes where its text took
96 with the allocator's rounding: ``KubeObject._packed``).

Kubernetes uids are lowercase canonical UUIDs; one in any other form (uppercase, another length,
not a UUID at all: the API does not forbid it) is held as its text. ``uid_text`` gives the exact
text back: a value is held as an int only when formatting the int gives its text again.
"""

from __future__ import annotations


def uid_value(uid: str) -> int | str:
    """What a compressed object holds for ``uid``."""
    if len(uid) == 36:
        try:
            n = int(uid.replace("-", ""), 16)
        except ValueError:
            return uid
        if uid_text(n) == uid:
            return n
    return uid


def uid_text(held: int | str) -> str:
    """The uid ``held`` stands for."""
    if isinstance(held, str):
        return held
    h = f"{held:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
