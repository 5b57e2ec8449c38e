"""``DropFields`` on an object's JSON bytes gives what dropping the fields from the decoded object
gives, and the head it reads on the way equals a plain decode, however the JSON is written.

The bytes are cut without decoding the object when the JSON is plain (compact, keys spelled as
they are); duplicate keys, escaped or spaced keys, equal members elsewhere, a member of the same
name nested elsewhere and deep paths must all give the same answer as the decoded object does
(whether the cut or the slow path gives it).
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from informer.transforms import DROP_MANAGED_FIELDS, DropFields
from informer.transport._decode import _decode_line


class Pairs(list[tuple[str, Any]]):
    """An object as its (key, value) members: keys may repeat and be spelled in several ways."""


TRICKY = ['"managedFields":', '{"managedFields":[]}', "\\", "é✓", ",", "}"]
text = st.text(max_size=8) | st.sampled_from(TRICKY)
scalars = st.none() | st.booleans() | st.integers(-(2**31), 2**31) | text
KEYS = ["managedFields", "name", "namespace", "resourceVersion", "labels", "x", "status"]
keys = st.sampled_from(KEYS) | st.text(max_size=5)


def values(depth: int = 2) -> st.SearchStrategy[Any]:
    if depth == 0:
        return scalars
    inner = values(depth - 1)
    return scalars | st.lists(inner, max_size=3) | pairs(keys, inner)


def pairs(k: st.SearchStrategy[str], v: st.SearchStrategy[Any]) -> st.SearchStrategy[Pairs]:
    return st.lists(st.tuples(k, v), max_size=3).map(Pairs)


MANAGED = st.lists(pairs(st.sampled_from(["manager", "fieldsV1", "time"]), values(1)), max_size=2)


@st.composite
def objects(draw: st.DrawFn) -> Pairs:
    """An object's members, the managedFields-like ones in any place (or absent, or twice)."""
    managed = draw(MANAGED)
    head = [(k, draw(text)) for k in ("name", "namespace", "resourceVersion")]
    meta = Pairs(draw(st.lists(st.sampled_from(head), unique=True)))  # each maybe absent
    meta += draw(pairs(keys, values()))
    for _ in range(draw(st.integers(0, 2))):  # absent, once or a duplicate
        meta.insert(draw(st.integers(0, len(meta))), ("managedFields", draw(MANAGED | values())))
    members = Pairs([("metadata", meta)])
    if draw(st.booleans()):  # the same member nested elsewhere, maybe with the same value
        members.append(("spec", Pairs([("managedFields", managed), ("x", draw(values()))])))
    for key in ("kind", "apiVersion", "status", "spec"):
        if draw(st.booleans()):
            members.append((key, draw(st.sampled_from(["Pod", "v1", ""]) | values())))
    return Pairs(draw(st.permutations(members)))


SPELLINGS = ["plain", "escaped", "spaced"]


def write(value: Any, spelling: Any) -> bytes:
    """JSON text of a value whose objects are ``Pairs``; each key spelled as drawn."""
    if isinstance(value, list) and not isinstance(value, Pairs):
        return b"[" + b",".join(write(v, spelling) for v in value) + b"]"
    if not isinstance(value, Pairs):
        return msgspec.json.encode(value)
    out = []
    for key, v in value:
        how = spelling(st.sampled_from(SPELLINGS))
        if how == "escaped" and key and ord(key[0]) < 0xD800:
            k = b'"\\u%04x' % ord(key[0]) + msgspec.json.encode(key[1:])[1:]
        else:
            k = msgspec.json.encode(key)
        colon = b" : " if how == "spaced" else b":"
        out.append(k + colon + write(v, spelling))
    return b"{" + b",".join(out) + b"}"


DROPS = [
    DROP_MANAGED_FIELDS,
    DropFields("metadata.managedFields", "status"),
    DropFields("status", "metadata.labels", "metadata.managedFields"),
    DropFields("spec.managedFields", "metadata.x"),
    DropFields("metadata.x.managedFields", "metadata.managedFields"),  # deeper: slow path only
    DropFields("spec", "kind.x"),
]


def head_of(obj: dict[str, Any]) -> tuple[Any, ...]:
    meta = obj.get("metadata") or {}
    return (
        obj.get("kind"),
        obj.get("apiVersion"),
        meta.get("name", ""),
        meta.get("namespace", ""),
        meta.get("resourceVersion", ""),
    )


@settings(max_examples=100, deadline=None)
@given(objects(), st.sampled_from(DROPS), st.data())
def test_dropping_from_bytes_equals_dropping_from_the_decoded_object(
    members: Pairs, drop: DropFields, data: st.DataObject
) -> None:
    plain = data.draw(st.booleans())  # half compact and plainly spelled: the cut applies
    raw = write(members, (lambda s: "plain") if plain else data.draw)
    if data.draw(st.booleans()):
        raw = msgspec.json.format(raw, indent=data.draw(st.sampled_from([0, 2])))
    obj = msgspec.json.decode(raw)  # duplicates: the last one wins, as for any reader
    expected = drop(obj)
    head = head_of(obj)
    if not all(isinstance(v, str) for v in head[2:]) or not all(
        v is None or isinstance(v, str) for v in head[:2]
    ):
        with pytest.raises(msgspec.DecodeError):
            drop.apply_with_head(raw)
        return
    out, *got = drop.apply_with_head(raw)
    assert msgspec.json.decode(out) == expected
    assert tuple(got) == head
    assert msgspec.json.decode(drop.apply(raw)) == expected
    assert msgspec.json.decode(drop.apply(msgspec.Raw(raw))) == expected
    cutter = drop._cutter
    if cutter is not None and (fast := cutter.cut(raw)) is not None:  # the fast path alone
        assert msgspec.json.decode(fast[0]) == expected
        assert fast[1:] == head
    line = drop.apply_to_line(b'{"type":"ADDED","object":' + raw + b"}")
    if line is not None:  # None: the caller drops from the object (``apply``)
        assert msgspec.json.decode(line) == {"type": "ADDED", "object": expected}


