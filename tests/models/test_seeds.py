"""Seeds trained at once (models.seeds): independent members, the ensemble's probabilities, one save."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from models.base import load_model
from models.cnn_net import ClusterCNN
from models.cnn_train import collate, to_arrays
from models.registry import create_model
from models.seeds import SeedStack

from .conftest import LabData


def test_members_start_apart_and_predict_their_mean(lab: LabData) -> None:
    stack = SeedStack(lambda: ClusterCNN(width=8, depth=1), 3, first_seed=5)
    w = [m.encoders["disk"].stem.weight for m in stack.members]
    assert not torch.equal(w[0], w[1]) and not torch.equal(w[1], w[2])
    torch.manual_seed(6)
    assert torch.equal(ClusterCNN(width=8, depth=1).encoders["disk"].stem.weight, w[1])  # member i: seed + i
    stack.eval()
    batch = collate([to_arrays(bt) for bt in lab.X[:2]])
    with torch.inference_mode():
        mean = torch.stack([torch.softmax(m(batch)["nic"], -1) for m in stack.members]).mean(0)
        torch.testing.assert_close(torch.softmax(stack(batch)["nic"], -1), mean)


def test_a_stack_trains_each_member_and_saves_as_one(lab: LabData, tmp_path: Path) -> None:
    X, y = lab.train
    kw = {"width": 8, "depth": 1, "epochs": 2, "coarsen_p": 0.0}
    stack = create_model("cnn_small", seeds=2, seed=3, **kw)
    stack.fit(X[:8], y[:8])
    assert len(stack.network_.members) == 2 and len(stack.history_) == 2
    m0, m1 = stack.network_.members
    assert not torch.equal(m0.heads["disk"][0].weight, m1.heads["disk"][0].weight)
    p = stack.predict_proba(X[8:10])
    again = load_model(stack.save(tmp_path / "stack"))
    q = again.predict_proba(X[8:10])
    for a, b in zip(p, q, strict=True):
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_allclose(a[k], b[k], rtol=1e-6)
    assert again.get_params()["seeds"] == 2
