"""Ray Tune, and only here: the CNN hyperparameter sweep with ASHA early stopping.

Each trial trains one registered model on the cached lab training set, mixed to the trial's issue
rate, and reports the field validation set's exact match after every epoch; ASHA stops the weak ones.
A trial takes a share of a GPU when CUDA is present and one CPU otherwise. `ray_address` (or the
VSANDX_RAY_ADDRESS setting) puts the sweep on an existing Ray cluster. Winners' configs from an
earlier sweep are evaluated first (warm start); a sweep with none starts from the family's registered
recipe, so that a small sweep's result does not hang on what its few random draws happen to be.
The training and validation sets go into Ray's object store once and every trial maps them, and a
sweep on this machine runs as many trials at once as its memory holds (training/sweep_memory.py).
A trial that Ray's out-of-memory killer ends stops that run of trials, not the training: the trials
that finished are kept, and the ones left (the killed trial's config first) run again one at a time. A
sweep none of whose trials finish raises SweepFailed, saying why and what to change. A sweep with a
budget (`budget_s`) gives its trials a deadline: each stops training before an epoch would end past it
and is scored on its best epoch so far (`out_of_time`); one that starts with under a quarter of the
budget left, where another has saved a model, trains nothing (`late_start`, sweep_results.started_late).
"""

from __future__ import annotations

import math
import os
import sys
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import ray
import ray._private.utils as ray_utils
import torch
from ray import tune
from ray.exceptions import OutOfMemoryError
from ray.tune import Callback
from ray.tune.schedulers import ASHAScheduler
from ray.tune.search.basic_variant import BasicVariantGenerator
from tqdm import tqdm

from models.registry import search_space
from pipeline.tensors import BundleTensors
from training.datasets import load_dataset
from training.fitting import Labels, fit_and_score, mix_issue_rate
from training.sweep_errors import SweepFailed, out_of_memory_advice
from training.sweep_memory import (
    DEFAULT_KILL_SHARE,
    bundle_sizes,
    loaded_bytes,
    release_freed,
    sweep_concurrency,
)
from training.sweep_results import (
    LATE_SHARE,
    METRIC,
    Row,
    SweepSpec,
    TrialOutcome,
    first_line,
    outcomes,
    registry_point,
    started_late,
)

GPU_SHARE = 0.25  # of one GPU, a trial's

Datasets = tuple[list[BundleTensors], list[Labels], list[BundleTensors], list[Labels]]  # X, y, Xv, yv


def ray_space(space: Mapping[str, tuple[Any, ...]]) -> dict[str, Any]:
    """The registry's plain-data search space as Ray Tune samplers."""
    out: dict[str, Any] = {}
    for name, spec in space.items():
        kind = spec[0]
        if kind == "uniform":
            out[name] = tune.uniform(spec[1], spec[2])
        elif kind == "loguniform":
            out[name] = tune.loguniform(spec[1], spec[2])
        elif kind == "int":
            out[name] = tune.randint(spec[1], spec[2] + 1)
        else:
            out[name] = tune.choice(list(spec[1]))
    return out


def _trial(
    config: dict[str, Any], model: str, data: Datasets, out_dir: str, deadline: float | None, start_by: float | None
) -> None:
    torch.set_num_threads(1)  # the trial holds one CPU; more threads only fight the other trials
    trial_id = tune.get_context().get_trial_id()
    if started_late(trial_id, Path(out_dir), start_by, time.time()):
        tune.report({METRIC: 0.0, "epoch": 1.0, "late_start": 1.0})  # no model: selection passes it by
        return
    # `data` comes from Ray's object store: its arrays are read-only views of memory every trial shares
    warnings.filterwarnings("ignore", "The given NumPy array is not writable", UserWarning)
    params = dict(config)
    issue_rate = float(params.pop("issue_rate"))
    X, y, Xv, yv = data
    X, y = mix_issue_rate(X, y, issue_rate, seed=int(params.get("seed", 0)))

    def report(record: Mapping[str, float]) -> None:
        tune.report({k: float(v) for k, v in record.items() if isinstance(v, int | float)})

    folder = Path(out_dir) / trial_id
    fit_and_score(model, params, X, y, Xv, yv, folder, on_epoch=report, deadline=deadline)


