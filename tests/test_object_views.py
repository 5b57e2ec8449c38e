"""The read-only views of an object's values answer exactly as a full decode of its JSON.

The views decode as far as they are read (a member or item when read; a large object or array
split one level at a time, ``informer.objects._frozen``). Whatever is read, in whatever order,
whatever the split threshold, with the object held plain, as a list item, a watch line or
compressed, each read returns what ``msgspec.json.decode`` of the whole JSON returns: values
and their types, key order, iteration, ``len``, ``in``, misses, slices, equality both ways,
``repr``, copies through the public API, unhashable and read-only. The JSON is generated as text:
odd keys (quotes, backslashes, control characters, unicode, empty, repeated), strings with and
without ``\\u`` escapes, integers beyond 64 bits, exponents, ``-0.0``, nested empties, whitespace.
"""

from __future__ import annotations

import gc
import json
import random
import sys
import tracemalloc
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from informer import objects
from informer._zstd import ZstdCodec
from informer.objects import KubeObject, _frozen, set_decoded_cache_size

# -- JSON as text ----------------------------------------------------------------------------

keys = st.text(max_size=6) | st.sampled_from(["", '"', "\\", "\x00\n\t", "é", "😀", "a/b", "k"])
strings = st.text(max_size=20) | st.sampled_from(["", "\\u0041", '"quoted"', "\u2028", "😀x"])
numbers = (
    st.integers(-(2**70), 2**70).map(str)
    | st.integers(-(2**64) - 5, 2**64 + 5).map(str)
    | st.sampled_from(["0", "-0", "-0.0", "1.5", "1e10", "1E-400", "2.5e+3", "0.1e1", "-7e-2"])
    | st.floats(allow_nan=False, allow_infinity=False).map(repr)
)
leaves = (
    st.tuples(st.just("lit"), st.sampled_from(["true", "false", "null"]))
    | st.tuples(st.just("num"), numbers)
    | st.tuples(st.just("str"), strings, st.booleans())
)
# ("arr", [node]) and ("obj", [(key, node, ascii)]): repeated keys allowed (the last one wins)
nodes = st.recursive(
    leaves,
    lambda inner: (
        st.tuples(st.just("arr"), st.lists(inner, max_size=5))
        | st.tuples(st.just("obj"), st.lists(st.tuples(keys, inner, st.booleans()), max_size=5))
    ),
    max_leaves=30,
)


def string(s: str, ascii_only: bool) -> str:
    return json.dumps(s, ensure_ascii=True) if ascii_only else msgspec.json.encode(s).decode()


def text(node: Any, rnd: random.Random) -> str:
    """``node`` as JSON, with random whitespace between tokens."""

    def ws() -> str:
        return rnd.choice(["", "", "", " ", "\n", "\t ", "\r\n  "])

    kind = node[0]
    if kind in ("lit", "num"):
        return str(node[1])
    if kind == "str":
        return string(node[1], node[2])
    if kind == "arr":
        return "[" + ws() + ("," + ws()).join(text(n, rnd) + ws() for n in node[1]) + "]"
    members = (ws() + string(k, a) + ws() + ":" + ws() + text(n, rnd) + ws() for k, n, a in node[1])
    return "{" + ",".join(members) + ws() + "}"


@st.composite
def documents(draw: st.DrawFn) -> tuple[bytes, dict[str, Any]]:
    """An object's JSON text holding generated values (``spec``, ``status``, an odd key) and
    what a full decode of it returns."""
    rnd = random.Random(draw(st.integers(0, 2**32)))
    parts = [
        ("spec", draw(nodes)),
        ("status", draw(nodes)),
        (draw(keys.filter(lambda k: k not in ("kind", "apiVersion", "metadata"))), draw(nodes)),
    ]
    body = ",".join(f"{json.dumps(k)}:{text(n, rnd)}" for k, n in parts)
    raw = (
        '{"kind":"Thing","apiVersion":"v1","metadata":{"name":"t","resourceVersion":"1"},'
        + body
        + "}"
    ).encode()
    return raw, msgspec.json.decode(raw)


_codec = ZstdCodec(b"", 3)


