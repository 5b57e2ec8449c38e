"""Random chaos schedules: generated from a seed, printable, replayable.

A schedule is data only: the server's personality and settings, the informers (scope, paging,
list strategy), the writers' workload and a timeline of faults. ``Schedule.generate(seed)``
always returns the same schedule for the same seed; ``harness.run_schedule`` executes it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any, Literal

NAMESPACES = ("ns-a", "ns-b", "ns-c")
TIERS = ("a", "b")
PERSONALITIES = ("modern", "legacy", "no-watch-list", "stale-replica")

# Fault kinds and how often each is drawn (weights).
FAULT_KINDS: dict[str, int] = {
    "list_410_first": 3,
    "list_410_continue": 3,
    "watch_410_http": 3,
    "watch_410_event": 3,
    "list_429": 3,
    "watch_429": 2,
    "list_5xx": 3,
    "continue_5xx": 2,
    "watch_5xx": 2,
    "list_504_too_large": 2,
    "watch_stall": 2,
    "watch_cut_mid_line": 3,
    "watch_close_early": 3,
    "watch_malformed_line": 2,
    "watch_replay_stale": 3,
    "watch_duplicates": 2,
    "list_lagging": 3,
    "list_cut_mid_page": 2,
    "continue_cut_mid_page": 2,
    "watch_oversized_line": 2,
    "live_cut": 3,
    "live_stall": 2,
    "live_410_event": 2,
    "live_malformed_line": 1,
    "compact": 3,
    "restart": 2,
    "restore": 1,
}

# Faults that change the server itself rather than adding a rule.
SERVER_ACTIONS = frozenset(
    {
        "compact",
        "restart",
        "restore",
        "live_cut",
        "live_stall",
        "live_410_event",
        "live_malformed_line",
    }
)


@dataclass(frozen=True, slots=True)
class InformerSpec:
    """One informer of the schedule: its scope and how it lists."""

    namespace: str | None
    label_selector: str | None
    page_size: int
    list_strategy: Literal["auto", "list", "stream"]
    watch_timeout: tuple[int, int]
    compressed: bool = False  # objects held compressed (a dictionary after a few objects)

    def describe(self) -> str:
        scope = self.namespace or "*"
        sel = f" -l {self.label_selector}" if self.label_selector else ""
        return (
            f"{scope}{sel} page={self.page_size} {self.list_strategy} "
            f"timeout={self.watch_timeout[0]}-{self.watch_timeout[1]}s"
            + (" compressed" if self.compressed else "")
        )

    def selects(self, namespace: str, labels: dict[str, str]) -> bool:
        """Whether an object in ``namespace`` with ``labels`` is in this informer's scope."""
        if self.namespace is not None and namespace != self.namespace:
            return False
        if self.label_selector is None:
            return True
        key, _, value = self.label_selector.partition("=")
        if key.endswith("!"):
            return labels.get(key[:-1]) != value
        return labels.get(key) == value


@dataclass(frozen=True, slots=True)
class FaultStep:
    """A fault injected once the writers have done ``at_op`` operations in total."""

    at_op: int
    kind: str
    nth: int = 1
    times: int = 1
    after_events: int = 0
    arg: int = 0

    def describe(self) -> str:
        extra = f" nth={self.nth} times={self.times}" if self.kind not in SERVER_ACTIONS else ""
        if self.after_events:
            extra += f" after={self.after_events}"
        if self.arg:
            extra += f" arg={self.arg}"
        return f"@{self.at_op} {self.kind}{extra}"


@dataclass(frozen=True, slots=True)
class Schedule:
    """Everything one chaos run does, derived from ``seed``."""

    seed: int
    personality: str
    compaction_window: int | None
    bookmark_interval: float
    initial_objects: int
    informers: tuple[InformerSpec, ...]
    writers: int
    ops_per_writer: int
    faults: tuple[FaultStep, ...] = field(default=())
    keys_per_namespace: int = 4  # each writer's names per namespace (1: one hot key each)
    controller: bool = False  # also run the child-per-parent controller (tests/chaos/operator)

    @property
    def total_ops(self) -> int:
        return self.writers * self.ops_per_writer

    def describe(self) -> str:
        lines = [
            f"seed {self.seed}: personality={self.personality} "
            f"compaction_window={self.compaction_window} bookmarks={self.bookmark_interval}s "
            f"initial={self.initial_objects} writers={self.writers}x{self.ops_per_writer}"
            + (" +controller" if self.controller else ""),
            *(f"  informer {spec.describe()}" for spec in self.informers),
            *(f"  fault {step.describe()}" for step in self.faults),
        ]
        return "\n".join(lines)

    @classmethod
    def generate(cls, seed: int) -> Schedule:
        rng = random.Random(seed)
        personality = rng.choice(PERSONALITIES)
        informers = tuple(_informer(rng, personality) for _ in range(rng.randint(1, 3)))
        # a third of the informers hold their objects compressed; drawn from a generator of
        # their own, so that every other part of a seed's schedule stays what it was
        zrng = random.Random(f"compressed-{seed}")
        informers = tuple(replace(i, compressed=zrng.random() < 0.35) for i in informers)
        writers = rng.randint(1, 3)
        ops = rng.randint(15, 45)
        total = writers * ops
        kinds = list(FAULT_KINDS)
        weights = [FAULT_KINDS[k] for k in kinds]
        steps: list[FaultStep] = []
        for _ in range(rng.randint(1, 6)):
            kind = rng.choices(kinds, weights)[0]
            if kind == "restore" and personality == "stale-replica":
                kind = "compact"  # a lagging replica after a restore is beyond the contract
            steps.append(
                FaultStep(
                    at_op=rng.randint(0, total - 1),
                    kind=kind,
                    nth=rng.randint(1, 3),
                    times=rng.randint(1, 2),
                    after_events=rng.randint(0, 3),
                    arg=rng.randint(1, 4),
                )
            )
        if sum(s.kind == "restore" for s in steps) > 1:  # one etcd restore per run is plenty
            first = next(i for i, s in enumerate(steps) if s.kind == "restore")
            steps = [s for i, s in enumerate(steps) if s.kind != "restore" or i == first]
        steps.sort(key=lambda s: s.at_op)
        controller = rng.random() < 0.35
        if controller:  # a restore also undoes the controller's writes: out of its contract
            steps = [replace(s, kind="compact") if s.kind == "restore" else s for s in steps]
        return cls(
            seed=seed,
            personality=personality,
            compaction_window=rng.choice((None, None, 15, 40)),
            bookmark_interval=rng.choice((0.2, 1.0, 60.0)),
            initial_objects=rng.randint(0, 30),
            informers=informers,
            writers=writers,
            ops_per_writer=ops,
            faults=tuple(steps),
            controller=controller,
        )


def _informer(rng: random.Random, personality: str) -> InformerSpec:
    namespace = rng.choice((None, None, *NAMESPACES[:2]))
    selector = rng.choice((None, None, "tier=a", "tier!=a"))
    strategy: Any = rng.choice(("auto", "list", "stream"))
    if strategy == "stream" and personality in ("legacy", "no-watch-list"):
        strategy = "auto"  # "stream" insists on streaming lists: for servers that have them
    timeout = rng.choice(((1, 2), (30, 30)))
    return InformerSpec(namespace, selector, rng.randint(1, 6), strategy, timeout)