class _Progress(Callback):
    def __init__(self, total: int, desc: str, enabled: bool) -> None:
        self.bar = tqdm(total=total, desc=desc, unit="trial", disable=not enabled)
        self.best = -math.inf

    # Tune saves its callbacks with the experiment state; the bar holds this process's stderr (under a
    # test's capture or a worker's log proxy, not picklable) and is no state worth keeping.
    def __getstate__(self) -> dict[str, Any]:
        return {"best": self.best}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.best = state["best"]
        self.bar = tqdm(disable=True)

    def on_trial_result(
        self, iteration: int, trials: list[Any], trial: Any, result: dict[str, Any], **info: Any
    ) -> None:
        if METRIC in result and result[METRIC] > self.best:
            self.best = result[METRIC]
            self.bar.set_postfix(best=f"{self.best:.3f}")

    def on_trial_complete(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self.bar.update()

    def on_trial_error(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self.bar.update()


class _Record(Callback):
    """Every trial's reported results, kept on the driver: what finished before Tune gave up on a sweep."""

    def __init__(self) -> None:
        self.results: dict[str, list[dict[str, Any]]] = {}
        self.started: dict[str, dict[str, Any]] = {}  # trial id -> its config, in start order
        self.done: dict[str, dict[str, Any]] = {}  # trial id -> its config, in completion order
        self.errors: list[str] = []  # the first line of each failed trial's error
        self.killed: list[dict[str, Any]] = []  # the configs of trials the out-of-memory killer ended

    def on_trial_start(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self.started[trial.trial_id] = dict(trial.config)

    def on_trial_result(
        self, iteration: int, trials: list[Any], trial: Any, result: dict[str, Any], **info: Any
    ) -> None:
        self.results.setdefault(trial.trial_id, []).append(dict(result))

    def on_trial_complete(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self.done[trial.trial_id] = dict(trial.config)

    def finished(self) -> list[Row]:
        """(config, last result, every result) of each trial that completed, in completion order."""
        return [(cfg, self.results[t][-1], self.results[t]) for t, cfg in self.done.items() if self.results.get(t)]

    def unfinished(self) -> list[dict[str, Any]]:
        """The configs of trials that started and did not complete (the killed one among them)."""
        return [cfg for t, cfg in self.started.items() if t not in self.done]


def _for_memory(error: object) -> bool:
    """Ray's out-of-memory killer ended a trial. Tune 2.60 shows it two ways: a trial's error (a string
    read back from its error file: "1 worker(s) were killed due to the node running low on memory"),
    or, killed at another moment, the whole sweep aborted with a RuntimeError raised from the
    OutOfMemoryError, which it does not count as the trial's failure."""
    if isinstance(error, RuntimeError) and isinstance(error.__cause__, OutOfMemoryError):
        return True
    return isinstance(error, OutOfMemoryError) or "running low on memory" in str(error)


def run_sweep(
    spec: SweepSpec,
    train_dir: Path,
    val_dir: Path,
    out_dir: Path,
    ray_address: str | None = None,
    progress: bool = True,
) -> list[TrialOutcome]:
    space = ray_space(search_space(spec.model))
    space["issue_rate"] = tune.uniform(*spec.issue_rate)
    space["seed"] = spec.seed
    space.update(spec.overrides)
    # Ray started here is shut down when the sweep ends: a service worker that ran a retrain, or a test
    # process, would otherwise keep a raylet, a GCS and idle workers (and their signal handlers) for life.
    started = not ray.is_initialized()
    sizes = bundle_sizes(train_dir)  # read once: the total and the largest
    shared = sum(sizes) + loaded_bytes(val_dir)
    if started:
        # a store that holds the datasets (Ray's default is 30 % of the memory available at its start),
        # within 60 % of it: Ray refuses to start when the rest would be under 5 %, and a dataset larger
        # than the store goes to disk-backed pages instead (still one copy)
        room = int(0.6 * ray_utils.estimate_available_memory())
        store = max(min(int(1.2 * shared) + 2**29, room), 2**27) if ray_address is None else None
        ray.init(
            address=ray_address,
            object_store_memory=store,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
        )
    try:
        # the trials run on this machine, unless they go to a Ray cluster: size them to its memory
        concurrency = spec.max_concurrent or (
            _memory_concurrency(spec, shared, max(sizes, default=0)) if ray_address is None else 0
        )
        return _sweep(spec, space, (train_dir, val_dir), concurrency, out_dir, progress)
    finally:
        if started:
            ray.shutdown()


def _memory_concurrency(spec: SweepSpec, shared: int, largest: int) -> int:
    """sweep_concurrency on this machine: its CPU (or GPU share) slots and Ray's own count of used
    memory (cgroup aware, as its out-of-memory killer counts)."""
    slots = max(1, int(torch.cuda.device_count() / GPU_SHARE) if torch.cuda.is_available() else (os.cpu_count() or 1))
    total, used = ray_utils.get_system_memory(), ray_utils.get_used_memory()
    kill_share = float(os.environ.get("RAY_memory_usage_threshold", DEFAULT_KILL_SHARE))  # noqa: SIM112 (Ray's name)
    return sweep_concurrency(
        spec.model, spec.overrides, spec.reserve_bytes, shared, largest, slots, total, used, kill_share
    )


def _sweep(
    spec: SweepSpec,
    space: dict[str, Any],
    folders: tuple[Path, Path],
    concurrency: int,
    out_dir: Path,
    progress: bool,
) -> list[TrialOutcome]:
    gpu = GPU_SHARE if torch.cuda.is_available() else 0.0
    deadline = time.time() + spec.budget_s if spec.budget_s > 0 else None
    start_by = None if deadline is None else deadline - LATE_SHARE * spec.budget_s
    trainable = tune.with_resources(
        # The training and validation sets go into Ray's object store once, here, and every trial maps
        # the same arrays; no name keeps this process's copy, freed once stored. An absolute path:
        # trials run in Ray workers with another working directory.
        tune.with_parameters(
            _trial,
            model=spec.model,
            data=(*load_dataset(folders[0]), *load_dataset(folders[1])),
            out_dir=str(out_dir.resolve()),
            deadline=deadline,
            start_by=start_by,
        ),
        {"cpu": 1, "gpu": gpu},
    )
    release_freed()
    # A fixed hyperparameter (overrides) stays fixed: Ray would let a warm point's value replace it.
    free = set(space) - set(spec.overrides)

    def point(config: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in config.items() if k in free}

    warm = [point(c) for c in spec.warm_start or [registry_point(spec.model, float(np.mean(spec.issue_rate)))]]
    rows, record, killed = _fit(spec, space, trainable, warm, spec.num_samples, concurrency, out_dir, progress)
    if killed:
        left = spec.num_samples - len(rows)
        again = left > 0 and concurrency != 1 and (deadline is None or time.time() < deadline)
        print(
            f"sweep {spec.model}: Ray's out-of-memory killer ended a trial ({killed}); {len(rows)} of "
            f"{spec.num_samples} trials finished" + (f", the {left} left run one at a time" if again else ""),
            file=sys.stderr,
        )
        if again:
            # the killed trials' configs first, then the warm points that never started, then new draws.
            # A warm point names fewer keys than a trial Ray started from it (the space's seed), so it has
            # started where a trial holds each key it names: compared as whole dicts, the quick preset's
            # warm point ran again after a kill, and two identical networks took 2 of its 4 trials.
            lost = [point(c) for c in record.killed]
            seen = [point(c) for c in record.started.values()] + lost
            retry = [c for i, c in enumerate(lost) if c not in lost[:i]]
            retry += [w for w in warm if not any(_agrees(w, c) for c in seen)]
            more, _, killed_again = _fit(spec, space, trainable, retry, left, 1, out_dir, progress, serial=True)
            rows += more
            killed = killed_again or killed
        if not rows:
            raise SweepFailed(out_of_memory_advice(spec.model, killed, again or concurrency == 1))
    elif not rows and record.errors:
        raise SweepFailed(f"every trial of the {spec.model} sweep failed; the first: {record.errors[0]}")
    return outcomes(spec.model, rows, out_dir)


def _agrees(point: Mapping[str, Any], config: Mapping[str, Any]) -> bool:
    """Whether `config` holds every key of `point` at its value (a trial started from that point)."""
    return all(k in config and config[k] == v for k, v in point.items())


def _fit(
    spec: SweepSpec,
    space: dict[str, Any],
    trainable: Any,
    warm: list[dict[str, Any]],
    num_samples: int,
    concurrency: int,
    out_dir: Path,
    progress: bool,
    serial: bool = False,
) -> tuple[list[Row], _Record, str]:
    """One Tuner run of `num_samples` trials, `warm` first: the finished trials' rows, the record of what
    started, failed and was killed, and what Ray said if its out-of-memory killer ended a trial ("" if
    none did)."""
    epochs_fixed = "epochs" in spec.overrides
    # one more than the epochs: the final report (saved model, final_* scores) comes after the last epoch
    max_t = (int(spec.overrides["epochs"]) if epochs_fixed else spec.max_epochs) + 1
    scheduler = ASHAScheduler(time_attr="epoch", max_t=max_t, grace_period=min(spec.grace_epochs, max_t))
    record = _Record()
    name = f"sweep-{spec.model}" + ("-serial" if serial else "")
    tuner = tune.Tuner(
        trainable,
        param_space=space,
        tune_config=tune.TuneConfig(
            metric=METRIC,
            mode="max",
            scheduler=scheduler,
            num_samples=num_samples,
            # a run again draws afresh: the first run's seed would repeat the draws that finished. The
            # generator holds the concurrency: Ray ignores max_concurrent_trials beside a search_alg that
            # is no Searcher ("will be ignored"), and a sweep held to one trial at a time for memory ran
            # two, which its out-of-memory killer ended (the standard preset beside the quick one)
            search_alg=BasicVariantGenerator(
                points_to_evaluate=warm or None, max_concurrent=concurrency or 0, random_state=spec.seed + serial
            ),
        ),
        run_config=tune.RunConfig(
            name=name,
            storage_path=str((out_dir / "ray").resolve()),
            verbose=0,
            callbacks=[_Progress(num_samples, name.replace("-", " ", 1), progress), record],
        ),
    )
    try:
        results = tuner.fit()
    except RuntimeError as exc:
        if not _for_memory(exc):
            raise
        # a trial outgrew the machine's memory: keep what finished
        record.killed = record.unfinished()
        return record.finished(), record, first_line(exc.__cause__)
    every = [results[i] for i in range(len(results))]
    failed = [r for r in every if r.error is not None]
    record.errors = [first_line(r.error) for r in failed if not _for_memory(r.error)]
    record.killed = [dict(r.config or {}) for r in failed if _for_memory(r.error)]
    killed = next((first_line(r.error) for r in failed if _for_memory(r.error)), "")
    rows = [
        (
            dict(r.config or {}),
            dict(r.metrics or {}),
            [] if r.metrics_dataframe is None else r.metrics_dataframe.to_dict("records"),
        )
        for r in every
        if r.error is None and r.metrics is not None
    ]
    return rows, record, killed
