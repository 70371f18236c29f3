"""models/memo.py: a result per bundle object, computed once while it is among the last few (or, in a
`holding` block, the last n: a training run's whole datasets), never for a recycled id."""

from __future__ import annotations

import threading
from typing import Any

from models.memo import per_bundle


class Bundle:  # stands in for BundleTensors: the memo keys on identity and a weak reference
    pass


def _counted(size: int = 4) -> tuple[per_bundle[Any], list[int]]:
    calls: list[int] = []

    def fn(bt: Any) -> int:
        calls.append(id(bt))
        return len(calls)

    return per_bundle(fn, size=size), calls


def test_the_last_few_are_kept_and_a_new_object_is_computed_afresh() -> None:
    memo, calls = _counted(size=4)
    bundles = [Bundle() for _ in range(10)]
    first = [memo(b) for b in bundles]
    assert [memo(b) for b in bundles[-4:]] == first[-4:] and len(calls) == 10  # the last 4: hits
    memo(bundles[0])  # evicted long ago: computed again
    assert len(calls) == 11 and len(memo.entries) == 4


def test_a_training_run_holds_its_datasets_then_trims_back() -> None:
    """Five baselines over 40 bundles: each bundle computed once inside the block (with the default size,
    every pass computes every bundle again); back to the usual size after it."""
    memo, calls = _counted(size=4)
    bundles = [Bundle() for _ in range(40)]
    with memo.holding(len(bundles)):
        for _ in range(5):
            [memo(b) for b in bundles]
        assert len(calls) == 40 and len(memo.entries) == 40
    assert len(memo.entries) == 4 and memo.size == 4
    for _ in range(2):
        [memo(b) for b in bundles]
    assert len(calls) == 40 + 2 * 40  # outside a block: recomputed on every pass


def test_overlapping_holds_keep_the_largest_until_the_last_ends() -> None:
    memo, calls = _counted(size=2)
    bundles = [Bundle() for _ in range(30)]
    outer_in, inner_out = threading.Event(), threading.Event()

    def other_run() -> None:  # a retrain in another thread, holding 30
        with memo.holding(30):
            outer_in.set()
            inner_out.wait(10)
            [memo(b) for b in bundles]

    t = threading.Thread(target=other_run)
    t.start()
    outer_in.wait(10)
    with memo.holding(10):
        [memo(b) for b in bundles[:10]]
    inner_out.set()  # this block ended first: the other's 30 still hold
    t.join(10)
    assert len(calls) == 30  # the first 10 were kept for the other run
    assert len(memo.entries) == 2 and memo._holds == []


def test_a_passing_bundle_does_not_push_a_held_one_out() -> None:
    """Bundles read once and let go (the report's latency reads fresh copies) leave dead entries, which
    go before any live one: the first passer, alive when it came, takes the oldest's place, and that one
    bundle is computed again; no more. Evicting the oldest live entry every time made the next pass over
    the held datasets miss on all 40 (each miss evicting the bundle read next), as without a hold."""
    memo, calls = _counted(size=4)
    bundles = [Bundle() for _ in range(40)]
    with memo.holding(len(bundles)):
        [memo(b) for b in bundles]
        for _ in range(3):
            memo(Bundle())  # read once, then garbage
        [memo(b) for b in bundles]
        [memo(b) for b in bundles]
    assert len(calls) == 40 + 3 + 1
