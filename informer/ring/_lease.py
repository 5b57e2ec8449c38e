"""A member's own Lease: how ``held`` and ``epoch`` are written on it, how a member's Lease is
read back, and the keeper that renews it (a ``LeaderElector`` campaigning for a Lease nobody
else wants, with the member's claims on every write)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from informer._log import error_fields
from informer.errors import ApiError, Conflict, NotFound, TransportError
from informer.leader_election import LeaderElector
from informer.objects import KubeObject
from informer.resource import LEASES
from informer.shards import ShardRange, ShardSet, format_hash, parse_hash

__all__ = [
    "ASSIGNMENT",
    "EPOCH",
    "HELD",
    "RING_LABEL",
    "MemberLease",
    "Observed",
    "format_held",
    "lease_name",
    "parse_held",
    "read_member",
]

RING_LABEL = "ring.kube-informer.io/name"
HELD = "ring.kube-informer.io/held"
EPOCH = "ring.kube-informer.io/epoch"
ASSIGNMENT = "ring.kube-informer.io/assignment"  # e.g. "rendezvous-bounded/128"

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


def lease_name(ring: str, identity: str) -> str:
    """The member Lease's name: ``<ring>-<identity>`` (both must make a DNS subdomain name)."""
    name = f"{ring}-{identity}"
    if len(name) > 253 or not _NAME.match(name):
        raise ValueError(
            f"ring {ring!r} and identity {identity!r} do not make a Lease name "
            "(lowercase letters, digits, '-' and '.')"
        )
    return name


def format_held(held: ShardSet) -> str:
    """``start-end`` pairs in canonical hex, comma-separated (empty for nothing held)."""
    return ",".join(f"{format_hash(r.start)}-{format_hash(r.end)}" for r in held)


def parse_held(text: object) -> ShardSet | None:
    """The ranges of a ``held`` annotation; None when it is not readable (a member whose claims
    cannot be read is treated as claiming everything: see ``Observed.claims``)."""
    if not isinstance(text, str):
        return None
    if not text:
        return ShardSet()
    try:
        ranges = []
        for pair in text.split(","):
            start, _, end = pair.partition("-")
            ranges.append(ShardRange(parse_hash(start), parse_hash(end)))
    except ValueError:
        return None
    return ShardSet(ranges)


@dataclass(frozen=True, slots=True)
class Observed:
    """Another member as this member last read it."""

    identity: str
    resource_version: str
    seen_at: float  # when this member first saw that resource_version (its own clock)
    duration: float  # the Lease's leaseDurationSeconds
    held: ShardSet | None  # None: unreadable
    epoch: int
    released: bool

    def live(self, now: float) -> bool:
        return not self.released and now < self.seen_at + self.duration

    def expires_at(self) -> float:
        return self.seen_at + self.duration

    def claims(self) -> ShardSet:
        """What this member must be assumed to act on while it is live."""
        return ShardSet.full() if self.held is None else self.held


def read_member(lease: KubeObject, previous: Observed | None, now: float) -> Observed | None:
    """The member a ring Lease shows (None when it has no usable identity)."""
    spec: Any = lease.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    holder = spec.get("holderIdentity")
    annotations: Any = lease.get("metadata", {}).get("annotations")
    annotations = annotations if isinstance(annotations, Mapping) else {}
    identity = holder if isinstance(holder, str) and holder else None
    if identity is None:  # released: the name is still the member's
        identity = previous.identity if previous is not None else lease.name
    duration = spec.get("leaseDurationSeconds")
    if not isinstance(duration, int | float) or isinstance(duration, bool) or duration <= 0:
        duration = math.inf  # no usable duration: never presumed dead
    epoch = annotations.get(EPOCH)
    rv = lease.resource_version
    seen = previous.seen_at if previous is not None and previous.resource_version == rv else now
    return Observed(
        identity=identity,
        resource_version=rv,
        seen_at=seen,
        duration=float(duration),
        held=parse_held(annotations.get(HELD)),
        epoch=int(epoch) if isinstance(epoch, str) and epoch.isdigit() else 0,
        released=holder is None or holder == "",
    )


class MemberLease(LeaderElector):
    """Keeps the member's own Lease: the leader election's renewal rules, the ring's label, and
    the member's claims (``held``, ``epoch``) on every write; released by deleting it."""

    def __init__(
        self,
        *args: Any,
        ring: str,
        assignment: str,
        claims: Callable[[], tuple[ShardSet, int]],
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.ring = ring
        self.assignment = assignment
        self._claims = claims

    def _annotate(self, metadata: dict[str, Any]) -> None:
        held, epoch = self._claims()
        metadata["labels"] = {**(metadata.get("labels") or {}), RING_LABEL: self.ring}
        metadata["annotations"] = {
            **(metadata.get("annotations") or {}),
            HELD: format_held(held),
            EPOCH: str(epoch),
            ASSIGNMENT: self.assignment,
        }

    async def _release(self) -> None:
        """Delete the Lease (conditional on the version last written): the member left."""
        lease = self._lease
        if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
            return
        try:
            await self.client.delete(
                LEASES, self.name, self.namespace, resource_version=lease.resource_version
            )
        except (NotFound, Conflict):
            return
        except (ApiError, TransportError) as exc:
            self._log.warning("ring.leave_failed", **error_fields(exc))
            return
        self._log.info("ring.left")
