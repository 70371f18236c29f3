"""The vectorised perf-dump number reader agrees with the reference parser value for value."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.parse.numbers import parse_series
from pipeline.parse.perfdump import parse_values

# fields the perf dump writes, and the odd ones a resaved or hand-edited dump may hold
plain = st.one_of(
    st.integers(-(10**15), 10**15).map(str),
    st.floats(-1e9, 1e9, allow_nan=False).map(lambda x: f"{x:.{abs(hash(x)) % 7}f}"),
    st.sampled_from(["None", "null", "0", "-0", "0.0", "007", "123456789012345", "1234567890123456"]),
)
odd = st.sampled_from(
    ["", " 1", "1e3", "nan", "inf", "-", "1.", ".5", "-.5", "1.2.3", "1-2", "--1", "x", "NONE", "1,5"]
)
field = st.one_of(plain, plain, plain, odd)


def same(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(field, min_size=1, max_size=12), min_size=1, max_size=6), st.integers(0, 3))
def test_parse_series_equals_reference(rows: list[list[str]], extra: int) -> None:
    texts = [",".join(r) for r in rows]
    for n in {len(rows[0]), len(rows[0]) + extra}:  # the right count, and a wrong one for some rows
        got = parse_series(texts, n, parse_values)
        assert len(got) == len(texts)
        for t, g in zip(texts, got, strict=True):
            assert same(g, parse_values(t, n)), (t, n, g)


def test_exact_decimals_and_missing_samples() -> None:
    texts = ["1.5,None,-2,0.1", "12.345678901234,null,0,7"]
    a, b = parse_series(texts, 4, parse_values)
    assert a is not None and b is not None
    np.testing.assert_array_equal(a, [1.5, np.nan, -2.0, 0.1])
    assert b[0] == float("12.345678901234") and np.isnan(b[1])


def test_wrong_count_is_refused_like_the_reference() -> None:
    assert parse_series(["1,2,3"], 4, parse_values) == [None]