POD: dict[str, Any] = {
    "metadata": {
        "name": "web-0",
        "namespace": "default",
        "uid": "u-1",
        "resourceVersion": "42",
        "labels": {"app": "web"},
        "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:metadata": {}}}],
    },
    "spec": {"containers": [{"name": "web", "args": ["a\\nb"]}]},
    "status": {"phase": "Running"},
}


@pytest.mark.parametrize(
    ("drop", "obj"),
    [
        (DROP_MANAGED_FIELDS, POD),
        (DropFields("metadata.managedFields", "metadata.labels"), POD),
        (DropFields("status", "metadata.labels"), POD),
        (DROP_MANAGED_FIELDS, {"kind": "Pod", "apiVersion": "v1", **POD}),
        (DROP_MANAGED_FIELDS, {"metadata": {"managedFields": []}}),
    ],
)
def test_plain_json_is_cut_without_the_slow_path(drop: DropFields, obj: dict[str, Any]) -> None:
    """Compact JSON with plainly spelled keys (what API servers send) takes the fast cut."""
    raw = msgspec.json.encode(obj)
    cutter = drop._cutter
    assert cutter is not None
    fast = cutter.cut(raw)
    assert fast is not None
    assert msgspec.json.decode(fast[0]) == drop(obj)
    assert fast[1:] == head_of(obj)
    event = msgspec.json.encode({"type": "ADDED", "object": obj})
    line = drop.apply_to_line(event)
    assert line is not None
    assert msgspec.json.decode(line) == {"type": "ADDED", "object": drop(obj)}
    assert drop.event_with_head(event) == ("ADDED", (line, *head_of(obj)))  # one decode


def test_paths_deeper_than_two_members_have_no_cut() -> None:
    assert DropFields("metadata.annotations.x")._cutter is None
    assert DropFields("spec.template.metadata")._cutter is None


@pytest.mark.parametrize(
    "meta",
    [
        b'{"managedFields":[],"labels":null,"x":null}',
        b'{"managedFields":[],"labels":null}',
        b'{"a":0,"managedFields":[],"labels":null,"x":null}',
        b'{"labels":{},"a":0,"managedFields":[]}',
        b'{"labels":{},"managedFields":[],"a":0}',
    ],
)
def test_neighbouring_members_are_cut_with_one_comma_each(meta: bytes) -> None:
    drop = DropFields("metadata.labels", "metadata.managedFields")
    raw = b'{"metadata":' + meta + b',"spec":{}}'
    expected = drop(msgspec.json.decode(raw))
    cutter = drop._cutter
    assert cutter is not None
    fast = cutter.cut(raw)
    assert fast is not None
    assert msgspec.json.decode(fast[0]) == expected


def test_a_copy_or_pickle_cuts_the_same() -> None:
    drop = DropFields("metadata.managedFields", "status")
    raw = msgspec.json.encode(POD)
    for other in (copy.deepcopy(drop), pickle.loads(pickle.dumps(drop))):
        assert other == drop
        assert other.apply_with_head(raw) == drop.apply_with_head(raw)


@settings(max_examples=100, deadline=None)
@given(
    objects(),
    st.sampled_from(DROPS),
    st.sampled_from(["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR", "", "OTHER"]),
    st.data(),
)
def test_a_watch_line_cut_in_its_decode_equals_the_line_decoded_then_cut(
    members: Pairs, drop: DropFields, type_: str, data: st.DataObject
) -> None:
    """The watch path reads an event's type and head and cuts its object in one decode; what it
    returns (or raises) is what decoding the line and then cutting its object gives."""
    obj = write(members, (lambda s: "plain") if data.draw(st.booleans()) else data.draw)
    line = b'{"type":' + msgspec.json.encode(type_) + b',"object":' + obj + b"}"
    try:
        expected = _decode_line(line, 0)
    except Exception as exc:
        with pytest.raises(type(exc)):
            _decode_line(line, 0, drop)
        return
    got = _decode_line(line, 0, drop)
    if expected is None or got is None:
        assert expected is got
        return
    assert got.type == expected.type
    if expected.type == "BOOKMARK":
        assert got == expected
        return
    want = expected.object._trimmed(drop)
    assert got.object == want
    assert (got.object.raw, got.object.key, got.object.namespace) == (
        want.raw,
        want.key,
        want.namespace,
    )
    assert (got.object.resource_version, got.object.kind, got.object.api_version) == (
        want.resource_version,
        want.kind,
        want.api_version,
    )
