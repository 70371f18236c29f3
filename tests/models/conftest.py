"""Shared fixtures: simulated lab bundles (every one with a fault), loaded once per test session."""

from __future__ import annotations

import json
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# tests/ on sys.path would let tests/models shadow the real `models` package as a namespace package.
sys.path.insert(0, str(REPO))
if getattr(sys.modules.get("models"), "__file__", "") is None:
    del sys.modules["models"]

import torch  # noqa: E402

from data.simulate.runner import simulate_many  # noqa: E402
from models.base import Diagnoser  # noqa: E402
from models.registry import create_model  # noqa: E402
from pipeline import load_bundle  # noqa: E402
from pipeline.tensors import BundleTensors  # noqa: E402

# One intra-op thread: on a shared 2-core box, OpenMP threads competing with other processes slow
# small CNN training down by an order of magnitude; one thread is predictable.
torch.set_num_threads(1)

N_BUNDLES = 48
N_TRAIN = 32
SEED = 11


def model_for_tests(name: str, cnn_epochs: int, ensemble_cnn: bool = True) -> Diagnoser:
    """A registered model configured to fit quickly: CNNs train `cnn_epochs` epochs; an ensemble
    (whose default has no members) averages logistic regression with a small CNN or with NB."""
    if name.startswith("cnn"):
        return create_model(name, epochs=cnn_epochs)
    if name == "ensemble":
        other = ("cnn_small", {"epochs": cnn_epochs}) if ensemble_cnn else ("mnb", {})
        return create_model(name, members=[("logreg", {}), other])
    return create_model(name)


@dataclass
class LabData:
    X: list[BundleTensors]
    y: list[dict[str, str]]
    paths: list[Path] = field(default_factory=list)  # the archives, with the simulator's labels.json

    @property
    def train(self) -> tuple[list[BundleTensors], list[dict[str, str]]]:
        return self.X[:N_TRAIN], self.y[:N_TRAIN]

    @property
    def test(self) -> tuple[list[BundleTensors], list[dict[str, str]]]:
        return self.X[N_TRAIN:], self.y[N_TRAIN:]


def read_labels(path: Path) -> dict[str, str]:
    with tarfile.open(path) as tf:
        member = next(m for m in tf.getmembers() if m.name.rsplit("/", 1)[-1] == "labels.json")
        fh = tf.extractfile(member)
        assert fh is not None
        return dict(json.load(fh)["components"])


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> LabData:
    """48 lab bundles (4 hosts, 2 h at 20 s), issue rate 1.0: 32 to train on, 16 held out."""
    out = tmp_path_factory.mktemp("lab")
    results = simulate_many("lab", N_BUNDLES, out, seed=SEED, issue_rate=1.0, progress=False, workers=2)
    paths = [out / r["path"] for r in results]
    return LabData([load_bundle(p) for p in paths], [read_labels(p) for p in paths], paths)


@pytest.fixture(scope="session")
def tiny(lab: LabData) -> LabData:
    """Six bundles: enough to exercise the contract, fast to fit."""
    return LabData(lab.X[:6], lab.y[:6], lab.paths[:6])
