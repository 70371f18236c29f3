"""The CNN families (`cnn_small`, `cnn_base`, `cnn_deep`) as estimators: CNNDiagnoser trains and serves
models/cnn_net.py's ClusterCNN (a PerfPsychic-style temporal CNN over a bundle's tensors with host and
cluster context; its docstring says how it reads a bundle), registered with their defaults and the
sweep's search space. The fit loop lives in models/cnn_train.py; several seeds at once in models/seeds.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import torch

from models.base import Diagnoser, Labels, Proba, check_Xy, expand_proba
from models.cnn_net import ClusterCNN
from models.cnn_train import EpochCallback, collate, fit_network, to_arrays
from models.estimator import check_is_fitted
from models.registry import register_model
from models.seeds import SeedStack
from pipeline.channels import KIND_CHANNELS
from pipeline.tensors import BundleTensors
from vsandx.faults import COMPONENT_KINDS

_SPACE = {
    "width": ("choice", [24, 32, 48, 64, 96]),
    "depth": ("int", 1, 5),
    "kernel_size": ("choice", [3, 5, 7]),
    "stride": ("choice", [2, 4, 8]),
    "dropout": ("uniform", 0.0, 0.4),
    "lr": ("loguniform", 3e-4, 1e-2),
    "weight_decay": ("loguniform", 1e-5, 1e-1),
    "epochs": ("int", 20, 120),
    "batch_size": ("choice", [4, 8, 16, 32]),
    "class_weight_power": ("uniform", 0.0, 1.0),
    "kind_balance": ("uniform", 0.5, 1.0),
    "coarsen_p": ("uniform", 0.0, 0.6),
    "event_dropout": ("uniform", 0.0, 0.4),
    "seed": ("int", 0, 10_000),
}


# Families read the engineered features and see a fifth of their training bundles without log events.
# Measured with 500 lab + 500 varied bundles on 200 field test bundles (benchmarks/bench_accuracy.py,
# cnn_small with seeds=3): 0.965 exact match as collected and 0.96 with the logs blanked; without the
# dropout 0.965 and 0.93; on the series alone 0.955 and 0.96 (logistic regression: 0.97 and 0.935).
_FAMILY = {"features": True, "event_dropout": 0.2, "load_scale_p": 0.5}


def _sized(widths: list[int], depths: tuple[int, int], strides: list[int]) -> dict[str, tuple[Any, ...]]:
    """A family is a size class: its sweep draws width, depth and stem stride around its own defaults
    and tunes the rest. With one space for all, a depth-4, width-96 draw for cnn_base trained at 150-580
    s an epoch on 1,000 bundles against 30-35 s for cnn_small's defaults, and one such draw overran the
    standard preset's hour (README, "vsandx train --standard"). Measured on 24 bundles (one core, a
    benchmark on the other): an epoch of cnn_base at width 64, depth 4, kernel 7 costs 3.3 s at stride 2
    and 5.5 s at width 96; the stem's stride sets the sequence every block convolves."""
    return {**_SPACE, "width": ("choice", widths), "depth": ("int", *depths), "stride": ("choice", strides)}


