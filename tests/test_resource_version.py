"""KEP-5504 comparable resource versions: edge-case table and properties."""

from __future__ import annotations

import functools
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

import informer
from informer.resource_version import (
    InvalidResourceVersion,
    compare_resource_versions,
    is_comparable,
    rv_sort_key,
)

BIG = str(2**128 - 1)  # the KEP's conformance maximum: 340282366920938463463374607431768211455
HUGE = str(2**128)
HUGER = "9" * 1000

# (a, b, expected)
VALID_CASES = [
    ("1", "1", 0),
    ("1", "2", -1),
    ("2", "1", 1),
    ("9", "10", -1),  # longer is greater, even though "9" > "1" as a string
    ("10", "9", 1),
    ("99", "100", -1),
    ("100", "99", 1),
    ("123", "123", 0),
    ("123", "124", -1),
    ("124", "123", 1),
    ("1000", "1000", 0),
    ("1234", "1243", -1),  # equal lengths: first differing character decides
    ("1243", "1234", 1),
    ("98", "103", -1),
    (BIG, BIG, 0),
    (BIG, HUGE, -1),  # 2^128-1 < 2^128: one digit longer
    (HUGE, BIG, 1),
    (HUGE, HUGE, 0),
    (HUGER, HUGER, 0),
    (HUGER, "1" + "0" * 1000, -1),  # 10^1000 > 10^1000 - 1
    ("1" + "0" * 1000, HUGER, 1),
    (str(2**200), str(2**200 + 1), -1),
    (str(2**200 + 1), str(2**200), 1),
    (str(2**512) + "5", str(2**512) + "4", 1),
]

MALFORMED = [
    "",  # empty
    "0",  # means "any", never a version
    "00",
    "007",  # leading zero
    "01",
    "0" * 40,
    "12a",
    "a12",
    "abc",
    " 1",  # no trimming
    "1 ",
    " ",
    "\t1",
    "1\n",
    "1 2",
    "\u0661\u0662",  # Arabic-Indic digits: str.isdigit() is True, but not ASCII
    "\uff11\uff12",  # fullwidth digits
    "1\uff12",  # mixed ASCII and fullwidth
    "\u00b2",  # superscript two: isdigit() is True
    "\u07c1",  # NKo digit one
    "+1",
    "-1",
    "1e3",
    "1.0",
    "1_000",  # int() accepts this; the KEP does not
    "0x10",
    "1,000",
    "\x00",
    "1\x00",
    "null",
    "-0",
    "\u221e",
]


@pytest.mark.parametrize(("a", "b", "expected"), VALID_CASES)
def test_compare_table(a: str, b: str, expected: int) -> None:
    assert compare_resource_versions(a, b) == expected
    assert compare_resource_versions(b, a) == -expected
    assert is_comparable(a) and is_comparable(b)


@pytest.mark.parametrize(("a", "b", "expected"), VALID_CASES)
def test_sort_key_agrees_with_table(a: str, b: str, expected: int) -> None:
    ka, kb = rv_sort_key(a), rv_sort_key(b)
    assert ((ka > kb) - (ka < kb)) == expected


def test_exported_from_package() -> None:
    assert informer.compare_resource_versions is compare_resource_versions
    assert informer.InvalidResourceVersion is InvalidResourceVersion
    assert informer.is_comparable is is_comparable
    assert issubclass(InvalidResourceVersion, ValueError)


def test_returns_exactly_minus_one_zero_one() -> None:
    for a, b, _ in VALID_CASES:
        assert compare_resource_versions(a, b) in (-1, 0, 1)
        assert type(compare_resource_versions(a, b)) is int


def _assert_names(exc: InvalidResourceVersion, bad: object) -> None:
    assert exc.value == bad
    assert repr(bad) in str(exc)
    assert exc.why


@pytest.mark.parametrize("bad", MALFORMED)
def test_malformed_raises_naming_the_value(bad: str) -> None:
    assert not is_comparable(bad)
    with pytest.raises(InvalidResourceVersion) as first:
        compare_resource_versions(bad, "1")
    _assert_names(first.value, bad)
    with pytest.raises(InvalidResourceVersion) as second:
        compare_resource_versions("1", bad)
    _assert_names(second.value, bad)
    with pytest.raises(InvalidResourceVersion) as same:
        compare_resource_versions(bad, bad)  # even equal malformed values are not comparable
    _assert_names(same.value, bad)
    with pytest.raises(InvalidResourceVersion) as key:
        rv_sort_key(bad)
    _assert_names(key.value, bad)


@pytest.mark.parametrize("bad", MALFORMED)
def test_malformed_is_a_value_error(bad: str) -> None:
    with pytest.raises(ValueError):
        compare_resource_versions(bad, "5")


def test_unicode_digits_are_digits_to_python_but_not_here() -> None:
    # The trap: these pass str.isdigit() / int(), so a naive implementation accepts them.
    for s in ("\u0661\u0662", "\uff11\uff12", "\u00b2"):
        assert s.isdigit()
        assert not is_comparable(s)


