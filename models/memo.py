"""Per-bundle memo: what several models read of the same bundle is computed once.

Every member of an ensemble (a CNN beside a baseline, the expert rules beside both) reads the same
engineered rows and rule margins of the bundle being diagnosed. `per_bundle(fn)` keeps fn's results
for the last few bundles, by object: keyed by id() with a weak reference that must still point at the
same object, so a recycled id never hits and nothing is kept alive. Threads share it (a retrain runs
in a thread of the API process without a broker): the lock keeps lookup, eviction and insertion
whole, not the computation. Results are shared: treat them as read-only. A training run, which reads
the same few hundred bundles in every baseline, refit and scoring pass, holds them all for its length
(`holding`).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

from pipeline.tensors import BundleTensors

T = TypeVar("T")


class per_bundle(Generic[T]):
    def __init__(self, fn: Callable[[BundleTensors], T], size: int = 16) -> None:
        self.fn, self.size = fn, size
        self.entries: dict[int, tuple[weakref.ref[BundleTensors], T]] = {}
        self._lock = threading.Lock()
        self._holds: list[int] = []  # sizes asked for by the open `holding` blocks
        self.__doc__ = fn.__doc__

    def __call__(self, bt: BundleTensors) -> T:
        with self._lock:
            hit = self.entries.get(id(bt))
        if hit is not None and hit[0]() is bt:
            return hit[1]
        out = self.fn(bt)
        with self._lock:
            self._trim(self._limit() - 1)
            self.entries[id(bt)] = (weakref.ref(bt), out)
        return out

    @contextmanager
    def holding(self, n: int) -> Iterator[None]:
        """Within the block keep the last `n` bundles' results (more if another block holds more), then
        trim back: the bundles themselves are alive anyway (a training run's datasets), their results cost
        ~0.1 MB each. Blocks may overlap across threads (a retrain beside another)."""
        with self._lock:
            self._holds.append(n)
        try:
            yield
        finally:
            with self._lock:
                self._holds.remove(n)
                self._trim(self._limit())

    def _limit(self) -> int:
        return max([self.size, *self._holds])

    def _trim(self, keep: int) -> None:
        """Down to `keep` entries: those whose bundle is gone first, then the oldest. A bundle read once
        and let go (a fresh copy, an upload) must not push out a held one: evicting the oldest live
        entry made the next pass over a held dataset miss on every bundle, each miss evicting the next."""
        if len(self.entries) <= keep:
            return
        for key in [k for k, (ref, _) in self.entries.items() if ref() is None]:
            del self.entries[key]
        while len(self.entries) > keep:
            del self.entries[next(iter(self.entries))]