@register_model(
    "cnn_small",
    defaults={"width": 32, "depth": 2, "kernel_size": 5, **_FAMILY},
    space=_sized([24, 32, 48], (1, 3), [2, 4, 8]),
)
@register_model(
    "cnn_base",
    defaults={"width": 48, "depth": 3, "kernel_size": 5, **_FAMILY},
    space=_sized([32, 48, 64], (2, 4), [4, 8]),
)
@register_model(
    "cnn_deep",
    defaults={"width": 64, "depth": 5, "kernel_size": 3, **_FAMILY},
    space=_sized([48, 64, 96], (3, 5), [4, 8]),
)
class CNNDiagnoser(Diagnoser):
    """Per-kind temporal CNN encoders with host and cluster context, trained end to end (PyTorch)."""

    default_name = "cnn_base"

    def __init__(
        self,
        width: int = 48,
        depth: int = 3,
        kernel_size: int = 5,
        stride: int = 4,
        dropout: float = 0.1,
        lr: float = 3e-3,
        weight_decay: float = 1e-2,
        epochs: int = 60,
        batch_size: int = 8,
        class_weight_power: float = 0.5,
        # 0: a kind's loss weighs by its component count; 1: every kind alike. Measured (400 bundles, 15
        # epochs, 200 field test): exact match 0.79 at 0 (cluster.resync recall 0.22), 0.89 at 0.5, 0.90 at 1
        kind_balance: float = 1.0,
        grad_clip: float = 1.0,
        patience: int = 15,
        validation_fraction: float = 0.0,
        peer_inputs: bool = False,  # measured: lab->field exact match 0.62 with, 0.76 without (600 lab)
        coarsen_p: float = 0.3,  # measured: 0.76 with 0.3, 0.71 without
        event_dropout: float = 0.0,  # share of training bundles shown without their log events
        load_scale_p: float = 0.0,  # share of under-driven clusters shown at 0.5-2x load (models.cnn_augment)
        features: bool = False,  # the head also reads the baselines' engineered features (wide and deep)
        seeds: int = 1,  # >1: that many networks trained at once on the same batches (models.seeds)
        seed: int = 0,
        device: str = "auto",
    ) -> None:
        self.width = width
        self.depth = depth
        self.kernel_size = kernel_size
        self.stride = stride
        self.dropout = dropout
        self.lr = lr
        self.weight_decay = weight_decay
        self.epochs = epochs
        self.batch_size = batch_size
        self.class_weight_power = class_weight_power
        self.kind_balance = kind_balance
        self.grad_clip = grad_clip
        self.patience = patience
        self.validation_fraction = validation_fraction
        self.peer_inputs = peer_inputs
        self.coarsen_p = coarsen_p
        self.event_dropout = event_dropout
        self.load_scale_p = load_scale_p
        self.features = features
        self.seeds = seeds
        self.seed = seed
        self.device = device

    def _device(self) -> torch.device:
        if self.device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        return torch.device(self.device)

    def _build(self) -> ClusterCNN | SeedStack:
        def one() -> ClusterCNN:
            return ClusterCNN(
                self.width, self.depth, self.kernel_size, self.stride, self.dropout, self.peer_inputs, self.features
            )

        return one() if self.seeds <= 1 else SeedStack(one, self.seeds, self.seed)

    def fit(
        self,
        X: Sequence[BundleTensors],
        y: Sequence[Labels],
        eval_set: tuple[Sequence[BundleTensors], Sequence[Labels]] | None = None,
        on_epoch: EpochCallback | None = None,
        deadline: float | None = None,
    ) -> Self:
        """Train from scratch; with `eval_set` (or validation_fraction > 0) stop early on its exact match and
        keep the best epoch's weights. Per-epoch figures land in `history_` and go to `on_epoch`. Training
        ends early where its next epoch would end past `deadline` (time.time(); models.cnn_train)."""
        check_Xy(X, y)
        device = self._device()
        # Seed weights and dropout without disturbing the caller's global RNG state.
        cuda = (
            [device.index if device.index is not None else torch.cuda.current_device()] if device.type == "cuda" else []
        )
        with torch.random.fork_rng(devices=cuda):
            torch.manual_seed(self.seed)
            self._fit(X, y, eval_set, device, on_epoch, deadline)
        return self

    def _fit(
        self,
        X: Sequence[BundleTensors],
        y: Sequence[Labels],
        eval_set: tuple[Sequence[BundleTensors], Sequence[Labels]] | None,
        device: torch.device,
        on_epoch: EpochCallback | None = None,
        deadline: float | None = None,
    ) -> None:
        train, val = list(zip(X, y, strict=True)), None
        if eval_set is not None:
            check_Xy(*eval_set)
            val = list(zip(*eval_set, strict=True))
        elif self.validation_fraction > 0 and len(train) >= 4:
            order = np.random.default_rng(self.seed).permutation(len(train))
            n_val = max(1, round(self.validation_fraction * len(train)))
            val, train = [train[i] for i in order[:n_val]], [train[i] for i in order[n_val:]]
        net = self._build()
        self.history_: list[dict[str, float]] = fit_network(net, train, val, self, device, on_epoch, deadline)
        self.network_ = net.eval()  # stays on its device; eval mode from here on

    @torch.inference_mode()
    def predict_proba(self, X: Sequence[BundleTensors]) -> list[Proba]:
        check_is_fitted(self)
        check_Xy(X)
        device = self._device()
        net = self.network_
        if next(net.parameters()).device.type != device.type:  # moving a module walks it: only when needed
            net.to(device)
        out: list[Proba] = []
        for start in range(0, len(X), 16):
            chunk = X[start : start + 16]
            logits = net(collate([to_arrays(bt, features=self.features) for bt in chunk], device))
            probs = {k: expand_proba(k, torch.softmax(v.double(), -1).cpu().numpy()) for k, v in logits.items()}
            at = dict.fromkeys(COMPONENT_KINDS, 0)
            for bt in chunk:
                scores: Proba = {}
                for k in COMPONENT_KINDS:
                    ids = bt.kinds[k].ids
                    scores.update(zip(ids, probs[k][at[k] : at[k] + len(ids)], strict=True))
                    at[k] += len(ids)
                out.append(scores)
        return out

    def _get_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        arrays = {k: v.detach().cpu().numpy() for k, v in self.network_.state_dict().items()}
        meta = {"history": self.history_, "channels": {k: list(v) for k, v in KIND_CHANNELS.items()}}
        return meta, arrays

    def _set_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        if meta["channels"] != {k: list(v) for k, v in KIND_CHANNELS.items()}:
            raise ValueError("saved CNN was trained on another channel catalogue")
        net = self._build()
        net.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in arrays.items()})
        self.network_ = net.eval()
        self.history_ = list(meta["history"])
