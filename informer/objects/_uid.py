"""A compressed object's uid, held as the 128-bit int of its UUID (48 bytes where its text took
96 with the allocator's rounding: ``KubeObject._packed``).

Kubernetes uids are lowercase canonical UUIDs; one in any other form (uppercase, another length,
not a UUID at all: the API does not forbid it) is held as its text. ``uid_text`` gives the exact
text back: a value is held as an int only when formatting the int gives its text again (the
canonical lowercase form is exactly the text that formatting gives back).
"""

from __future__ import annotations

import re

_canonical = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").fullmatch


def uid_value(uid: str) -> int | str:
    """What a compressed object holds for ``uid`` (every packed object: one match, not a
    format of the int and a comparison, half the time)."""
    if _canonical(uid) is not None:
        return int(uid.replace("-", ""), 16)
    return uid


def uid_text(held: int | str) -> str:
    """The uid ``held`` stands for."""
    if isinstance(held, str):
        return held
    h = f"{held:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
