"""The common time grid: choosing it (interval, step, window around the activity) and resampling onto it."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.config import PipelineConfig


@dataclass(frozen=True)
class Grid:
    start: int  # epoch seconds of step 0
    step: int  # seconds per step
    T: int
    native: int  # the perf dump's own sampling interval, seconds

    @property
    def end(self) -> int:
        return self.start + self.step * self.T


def native_interval(time_axes: Sequence[np.ndarray]) -> int:
    """Most common median sample spacing over the entities (seconds, at least 1)."""
    votes: Counter[int] = Counter()
    for t in time_axes:
        if len(t) > 1:
            votes[int(np.median(np.diff(t)))] += 1
    if not votes:
        return 300
    return max(1, votes.most_common(1)[0][0])


def choose_step(span: int, native: int, cfg: PipelineConfig) -> int:
    """A multiple of the native interval covering the span in T steps, no coarser than max_step_s."""
    k = max(1, math.ceil(span / (cfg.grid_steps * native)))
    if native * k > cfg.max_step_s:
        k = max(1, cfg.max_step_s // native)
    return native * k


def best_window(activity: np.ndarray, T: int) -> int:
    """Index of the first step of the T-long window with the most activity (earliest on ties)."""
    if len(activity) <= T:
        return 0
    c = np.concatenate(([0.0], np.cumsum(np.nan_to_num(activity))))
    sums = c[T:] - c[:-T]
    return int(np.argmax(sums))


def resample(times: np.ndarray, mat: np.ndarray, grid: Grid, interval: int) -> tuple[np.ndarray, np.ndarray]:
    """(m, n) samples at `times` -> ((m, T) means, (m, T) valid) on the grid.

    A sample covers [t, t+interval). Finer than the grid: mean of the samples starting in each step.
    Coarser: each step takes the sample covering its start.
    """
    m = mat.shape[0]
    T = grid.T
    if interval > grid.step:
        starts = grid.start + grid.step * np.arange(T)
        idx = np.searchsorted(times, starts, side="right") - 1
        ok = (idx >= 0) & (starts < times[np.clip(idx, 0, None)] + interval)
        out = mat[:, np.clip(idx, 0, None)]
        valid = ok[None, :] & np.isfinite(out)
        return np.where(valid, out, 0.0), valid
    b = (times - grid.start) // grid.step
    inside = (b >= 0) & (b < T)
    if not np.any(inside):
        return np.zeros((m, T)), np.zeros((m, T), bool)
    b = b[inside]
    sub = mat[:, inside]
    fin = np.isfinite(sub)
    flat = np.arange(m)[:, None] * T + b[None, :]  # (m, n_inside) -> bin of each sample
    cnt = np.bincount(flat[fin], minlength=m * T).reshape(m, T)
    tot = np.bincount(flat[fin], weights=sub[fin], minlength=m * T).reshape(m, T)
    valid = cnt > 0
    return np.divide(tot, cnt, out=np.zeros((m, T)), where=valid), valid


def count_events(times: np.ndarray, grid: Grid) -> np.ndarray:
    """(n_events,) epoch seconds -> (T,) counts per step."""
    b = ((times - grid.start) // grid.step).astype(np.int64)
    b = b[(b >= 0) & (b < grid.T)]
    return np.bincount(b, minlength=grid.T).astype(np.float64)
