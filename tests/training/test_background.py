"""training/background.py: the worker that fits a run's baselines and learning curve beside its sweep,
and what a process that may not have one (a Celery prefork child) does instead."""

from __future__ import annotations

import os
import time
from concurrent.futures import BrokenExecutor, CancelledError
from pathlib import Path

import pytest

from training.background import InlineExecutor, background, one_thread


def _worker_state() -> tuple[int, int, int]:
    from models.features import bundle_features
    from models.rules_margins import named_margins

    with one_thread():
        import torch

        threads = torch.get_num_threads()
    return threads, bundle_features._limit(), named_margins._limit()


def test_the_worker_fits_on_one_thread_and_holds_its_bundles_features() -> None:
    with background() as pool:
        assert not isinstance(pool, InlineExecutor)
        threads, features, margins = pool.submit(_worker_state).result(timeout=120)
    assert threads == 1  # the sweep's trials hold the cores
    assert features >= 1 << 16 and margins >= 1 << 16  # every job reads the same datasets once


def test_one_thread_is_given_back() -> None:
    import torch

    before = torch.get_num_threads()
    with one_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_a_failing_run_stops_the_worker_at_once() -> None:
    """A run that fails (no sweep trial finished, say) does not wait for a baseline's minutes of fitting."""
    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match="the sweep failed"), background() as pool:
        long = pool.submit(time.sleep, 600)
        queued = pool.submit(time.sleep, 600)
        while not long.running():
            time.sleep(0.05)
        raise RuntimeError("the sweep failed")
    assert time.perf_counter() - t0 < 120  # the worker's start included; the jobs alone are 20 minutes
    for job in (long, queued):  # ended: the worker stopped under the one, the other never ran
        with pytest.raises((BrokenExecutor, CancelledError)):
            job.result(timeout=0)


def _in_a_prefork_child(root: str) -> tuple[str, int, int, str]:
    """What `vsandx worker --queues training` (Celery prefork, a daemonic pool child) runs of a training."""
    from training.datasets import DatasetSpec, build, load_dataset

    folder = build(DatasetSpec("lab", 4, seed=5), Path(root), workers=2, progress=False)
    with background() as pool:
        kind = type(pool).__name__
        pid = pool.submit(os.getpid).result()
        failed = pool.submit(int, "x").exception()
    return kind, pid, len(load_dataset(folder)[0]), repr(failed)


def test_a_celery_prefork_child_trains_in_its_own_process(tmp_path: Path) -> None:
    """multiprocessing refuses a daemonic process children ("daemonic processes are not allowed to have
    children"): the datasets are built and the side fits run in the pool child itself."""
    billiard = pytest.importorskip("billiard")
    with billiard.Pool(1) as pool:
        child = pool.apply_async(os.getpid).get(timeout=60)
        kind, pid, n, failed = pool.apply_async(_in_a_prefork_child, (str(tmp_path),)).get(timeout=600)
    assert kind == "InlineExecutor" and pid == child and n == 4
    assert "ValueError" in failed  # a job's error comes back on its future, as from the worker
