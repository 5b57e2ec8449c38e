"""Shard hashing, ranges, sets and the ``shardSelector`` syntax (KEP-5866) against the reference."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from informer.shards import (
    HASH_SPACE,
    InvalidShardSelector,
    ShardField,
    ShardRange,
    ShardSelector,
    ShardSet,
    format_hash,
    format_selector,
    hash_value,
    object_hash,
    parse_hash,
    parse_selector,
)

UID_HALF = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"


def test_fnv1a_64_matches_the_reference_vectors() -> None:
    assert format_hash(hash_value("")) == "0xcbf29ce484222325"
    assert format_hash(hash_value("a")) == "0xaf63dc4c8601ec8c"
    assert hash_value("foobar") == 0x85944171F73967E8  # the FNV authors' published vector


def test_cluster_scoped_objects_hash_as_the_empty_namespace() -> None:
    assert object_hash(ShardField.NAMESPACE, {"name": "n"}) == 0xCBF29CE484222325
    assert object_hash(ShardField.UID, {"uid": "a"}) == 0xAF63DC4C8601EC8C
    assert object_hash(ShardField.NAMESPACE, {"namespace": "a"}) == 0xAF63DC4C8601EC8C


def test_hash_bounds_are_16_lowercase_digits_or_two_to_the_64() -> None:
    assert format_hash(0) == "0x0000000000000000"
    assert format_hash(HASH_SPACE) == "0x10000000000000000"
    assert parse_hash("0x10000000000000000") == HASH_SPACE
    for bad in ("0x0", "0x000000000000000A", "0X0000000000000000", "0x20000000000000000"):
        with pytest.raises(ValueError):
            parse_hash(bad)
    with pytest.raises(ValueError):
        format_hash(HASH_SPACE + 1)


def test_the_canonical_spelling_is_the_servers_echo() -> None:
    sel = ShardSelector.of(ShardRange.split(2))
    assert format_selector(sel) == (
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || "
        "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
    )
    assert str(sel) == format_selector(sel)


def test_the_server_accepts_double_quotes_spaces_and_parentheses() -> None:
    sel = parse_selector(
        '  ( shardRange( object.metadata.namespace ,"0x0000000000000000",'
        " '0x8000000000000000' ) )\t|| shardRange(object.metadata.namespace, "
        "'0x8000000000000000', '0x10000000000000000')\n"
    )
    assert sel.field is ShardField.NAMESPACE
    assert sel.ranges == ShardRange.split(2)


def test_duplicate_and_overlapping_ranges_are_kept_as_written() -> None:
    sel = parse_selector(f"{UID_HALF} || {UID_HALF}")
    assert len(sel.ranges) == 2
    assert sel.shard_set == ShardSet((ShardRange(0, 1 << 63),))


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("   ", "empty shard selector is not allowed; omit the parameter for unfiltered lists"),
        (
            "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
            'hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" '
            '(did you mean "0x0000000000000000"?)',
        ),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x8')",
            'hexEnd must be a 0x-prefixed 16-digit hex value, got "0x8" '
            '(did you mean "0x0000000000000008"?)',
        ),
        (
            f"{UID_HALF} && {UID_HALF}",
            'unsupported function "_&&_"; only shardRange() and || are allowed',
        ),
        (
            "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
            'unsupported field path "object.metadata.name"; supported: object.metadata.uid, '
            "object.metadata.namespace",
        ),
        (
            "shardRange(object.metadata.uid, '0x8000000000000000', '0x8000000000000000')",
            "shard range start 0x8000000000000000 must be less than end 0x8000000000000000",
        ),
        (
            "shardRange(object.metadata.uid, '0X0000000000000000', '0x8000000000000000')",
            "hexStart must have '0x' prefix, got \"0X0000000000000000\"",
        ),
        (
            "shardRange(object.metadata.uid, '0x000000000000000A', '0x8000000000000000')",
            'hexStart: invalid hex character "A" in "0x000000000000000A"',
        ),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x20000000000000000')",
            "hexEnd: 17-digit hex value must be '0x10000000000000000' (2^64), "
            'got "0x20000000000000000"',
        ),
        (
            f"{UID_HALF} || shardRange(object.metadata.namespace, '0x0000000000000000', "
            "'0x8000000000000000')",
            'all shard ranges must use the same field, got "object.metadata.uid" and '
            '"object.metadata.namespace"',
        ),
        (
            "shardRange(object.metadata.uid, 0, '0x8000000000000000')",
            "hexStart must be a string literal, got int64",
        ),
        ("shardRange(object.metadata.uid)", "shardRange() requires exactly 3 arguments, got 1"),
        (
            "object.metadata.uid",
            "unexpected expression kind 7; expected shardRange() call or || operator",
        ),
        (
            "hash(object.metadata.uid)",
            'unsupported function "hash"; only shardRange() and || are allowed',
        ),
    ],
)
def test_a_malformed_selector_is_refused_with_the_servers_reason(text: str, why: str) -> None:
    with pytest.raises(InvalidShardSelector) as caught:
        parse_selector(text)
    assert caught.value.why == why
    assert str(caught.value) == f"invalid shard selector: {why}"
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    "text",
    [
        "shardRange(object.metadata.uid, '0x0000000000000000'",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') ||",
        "shardRange(object.metadata.uid, '0x0000000000000000, '0x8000000000000000')",
        "shardRange(object.metadata.uid; '0x0000000000000000', '0x8000000000000000')",
        "(" * 400 + UID_HALF + ")" * 400,
    ],
)
def test_text_that_is_not_cel_is_a_parse_error(text: str) -> None:
    with pytest.raises(InvalidShardSelector) as caught:
        parse_selector(text)
    assert caught.value.why.startswith("CEL parse error: ")


@given(st.text(max_size=200))
def test_any_text_parses_or_is_refused_with_a_typed_error(text: str) -> None:
    try:
        sel = parse_selector(text)
    except InvalidShardSelector as e:
        assert e.why
    else:
        assert parse_selector(str(sel)) == sel


bounds = st.integers(min_value=0, max_value=HASH_SPACE)


@st.composite
def shard_ranges(draw: st.DrawFn) -> ShardRange:
    a, b = draw(bounds), draw(bounds)
    if a == b:
        b = a + 1 if a < HASH_SPACE else a - 1
    return ShardRange(min(a, b), max(a, b))


@given(st.lists(shard_ranges(), min_size=1, max_size=6), st.sampled_from(list(ShardField)))
def test_format_then_parse_gives_the_same_selector(
    ranges: list[ShardRange], field: ShardField
) -> None:
    sel = ShardSelector(field, tuple(ranges))
    text = format_selector(sel)
    assert parse_selector(text) == sel
    assert format_selector(parse_selector(text)) == text


def _points(*sets: ShardSet) -> set[int]:
    """Every bound of every range and its neighbours: where membership can change."""
    out = {0, HASH_SPACE - 1}
    for s in sets:
        for r in s:
            out |= {r.start, r.end - 1, r.end, max(r.start - 1, 0)}
    return {p for p in out if 0 <= p < HASH_SPACE}


@given(st.lists(shard_ranges(), max_size=5), st.lists(shard_ranges(), max_size=5))
def test_set_operations_agree_with_membership(
    a_ranges: list[ShardRange], b_ranges: list[ShardRange]
) -> None:
    a, b = ShardSet(a_ranges), ShardSet(b_ranges)
    for p in _points(a, b):
        in_a = any(p in r for r in a_ranges)
        in_b = any(p in r for r in b_ranges)
        assert a.contains(p) == in_a
        assert (a | b).contains(p) == (in_a or in_b)
        assert (a & b).contains(p) == (in_a and in_b)
        assert (a - b).contains(p) == (in_a and not in_b)
        assert a.complement().contains(p) == (not in_a)
    assert (a - b) | (a & b) == a
    assert (a | b).size == a.size + b.size - (a & b).size
    ranges = a.ranges
    assert all(x.end < y.start for x, y in itertools.pairwise(ranges))  # normalised


def test_split_covers_the_space_in_equal_parts() -> None:
    for parts in (1, 2, 3, 7, 64):
        split = ShardRange.split(parts)
        assert ShardSet(split) == ShardSet.full()
        assert max(r.size for r in split) - min(r.size for r in split) <= 1
        assert sum(r.share for r in split) == pytest.approx(1.0)


def test_a_selector_matches_objects_by_the_hash_of_their_field() -> None:
    low = ShardSelector.of([ShardRange(0, 1 << 63)])
    high = ShardSelector.of([ShardRange(1 << 63, HASH_SPACE)])
    for uid in ("a", "", "4c2e1e0c-1c54-4d9b-8c0b-3c5c2b3e1a00"):
        assert low.matches({"uid": uid}) != high.matches({"uid": uid})
    assert high.matches({"uid": "a"})  # 0xaf63... is in the upper half
    empty_namespace = ShardRange(0xCBF29CE484222325, 0xCBF29CE484222326)
    assert ShardSelector.of([empty_namespace], ShardField.NAMESPACE).matches({})


def test_ranges_refuse_empty_or_out_of_space_bounds() -> None:
    for start, end in ((5, 5), (6, 5), (-1, 3), (0, HASH_SPACE + 1)):
        with pytest.raises(ValueError):
            ShardRange(start, end)
    with pytest.raises(ValueError):
        ShardSelector(ShardField.UID, ())
