"""Helpers shared by the service backend's tests: a small trained model, simulated bundles, settings
on a fresh data folder, and waiting for a job."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from data.simulate.runner import simulate_many
from models.registry import create_model
from training.datasets import DatasetSpec, build, load_dataset
from vsandx.settings import ServiceSettings


def train_small_model(root: Path) -> Path:
    """logreg on 12 simulated lab bundles, saved as a model folder (seconds)."""
    X, y = load_dataset(build(DatasetSpec("lab", 12, seed=41, issue_rate=0.7), root, workers=1, progress=False))
    return create_model("logreg").fit(X, y).save(root / "model")


def simulate_bundles(out: Path, n: int = 2, seed: int = 42) -> list[Path]:
    """n lab bundles (4 hosts each) with faults."""
    simulate_many("lab", n, out, seed=seed, issue_rate=1.0, workers=1, progress=False)
    return sorted(out.glob("lab-*.tgz"))


def _shared(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], object]) -> Path:
    """Built once per test run and shared by the modules (and xdist workers) that ask: made in a
    private folder, then renamed into place; a loser of the race uses the winner's."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if base.name.startswith("popen-gw") else base
    final = root / f"vsandx-service-{name}"
    if not final.exists():
        work = Path(tempfile.mkdtemp(dir=root, prefix=f".{name}-"))
        make(work)
        try:
            os.rename(work, final)
        except OSError:
            shutil.rmtree(work, ignore_errors=True)
    return final


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _shared(tmp_path_factory, "model", train_small_model) / "model"


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return sorted(_shared(tmp_path_factory, "bundles", simulate_bundles).glob("lab-*.tgz"))


def service_settings(data_dir: Path, model: Path | str | None, **kw: Any) -> ServiceSettings:
    return ServiceSettings(data_dir=data_dir, model_uri=str(model) if model else None, **kw)


def until(check: Callable[[], Any], timeout: float = 30.0, every: float = 0.05) -> Any:
    """Poll `check` until it returns something truthy; fails the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(every)
    raise AssertionError(f"condition not met within {timeout} s")
