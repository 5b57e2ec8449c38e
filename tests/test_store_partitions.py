"""Store partitions (a sharded informer's reflectors behind one store) under random interleavings
of their watches, relists and bookmarks, with objects deleted and recreated under the same name
(a new uid: another hash, another partition).

Invariants, after every step:
- freshness: for every key, the last write at or below the store's RV is reflected: a written
  version is held at that RV or newer (or a later deletion has arrived), a deleted incarnation
  is gone (a newer one may be held);
- the store's RV never goes back, and never passes what a partition has seen of its ranges;
- every object held is a version that was written, of the key it is held under.
And once every partition has caught up: the store holds exactly the newest state.

Merging partitions (a sharded informer consolidating its lanes) keeps these, and what handlers
see stays a history: every delta follows from the ones before (no change delivered twice or
lost), each key's versions only move forward, and an object whose RV did not change gives none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from informer.objects import KubeObject
from informer.shards import HASH_SPACE, ShardField, ShardRange, ShardSet, hash_value
from informer.store import Delta, Store, StorePartition

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


def known_up_to(p: StorePartition) -> int:
    """The RV up to which the partition has seen every change of all its ranges (its own RV,
    or higher where every range is ahead of it after a merge)."""
    ahead = ShardSet(r for s, _ in p.ahead for r in s)
    if not p.ahead or p.shards - ahead:
        return int(p.resource_version)
    return max(int(p.resource_version), min(int(w) for _, w in p.ahead))


def check(store: Store, world: World, parts: list[StorePartition], last_rv: int) -> int:
    rv = int(store.resource_version or "0")
    assert rv >= last_rv  # never goes back
    for p in parts:
        if p.resource_version:
            assert rv <= known_up_to(p)
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


class Handlers:
    """What a handler sees: the deltas applied in order to a view of its own. Each delta must
    follow from the view (never an event twice, never one lost), and every key's versions only
    move forward (no time travel)."""

    def __init__(self) -> None:
        self.view: dict[str, KubeObject] = {}
        self.last_rv: dict[str, int] = {}

    def see(self, deltas: list[Delta] | Delta | None) -> None:
        for d in [deltas] if isinstance(deltas, Delta) else deltas or []:
            key = d.obj.key
            rv = int(d.obj.resource_version) if isinstance(d.obj, KubeObject) else 0
            if d.type == "added":
                assert key not in self.view, f"added twice: {key}"
                self.view[key] = d.obj  # type: ignore[assignment]
            elif d.type == "updated":
                assert self.view.get(key) is d.old, f"update of a version not seen: {key}"
                assert rv > int(d.old.resource_version)  # type: ignore[union-attr]
                self.view[key] = d.obj  # type: ignore[assignment]
            else:
                assert self.view.get(key) is d.old, f"delete of a version not seen: {key}"
                del self.view[key]
            if rv:
                assert rv > self.last_rv.get(key, 0), f"{key} went back to {rv}"
                self.last_rv[key] = rv


merge_steps = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.sampled_from(KEYS), st.sampled_from(["update", "delete"])),
        st.tuples(st.just("deliver"), st.sampled_from([0, 1, 2]), st.just("")),
        st.tuples(st.just("relist"), st.sampled_from([0, 1, 2]), st.just("")),
        st.tuples(st.just("bookmark"), st.sampled_from([0, 1, 2]), st.just("")),
        st.tuples(st.just("merge"), st.just(0), st.just("")),
    ),
    max_size=60,
)


@settings(max_examples=300)
@given(st.lists(st.sampled_from(["update", "delete"]), max_size=8), merge_steps)
def test_merging_partitions_delivers_every_change_once_and_never_goes_back(
    before: list[str], plan: list[tuple[str, Any, str]]
) -> None:
    """Two partitions' watches run; a third watch of the union lists at some point and keeps up
    aside (queue 2); at a random moment the partitions are merged with what it holds, whichever
    watch is ahead; the merged partition then goes on with the third watch's events."""
    store = Store()
    parts = [store.partition(r, ShardField.UID) for r in RANGES]
    world = World()
    handlers = Handlers()
    for i, action in enumerate(before):
        world.write(KEYS[i % len(KEYS)], action)
    for p in (0, 1):
        listed = [w.obj() for w in world.state_of(p)]
        handlers.see(parts[p].replace(listed, str(world.rv), is_initial=True))
    aside = Store()  # the union's list, kept up aside by its own watch (queue 2)
    aside.replace([w.obj() for w in world.live.values()], str(world.rv))
    union: list[Write] = []
    merged: StorePartition | None = None
    last = check(store, world, parts, 0)

    def write(key: str, action: str) -> None:
        world.write(key, action)
        union.append(world.writes[-1])

    for what, arg, action in plan:
        if what == "write":
            write(arg, action)
        elif what == "merge" and merged is None:
            merged, deltas = store.merge_partitions(parts, aside.list(), aside.resource_version)
            handlers.see(deltas)
            assert merged.shards == ShardSet.full()
            assert all(p.detached for p in parts)
            parts = [merged]
        elif arg == 2:
            target: Store | StorePartition = aside if merged is None else merged
            if what == "deliver" and union:
                w = union.pop(0)
                delta = target.apply_event("DELETED" if w.deleted else "MODIFIED", w.obj())
                handlers.see(delta if merged is not None else None)
            elif what == "relist":  # aside, nothing reaches the handlers
                deltas = target.replace([w.obj() for w in world.live.values()], str(world.rv))
                handlers.see(deltas if merged is not None else None)
                union.clear()
            elif what == "bookmark" and not union:
                target.advance(str(world.rv))
        elif merged is None:  # an old partition's watch, until the merge
            if what == "deliver" and world.queues[arg]:
                w = world.queues[arg].pop(0)
                handlers.see(
                    parts[arg].apply_event("DELETED" if w.deleted else "MODIFIED", w.obj())
                )
            elif what == "relist":
                handlers.see(
                    parts[arg].replace([w.obj() for w in world.state_of(arg)], str(world.rv))
                )
                world.queues[arg].clear()
            elif what == "bookmark" and not world.queues[arg]:
                parts[arg].advance(str(world.rv))
        last = check(store, world, parts, last)
        assert handlers.view == {o.key: o for o in store.list()}
    if merged is None:
        merged, deltas = store.merge_partitions(parts, aside.list(), aside.resource_version)
        handlers.see(deltas)
        last = check(store, world, [merged], last)
    while union:  # the merged watch catches up
        w = union.pop(0)
        handlers.see(merged.apply_event("DELETED" if w.deleted else "MODIFIED", w.obj()))
        last = check(store, world, [merged], last)
    merged.advance(str(world.rv))
    check(store, world, [merged], last)
    assert store.resource_version == str(world.rv)
    assert merged.ahead == []
    held = {(o.name, o.uid, o.resource_version) for o in store.list()}
    assert held == {(w.key, w.uid, str(w.rv)) for w in world.live.values()}
    assert handlers.view == {o.key: o for o in store.list()}
    assert sorted(merged.keys()) == sorted(store.keys())


