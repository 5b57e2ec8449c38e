"""Store partitions (a sharded informer's reflectors behind one store) under random interleavings
of their watches, relists and bookmarks, with objects deleted and recreated under the same name
(a new uid: another hash, another partition).

Invariants, after every step:
- freshness: for every key, the last write at or below the store's RV is reflected: a written
  version is held at that RV or newer (or a later deletion has arrived), a deleted incarnation
  is gone (a newer one may be held);
- the store's RV never goes back, and never passes a partition's RV;
- every object held is a version that was written, of the key it is held under.
And once every partition has caught up: the store holds exactly the newest state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from informer.objects import KubeObject
from informer.shards import HASH_SPACE, ShardField, ShardRange, ShardSet, hash_value
from informer.store import Store, StorePartition

HALF = 1 << 63
RANGES = (ShardSet([ShardRange(0, HALF)]), ShardSet([ShardRange(HALF, HASH_SPACE)]))
KEYS = ("a", "b", "c")


@dataclass(frozen=True)
class Write:
    rv: int
    key: str
    uid: str
    deleted: bool
    data: int

    def obj(self) -> KubeObject:
        meta = {
            "name": self.key,
            "namespace": "ns",
            "uid": self.uid,
            "resourceVersion": str(self.rv),
        }
        return KubeObject.from_dict(
            {
                "kind": "ConfigMap",
                "apiVersion": "v1",
                "metadata": meta,
                "data": {"v": str(self.data)},
            }
        )


def part_of(uid: str) -> int:
    return 0 if hash_value(uid) < HALF else 1


class World:
    """The server: writes by revision, and each partition's pending watch events."""

    def __init__(self) -> None:
        self.rv = 1
        self.writes: list[Write] = []
        self.live: dict[str, Write] = {}
        self.queues: tuple[list[Write], list[Write]] = ([], [])
        self.uids = 0

    def write(self, key: str, action: str) -> None:
        self.rv += 1
        current = self.live.get(key)
        if current is None:
            self.uids += 1
            w = Write(self.rv, key, f"uid-{self.uids}", False, 0)
        elif action == "delete":
            w = Write(self.rv, key, current.uid, True, current.data)
        else:
            w = Write(self.rv, key, current.uid, False, current.data + 1)
        if w.deleted:
            del self.live[key]
        else:
            self.live[key] = w
        self.writes.append(w)
        self.queues[part_of(w.uid)].append(w)

    def state_of(self, part: int) -> list[Write]:
        return [w for w in self.live.values() if part_of(w.uid) == part]


def check(store: Store, world: World, parts: list[StorePartition], last_rv: int) -> int:
    rv = int(store.resource_version or "0")
    assert rv >= last_rv  # never goes back
    for p in parts:
        if p.resource_version:
            assert rv <= int(p.resource_version)
    written = {(w.key, w.rv): w for w in world.writes if not w.deleted}
    for obj in store.list():
        w = written.get((obj.name, int(obj.resource_version)))
        assert w is not None and w.uid == obj.uid
    if not rv:
        return rv
    for key in KEYS:
        below = [w for w in world.writes if w.key == key and w.rv <= rv]
        if not below:
            continue
        last = below[-1]
        held = store.get(key, "ns")
        if last.deleted:
            assert held is None or int(held.resource_version) > last.rv
        elif held is None:  # only if a later deletion has arrived already (the cache is ahead)
            assert any(w.deleted and w.rv > last.rv for w in world.writes if w.key == key)
        else:
            assert int(held.resource_version) >= last.rv
    return rv


steps = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.sampled_from(KEYS), st.sampled_from(["update", "delete"])),
        st.tuples(st.just("deliver"), st.sampled_from([0, 1]), st.just("")),
        st.tuples(st.just("relist"), st.sampled_from([0, 1]), st.just("")),
        st.tuples(st.just("bookmark"), st.sampled_from([0, 1]), st.just("")),
    ),
    max_size=60,
)


@settings(max_examples=300)
@given(steps, st.lists(st.sampled_from([0, 1]), max_size=200))
def test_partitions_keep_the_store_fresh_under_any_interleaving(
    plan: list[tuple[str, Any, str]], drain: list[int]
) -> None:
    store = Store()
    parts = [store.partition(r, ShardField.UID) for r in RANGES]
    world = World()
    for p in (0, 1):  # the first lists
        parts[p].replace([], str(world.rv), is_initial=True)
    last = check(store, world, parts, 0)
    for what, arg, action in plan:
        if what == "write":
            world.write(arg, action)
        elif what == "deliver" and world.queues[arg]:
            w = world.queues[arg].pop(0)
            parts[arg].apply_event("DELETED" if w.deleted else "MODIFIED", w.obj())
        elif what == "relist":  # a consistent list of the partition's ranges, at the newest RV
            parts[arg].replace([w.obj() for w in world.state_of(arg)], str(world.rv))
            world.queues[arg].clear()
        elif what == "bookmark" and not world.queues[arg]:
            parts[arg].advance(str(world.rv))
        last = check(store, world, parts, last)
    for p in [*drain, 0, 1]:  # the watches catch up, in any order
        while world.queues[p]:
            w = world.queues[p].pop(0)
            parts[p].apply_event("DELETED" if w.deleted else "MODIFIED", w.obj())
            last = check(store, world, parts, last)
            if p in drain:
                break
    for p in (0, 1):
        while world.queues[p]:
            w = world.queues[p].pop(0)
            parts[p].apply_event("DELETED" if w.deleted else "MODIFIED", w.obj())
        parts[p].advance(str(world.rv))
    check(store, world, parts, last)
    assert store.resource_version == str(world.rv)
    held = {(o.name, o.uid, o.resource_version) for o in store.list()}
    assert held == {(w.key, w.uid, str(w.rv)) for w in world.live.values()}
    for p, part in enumerate(parts):
        assert {store.get(k.split("/")[1], "ns").uid for k in part.keys()} == {  # type: ignore[union-attr]
            w.uid for w in world.state_of(p)
        }


def test_a_partition_given_up_leaves_without_deltas_and_frees_the_rv() -> None:
    store = Store()
    low, high = (store.partition(r, ShardField.UID) for r in RANGES)
    world = World()
    for key in KEYS:
        world.write(key, "update")
    low.replace([w.obj() for w in world.state_of(0)], str(world.rv), is_initial=True)
    assert store.resource_version == ""  # high has not listed: the store's RV waits for it
    high.replace([w.obj() for w in world.state_of(1)], "2", is_initial=True)
    assert store.resource_version == "2"
    count = len(world.state_of(1))
    assert store.drop_partition(high) == count
    assert len(store) == len(world.state_of(0))
    assert store.resource_version == str(world.rv)  # only low's RV counts now
    assert high.apply_event("ADDED", world.writes[0].obj()) is None  # detached: ignored
