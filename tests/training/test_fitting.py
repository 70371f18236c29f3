"""Greedy ensemble selection: a weak trial never joins; members that help do."""

from __future__ import annotations

from typing import Any

import numpy as np

from training.fitting import select_members
from vsandx.faults import LABELS

COMPS = ["nic:h1/vmnic1", "disk:h1/naa.1"]
TRUTH = [
    {"nic:h1/vmnic1": "net.packet_loss", "disk:h1/naa.1": "none"},
    {"nic:h1/vmnic1": "none", "disk:h1/naa.1": "none"},
]


def one_hot(label: str, p: float = 0.9) -> np.ndarray:
    v = np.full(len(LABELS), (1 - p) / (len(LABELS) - 1))
    v[LABELS.index(label)] = p
    return v


class Fixed:
    """A fitted model's stand-in: the same probabilities for any input."""

    def __init__(self, rows: list[dict[str, np.ndarray]]) -> None:
        self.rows = rows

    def predict_proba(self, X: Any) -> list[dict[str, np.ndarray]]:
        return self.rows


def model(labels: list[dict[str, str]], p: float = 0.9) -> Fixed:
    return Fixed([{c: one_hot(lab[c], p) for c in COMPS} for lab in labels])


def test_weak_members_are_left_out() -> None:
    good = model(TRUTH)
    blind = model([{c: "none" for c in COMPS}] * 2, p=0.99)  # never calls the fault, confidently
    also_good = model(TRUTH, p=0.6)
    X = [object(), object()]
    assert select_members([good, blind, also_good], X, TRUTH, k=3) == [0, 2]  # type: ignore[list-item]
    assert select_members([good, also_good, also_good], X, TRUTH, k=2) == [0, 1]  # type: ignore[list-item]
    assert select_members([blind, good], X, TRUTH, k=3) == [0, 1]  # the best is always kept; good helps
