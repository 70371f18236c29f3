"""Comma-separated numbers of the perf dump, many series at once.

`parse_series(texts, n)` equals `[parse_values(t, n) for t in texts]` (perfdump.parse_values, the
reference) value for value, but reads the common case — plain decimals (`-?digits(.digits)?`, at most
15 digits) and `None`/`null` for a missing sample — with a handful of vectorised numpy passes over all
the texts joined, instead of a C parse per text (the dump's values were two thirds of a bundle's parse
time). A plain decimal of at most 15 digits is an integer mantissa M < 2**53 over 10**k with k <= 22,
both exact doubles, so their IEEE quotient is the correctly rounded value `float(text)` gives. Any
text with another field (exponent, spaces, `nan`, an empty field, the wrong count) goes to the
reference parser, unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

import numpy as np

MAX_DIGITS: Final = 15  # 10**15 < 2**53: the mantissa is an exact integer in a double
_POW10: Final = 10.0 ** np.arange(MAX_DIGITS + 8)
_COMMA, _DOT, _MINUS = 44, 46, 45

Reference = Callable[[str, int], "np.ndarray | None"]


def parse_series(texts: Sequence[str], n: int, reference: Reference) -> list[np.ndarray | None]:
    """Each text as n float64 values, NaN where missing; None where `reference` says so."""
    out: list[np.ndarray | None] = [None] * len(texts)
    fast = [i for i, t in enumerate(texts) if n > 0 and t.count(",") == n - 1 and t.isascii()]
    if fast:
        vals, ok = _decode(",".join(texts[i] for i in fast).encode("ascii"), len(fast) * n)
        rows_ok: np.ndarray = np.asarray(ok.reshape(len(fast), n).all(axis=1), bool)
        vals = vals.reshape(len(fast), n)
        for row, i in enumerate(fast):
            if rows_ok[row]:
                out[i] = vals[row].copy()
        fast = [i for row, i in enumerate(fast) if rows_ok[row]]
    taken = set(fast)
    for i, t in enumerate(texts):
        if i not in taken:
            out[i] = reference(t, n)
    return out


def _decode(buf: bytes, n_fields: int) -> tuple[np.ndarray, np.ndarray]:
    """(values, ok) per comma-separated field of `buf`: ok where the field is a plain decimal (value
    exact) or exactly `None`/`null` (NaN). Works on the positions of the non-digit bytes (about one
    per field), so only a few passes touch every byte."""
    u = np.frombuffer(buf, np.uint8)
    size = len(u)
    v = u - np.uint8(48)  # digits 0..9; anything else wraps to >= 10
    nd = np.flatnonzero(v > 9)  # every non-digit byte
    cls = v[nd]
    comma = cls == _COMMA - 48 + 256
    cpos = nd[comma]
    if len(cpos) != n_fields - 1:
        raise ValueError("field count")
    starts = np.concatenate(([0], cpos + 1))
    ends = np.concatenate((cpos, [size]))
    # the other non-digit bytes: a sign opening its field, or a dot between two digits
    od, oc = nd[~comma], cls[~comma]
    of = np.searchsorted(cpos, od)  # their field
    dot = oc == _DOT - 48 + 256
    fine = (oc == _MINUS - 48 + 256) & (od == starts[of])
    if dot.any():
        before, after = od[dot] - 1, od[dot] + 1
        fine[dot] = (before >= 0) & (after < size)
        fine[dot] &= (v[np.maximum(before, 0)] < 10) & (v[np.minimum(after, size - 1)] < 10)
    n_digits = (ends - starts) - np.bincount(of, minlength=n_fields)
    ok = (n_digits >= 1) & (n_digits <= MAX_DIGITS) & (np.bincount(of[dot], minlength=n_fields) <= 1)
    ok[of[~fine]] = False
    # digit runs lie between consecutive non-digit bytes; each digit weighs 10**(digits after it in
    # its run), and a run's value is the sum of its digits' weights (integers < 2**53: exact)
    bounds = np.concatenate(([-1], nd, [size]))
    run_len = np.diff(bounds) - 1
    dpos = np.flatnonzero(v < 10)
    exp = np.minimum(np.repeat(bounds[1:] - 1, run_len) - dpos, len(_POW10) - 1)
    run = np.repeat(np.arange(len(run_len)), run_len)
    run_val = np.bincount(run, weights=_POW10[exp] * v[dpos], minlength=len(run_len))
    # run r ends at bounds[r + 1]: runs ending at a comma or the end are a field's last run, the one
    # before a dot its integer part: mantissa = integer part * 10**len(fraction) + fraction
    last_run = np.concatenate((np.flatnonzero(comma), [len(nd)]))  # run index ending each field
    mant = run_val[last_run]
    frac = np.zeros(n_fields, np.int64)
    if dot.any():
        dot_run = np.flatnonzero(~comma)[dot]  # run ending at each dot (index into nd)
        fd = of[dot]
        frac[fd] = run_len[dot_run + 1]
        mant[fd] += run_val[dot_run] * _POW10[np.minimum(frac[fd], len(_POW10) - 1)]
    vals = mant / _POW10[np.minimum(frac, len(_POW10) - 1)]
    neg = np.zeros(n_fields, bool)
    has = starts < size
    neg[has] = u[starts[has]] == _MINUS
    vals[neg] = -vals[neg]
    # `None` / `null`: a missing sample
    four = np.flatnonzero((ends - starts == 4) & ~ok)
    if len(four):
        word = u[starts[four, None] + np.arange(4)]
        missing = (word == np.frombuffer(b"None", np.uint8)).all(1) | (word == np.frombuffer(b"null", np.uint8)).all(1)
        vals[four[missing]] = np.nan
        ok[four[missing]] = True
    return vals, ok