# -- a partition judges events by the same rule as a plain store --------------------------------
RVS = st.one_of(
    st.integers(1, 12).map(str),  # comparable, most of the time
    st.sampled_from(["", "07", "a1", "1.5"]),  # opaque: the writer switches to equality for good
)
events = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["ADDED", "MODIFIED", "DELETED"]), st.sampled_from(KEYS), RVS),
        st.tuples(st.just("BOOKMARK"), st.just(""), RVS),
    ),
    max_size=40,
)


def versioned(key: str, rv: str) -> KubeObject:
    meta = {"name": key, "namespace": "ns", "uid": f"uid-{key}", "resourceVersion": rv}
    return KubeObject.from_dict({"kind": "ConfigMap", "apiVersion": "v1", "metadata": meta})


@settings(max_examples=300)
@given(
    st.none() | st.tuples(st.lists(st.tuples(st.sampled_from(KEYS), RVS), max_size=3), RVS),
    events,
)
def test_a_partition_drops_and_applies_the_events_a_plain_store_does(
    listed: tuple[list[tuple[str, str]], str] | None, sequence: list[tuple[str, str, str]]
) -> None:
    plain = Store()
    part = Store().partition(ShardSet([ShardRange(0, HASH_SPACE)]), ShardField.UID)
    if listed is not None:
        objs = [versioned(key, rv) for key, rv in listed[0]]
        plain.replace(objs, listed[1], is_initial=True)
        part.replace(objs, listed[1], is_initial=True)
    for type, key, rv in sequence:
        if type == "BOOKMARK":
            plain.advance(rv)
            part.advance(rv)
        else:
            obj = versioned(key, rv)
            a, b = plain.apply_event(type, obj), part.apply_event(type, obj)
            assert (a is None) == (b is None)
            if a is not None and b is not None:
                assert (a.type, a.obj, a.old) == (b.type, b.obj, b.old)
        assert part.resource_version == plain.resource_version
        assert part.comparable == plain.comparable
        assert part.stats == plain.stats
        assert sorted(part.keys()) == sorted(plain.keys())
        assert all(part.get_by_key(k) is plain.get_by_key(k) for k in plain.keys())


def test_a_partition_reads_the_rv_of_another_partitions_list_item() -> None:
    """A list's items do not hold their RV; a copy another partition listed may be newer than
    this partition's own RV (a recreated object moved ranges), so its RV is read: an older
    event of the key is stale there, as it is against a copy holding its RV."""
    for listed in (
        KubeObject.from_list_item(versioned("a", "50").raw, "ConfigMap", "v1"),
        versioned("a", "50"),
    ):
        store = Store()
        everything = ShardSet([ShardRange(0, HASH_SPACE)])
        first, second = store.partition(everything), store.partition(everything)
        first.replace([listed], "50", is_initial=True)
        second.replace([], "10", is_initial=True)
        assert second.apply_event("MODIFIED", versioned("a", "30")) is None
        assert second.stats.stale_dropped == 1
        assert store.get_by_key("ns/a") is listed