def test_first_malformed_value_is_named() -> None:
    with pytest.raises(InvalidResourceVersion) as exc:
        compare_resource_versions("x1", "y2")
    assert exc.value.value == "x1"


def test_zero_reason_mentions_any() -> None:
    with pytest.raises(InvalidResourceVersion) as exc:
        compare_resource_versions("0", "1")
    assert "any" in exc.value.why


@pytest.mark.parametrize("bad", [None, 5, 5.0, b"5", ["5"]])
def test_non_strings_raise(bad: object) -> None:
    assert not is_comparable(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidResourceVersion) as exc:
        compare_resource_versions(bad, "5")  # type: ignore[arg-type]
    assert exc.value.value == bad
    with pytest.raises(InvalidResourceVersion):
        compare_resource_versions("5", bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidResourceVersion):
        rv_sort_key(bad)  # type: ignore[arg-type]


def test_no_size_limit() -> None:
    a = "1" + "0" * 100_000
    b = "9" * 100_000
    assert compare_resource_versions(a, b) == 1
    assert compare_resource_versions(b, a) == -1
    assert compare_resource_versions(a, a) == 0


def test_equal_lengths_first_difference_decides() -> None:
    assert compare_resource_versions("19999", "20000") == -1
    assert compare_resource_versions("20000", "19999") == 1
    assert compare_resource_versions("10001", "10010") == -1


def test_sort_key_orders_like_integers() -> None:
    rvs = ["10", "9", "100", "1", BIG, "99", HUGE, "11", "2"]
    assert sorted(rvs, key=rv_sort_key) == sorted(rvs, key=int)
    assert max(rvs, key=rv_sort_key) == HUGE
    assert min(rvs, key=rv_sort_key) == "1"


# ---- properties ---------------------------------------------------------------------------

positive = st.integers(min_value=1, max_value=2**300)
_VALID = re.compile(r"[1-9][0-9]*")


def _int_cmp(a: int, b: int) -> int:
    return (a > b) - (a < b)


@given(positive, positive)
def test_matches_integer_comparison(a: int, b: int) -> None:
    assert compare_resource_versions(str(a), str(b)) == _int_cmp(a, b)


@given(positive)
def test_reflexive(a: int) -> None:
    assert compare_resource_versions(str(a), str(a)) == 0


@given(positive, positive)
def test_antisymmetric(a: int, b: int) -> None:
    x, y = str(a), str(b)
    assert compare_resource_versions(x, y) == -compare_resource_versions(y, x)


@given(positive, positive, positive)
def test_transitive(a: int, b: int, c: int) -> None:
    x, y, z = sorted((str(a), str(b), str(c)), key=int)
    assert compare_resource_versions(x, y) <= 0
    assert compare_resource_versions(y, z) <= 0
    assert compare_resource_versions(x, z) <= 0


@given(positive, positive)
def test_sort_key_agrees_with_compare(a: int, b: int) -> None:
    x, y = str(a), str(b)
    kx, ky = rv_sort_key(x), rv_sort_key(y)
    assert _int_cmp(kx, ky) == compare_resource_versions(x, y)  # type: ignore[arg-type]


@given(st.lists(positive, max_size=30))
def test_sorting_with_sort_key_or_compare_matches_int(values: list[int]) -> None:
    rvs = [str(v) for v in values]
    expected = [str(v) for v in sorted(values)]
    assert sorted(rvs, key=rv_sort_key) == expected
    assert sorted(rvs, key=functools.cmp_to_key(compare_resource_versions)) == expected


@given(st.from_regex(r"[1-9][0-9]{0,80}", fullmatch=True))
def test_well_formed_strings_are_comparable(rv: str) -> None:
    assert is_comparable(rv)
    assert compare_resource_versions(rv, rv) == 0
    assert compare_resource_versions(rv, rv + "0") == -1


@given(st.text(max_size=40).filter(lambda s: _VALID.fullmatch(s) is None))
def test_anything_malformed_raises(bad: str) -> None:
    assert not is_comparable(bad)
    with pytest.raises(InvalidResourceVersion) as exc:
        compare_resource_versions(bad, "1")
    _assert_names(exc.value, bad)
    with pytest.raises(InvalidResourceVersion) as exc2:
        compare_resource_versions("1", bad)
    _assert_names(exc2.value, bad)
    with pytest.raises(InvalidResourceVersion):
        rv_sort_key(bad)


@given(positive, st.integers(min_value=1, max_value=5))
def test_leading_zeros_raise(a: int, zeros: int) -> None:
    bad = "0" * zeros + str(a)
    with pytest.raises(InvalidResourceVersion) as exc:
        compare_resource_versions(bad, str(a))
    _assert_names(exc.value, bad)


@given(positive, st.sampled_from([" ", "+", "-", "\n", "\u0660", "\uff11", "e", "."]))
def test_decorated_numbers_raise(a: int, junk: str) -> None:
    for bad in (junk + str(a), str(a) + junk, str(a)[:1] + junk + str(a)[1:]):
        with pytest.raises(InvalidResourceVersion) as exc:
            compare_resource_versions(str(a), bad)
        _assert_names(exc.value, bad)
