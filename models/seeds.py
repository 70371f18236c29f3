"""Several seeds of one CNN trained at once (`create_model("cnn_small", seeds=4)`).

Every member sees the same batches, so collation, augmentation and the validation passes are paid
once for all of them instead of once per seed; each member keeps its own initialisation (seed + i),
dropout draws, loss and gradient clipping, so they are K independent networks that share the data
path. The stack predicts with the mean of its members' probabilities (an ensemble in one model) and
is selected, stopped early and saved as one. Whether it pays is measured by
benchmarks/bench_seeds.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor, nn

if TYPE_CHECKING:
    from models.cnn_train import Batch  # cnn_train imports this module


class SeedStack(nn.Module):
    """K networks of one architecture; forward -> per kind (N_k, n_labels) log of the mean probability."""

    def __init__(self, make: Callable[[], nn.Module], seeds: int, first_seed: int) -> None:
        super().__init__()
        members = []
        with torch.random.fork_rng(devices=[]):  # the caller's RNG (dropout draws, other models) untouched
            for i in range(seeds):
                torch.manual_seed(first_seed + i)  # each member its own initialisation
                members.append(make())
        self.members = nn.ModuleList(members)

    def set_normalisation(self, stats: dict[str, tuple[np.ndarray, ...]]) -> None:
        for m in self.members:
            m.set_normalisation(stats)  # type: ignore[operator]

    def set_feature_normalisation(self, stats: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        for m in self.members:
            m.set_feature_normalisation(stats)  # type: ignore[operator]

    def member_logits(self, b: Batch) -> list[dict[str, Tensor]]:
        return [m(b) for m in self.members]

    def forward(self, b: Batch) -> dict[str, Tensor]:
        outs = self.member_logits(b)
        # log mean_i softmax(z_i): softmax of it is the members' mean probability, and cross-entropy on it
        # is the ensemble's loss (log_softmax leaves log-probabilities unchanged)
        return {
            k: torch.logsumexp(torch.stack([torch.log_softmax(o[k], -1) for o in outs]), 0) - math.log(len(outs))
            for k in outs[0]
        }


def member_outputs(net: nn.Module, b: Batch) -> list[dict[str, Tensor]]:
    """What the training loss is summed over: each member's logits (one network: itself)."""
    return net.member_logits(b) if isinstance(net, SeedStack) else [net(b)]


def clip_members(net: nn.Module, max_norm: float) -> None:
    """Gradient-norm clipping per member, so one member's large step never shrinks another's."""
    for m in net.members if isinstance(net, SeedStack) else [net]:
        nn.utils.clip_grad_norm_(m.parameters(), max_norm)