def forms(raw: bytes) -> list[KubeObject]:
    """The object held each way: its JSON, a list item, a watch line, compressed."""
    item = raw.replace(b'"kind":"Thing","apiVersion":"v1",', b"")
    packed = KubeObject.from_raw(raw)
    packed._pack_in_place(_codec.compress(raw), _codec, packed._meta())
    assert packed.compressed
    return [
        KubeObject.from_raw(raw),
        KubeObject.from_list_item(item, "Thing", "v1"),
        KubeObject.from_event_line(b'{"type":"ADDED","object":' + raw + b"}")[1],
        packed,
    ]


# -- reading a view as a reconcile might -----------------------------------------------------


def same(got: Any, want: Any) -> None:
    """One read: a read-only view of an object or array, else the very value (type and repr:
    ``True`` is not ``1``, ``-0.0`` not ``0.0``, a big integer not a float)."""
    if isinstance(want, dict):
        assert isinstance(got, Mapping) and not isinstance(got, dict)
    elif isinstance(want, list):
        assert isinstance(got, Sequence) and not isinstance(got, list)
    else:
        assert type(got) is type(want) and repr(got) == repr(want)


def explore(view: Any, want: Any, data: st.DataObject, depth: int = 0) -> None:
    """Random reads of ``view`` (and of what they return), each checked against ``want``."""
    same(view, want)
    if not isinstance(want, dict | list) or depth > 6:
        return
    ops = ["read", "read", "read", "keys", "eq", "repr", "copy", "frozen", "miss", "in"]
    ops += ["slice", "iter", "reversed"] if isinstance(want, list) else ["items"]
    for op in data.draw(st.lists(st.sampled_from(ops), max_size=5)):
        if op == "read" and want:
            if isinstance(want, dict):
                key: Any = data.draw(st.sampled_from(list(want)))
            else:
                key = data.draw(st.integers(-len(want), len(want) - 1))
            got = view[key]
            same(got, want[key])
            if data.draw(st.booleans()):
                explore(got, want[key], data, depth + 1)
        elif op == "keys":
            assert len(view) == len(want) and list(view) == list(want)
        elif op == "eq":
            assert view == want and want == view and not (view != want)
            assert view != (["x"] if isinstance(want, dict) else {"x": 1})
            if isinstance(want, list):
                assert view == tuple(want)
        elif op == "repr":
            assert repr(view) == repr(want) and str(view) == str(want)
        elif op == "copy":  # through the public API: a mapping holding the view, as a body
            copied = KubeObject.from_dict({"metadata": {"name": "c"}, "v": view})
            assert copied.to_dict()["v"] == want and copied["v"] == want
            assert msgspec.json.decode(copied.raw)["v"] == want
        elif op == "frozen":
            with pytest.raises(TypeError):
                hash(view)
            with pytest.raises(TypeError):
                view[0 if isinstance(want, list) else "k"] = 1
        elif op == "miss":
            if isinstance(want, dict):
                missing = data.draw(keys.filter(lambda k: k not in want))
                assert missing not in view and view.get(missing, view) is view
                with pytest.raises(KeyError):
                    view[missing]
            else:
                with pytest.raises(IndexError):
                    view[len(want)]
        elif op == "in" and want:
            if isinstance(want, dict):
                assert all(k in view for k in want)
            else:
                assert data.draw(st.sampled_from(want)) in view
        elif op == "items":
            assert list(view.items()) == list(want.items())
            assert list(view.values()) == list(want.values())
        elif op == "slice":
            a, b = data.draw(st.integers(-6, 6)), data.draw(st.integers(-6, 6))
            step = data.draw(st.sampled_from([None, 1, 2, -1]))
            part = view[a:b:step]
            assert part == want[a:b:step] and len(part) == len(want[a:b:step])
            for got, w in zip(part, want[a:b:step], strict=True):
                same(got, w)
        elif op == "iter":
            for got, w in zip(view, want, strict=True):
                same(got, w)
        elif op == "reversed":
            assert list(reversed(view)) == list(reversed(want))


