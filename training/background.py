"""Fits of a training run that need no sweep result, in a process of their own while the sweep runs.

A sweep of a few trials ends with its winner training alone on one core (ASHA stopped the others), and
the baselines and the learning curve then ran one after another on one core: the quick preset used
1.07 of 2 cores over its 16 minutes on a 2-core AMD EPYC. The baselines are fitted here beside the
sweep from its start (started only once the sweep left a core idle, the worker's start, dataset reads
and features fell after the sweep's short tail and the run took longer), the learning curve's refits
beside the ensemble's fit and scoring. The models come back as folders (fit_and_score saves them); the
caller scores them, logs them and writes the report.

One worker, started by spawn: a forked child would inherit Ray's and torch's threads mid-state. It
reads the datasets from their folders, as a sweep trial does, and keeps their features for all its
jobs. Its numerical libraries get one thread each: the sweep's trials hold the cores, and a fit is then
the same on any machine's core count (two BLAS threads move logreg's probabilities by up to 0.08).
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, TypeVar

from models.features import hold_features
from pipeline.tensors import BundleTensors
from training.curve import learning_curve
from training.datasets import can_have_children, load_dataset
from training.fitting import fit_and_score
from training.report import CurvePoint
from training.sweep_results import TrialOutcome

Labels = dict[str, str]
T = TypeVar("T")
Dataset = tuple[list[BundleTensors], list[Labels]]


@contextmanager
def background() -> Iterator[Executor]:
    """One worker process for a run's side fits. If the run fails, its jobs are cancelled and the
    worker stopped at once (a baseline's fit can take minutes): the error is not held back by them.
    In a process that may not have children (a Celery prefork pool's, which is daemonic), each job
    runs in this process when it is submitted instead: the run takes longer, not another path."""
    if not can_have_children():
        yield InlineExecutor()
        return
    pool = ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"), initializer=_hold)
    try:
        yield pool
    except BaseException:
        for proc in list((pool._processes or {}).values()):  # Python 3.14's terminate_workers()
            proc.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


class InlineExecutor(Executor):
    """An executor that runs each job in the caller when it is submitted."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        done: Future[T] = Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except Exception as e:
            done.set_exception(e)
        return done


def fit_baselines(names: Sequence[str], train: Path, val: Path, out: Path) -> dict[str, float]:
    """Each baseline fitted on the training folder's bundles and saved to out/<name>: {name: wall seconds}."""
    X, y = _dataset(train)
    Xv, yv = _dataset(val)
    fit_s = {}
    with one_thread():
        for name in names:
            t0 = time.perf_counter()
            fit_and_score(name, {}, X, y, Xv, yv, out / name)
            fit_s[name] = time.perf_counter() - t0
    return fit_s


def refit_curve(
    best: TrialOutcome,
    best_exact: float,
    train: Path,
    val: Path,
    test: Path,
    fractions: Sequence[float],
    seed: int,
    out: Path,
    progress: bool = True,
    deadline: float | None = None,
) -> list[CurvePoint]:
    """training.curve.learning_curve on the datasets of these folders (its bar on the worker's stderr,
    which is the run's)."""
    (X, y), (Xv, yv), (Xt, yt) = _dataset(train), _dataset(val), _dataset(test)
    with one_thread():
        return learning_curve(best, best_exact, X, y, Xv, yv, Xt, yt, fractions, seed, out, progress, deadline)


_LOADED: dict[Path, Dataset] | None = None  # the worker's datasets, kept for its life (None: inline)
_HELD = ExitStack()  # the worker's hold on their features


def _dataset(folder: Path) -> Dataset:
    if _LOADED is None:  # inline, in a process that lives on: nothing kept past the job
        return load_dataset(folder)
    if folder not in _LOADED:
        _LOADED[folder] = load_dataset(folder)
    return _LOADED[folder]


def _hold() -> None:
    """The worker's initializer: every job reads the same bundles, their features and rule margins
    once (a training run's datasets are a few thousand bundles; the parent holds the same)."""
    global _LOADED
    _LOADED = {}
    _HELD.enter_context(hold_features(1 << 16))


@contextmanager
def one_thread() -> Iterator[None]:
    """torch and the BLAS libraries on one thread for the block, in the worker or inline alike."""
    import torch
    from threadpoolctl import threadpool_limits

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(1):
            yield
    finally:
        torch.set_num_threads(before)