@settings(max_examples=100, deadline=None)
@given(documents(), st.sampled_from([0, 1, 16, 256]), st.sampled_from([0, 2, 256]), st.data())
def test_views_read_as_far_as_read_equal_the_full_decode(
    doc: tuple[bytes, dict[str, Any]], small: int, memo: int, data: st.DataObject
) -> None:
    raw, want = doc
    previous, previous_small = set_decoded_cache_size(memo), _frozen._SMALL
    _frozen._SMALL = small
    try:
        for o in forms(raw):
            objects._memo.clear()
            for _ in range(data.draw(st.integers(1, 3))):  # again: from the memo, as far as read
                key = data.draw(st.sampled_from(list(want)))
                explore(o[key], want[key], data)
            assert list(o) == list(want) and o == want and o.to_dict() == want
            assert all(o[k] == want[k] and repr(o[k]) == repr(want[k]) for k in want)
    finally:
        _frozen._SMALL = previous_small
        set_decoded_cache_size(previous)


def test_a_number_out_of_range_raises_only_when_the_value_holding_it_is_read() -> None:
    """JSON a skipping scan takes but a decode refuses (a top-level number out of range, a
    nested one): the other members still read; the value holding it raises when read."""
    pad = "p" * 1100  # the spec is split, not decoded whole
    raw = (
        b'{"kind":"Thing","apiVersion":"v1","metadata":{"name":"t","namespace":"ns"},'
        b'"spec":{"deep":{"x":1e999},"ok":1,"pad":"%s"},"n":1e999,"m":2}' % pad.encode()
    )
    for o in forms(raw):
        objects._memo.clear()
        assert o["metadata"]["name"] == "t" and o["m"] == 2 and list(o)[-1] == "m"
        assert o["spec"]["ok"] == 1 and o["spec"]["pad"] == pad
        with pytest.raises(msgspec.DecodeError):
            o["n"]
        with pytest.raises(msgspec.DecodeError):
            o["spec"]["deep"]


# -- what a kept view holds ------------------------------------------------------------------


def _big(i: int) -> bytes:
    """An object whose spec holds a large array of large objects (split, not decoded whole),
    beside 20 KB of other members: about 24 KB of JSON."""
    items = [{"name": f"c{j}", "image": f"registry/{i}/{j}:" + "x" * 1200} for j in range(3)]
    return msgspec.json.encode(
        {
            "kind": "Thing",
            "apiVersion": "v1",
            "metadata": {"name": f"t{i}", "namespace": "ns", "resourceVersion": "1"},
            "spec": {"containers": items, "other": "y" * 10_000},
            "status": {"blob": "z" * 10_000},
        }
    )


def test_a_kept_view_holds_about_its_own_json_not_the_whole_objects() -> None:
    """A compressed object is decompressed to be read; a view kept after the memo let the
    object go holds its own slice (copied), not the 20 KB decompressed JSON."""
    previous = set_decoded_cache_size(256)
    try:
        objs = forms(_big(0))[3:] + [forms(_big(i))[3] for i in range(1, 100)]
        objects._memo.clear()
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        kept = []
        for o in objs:
            containers = o["spec"]["containers"]
            assert containers[1]["name"] == "c1"  # split twice: containers, then containers[1]
            kept.append(containers)
        objects._memo.clear()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        assert [c[2]["name"] for c in kept] == ["c2"] * len(objs)
        # each kept view: its containers' ~3.7 KB of JSON (and a copy of the item split for
        # containers[1]), not the 24 KB the object decompresses to
        assert held < len(objs) * 10_000, held
    finally:
        set_decoded_cache_size(previous)


def test_a_view_of_an_object_read_before_it_is_packed_does_not_keep_its_list_page() -> None:
    """An object about to be packed holds a slice of its list page: what is read from it (the
    memo's split, the views) is cut from a copy, so the page goes once its objects have."""
    page = b'{"items":[%s]}' % b",".join(
        _big(i).replace(b'"kind":"Thing","apiVersion":"v1",', b"") for i in range(5)
    )
    base = sys.getrefcount(page)
    raws = msgspec.json.decode(page, type=dict[str, list[msgspec.Raw]])["items"]
    objs = KubeObject._to_pack_items(raws, "Thing", "v1", None, None, {})
    del raws
    assert sys.getrefcount(page) > base  # the objects hold slices of it
    views = [o["spec"]["containers"] for o in objs]
    assert [v[0]["name"] for v in views] == ["c0"] * 5
    assert all(o["status"] == msgspec.json.decode(_big(i))["status"] for i, o in enumerate(objs))
    for o in objs:
        o._settle()  # not packed: its own bytes now
    assert sys.getrefcount(page) == base
    assert [v[2]["image"].startswith("registry/") for v in views] == [True] * 5
