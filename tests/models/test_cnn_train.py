"""The CNN's training-time pieces: batching and peer-relative inputs."""

from __future__ import annotations

import torch

from models.cnn_net import ClusterCNN
from models.cnn_train import collate, to_arrays
from models.registry import create_model
from pipeline.channels import KIND_CHANNEL_DEFS

from .conftest import LabData


def test_peer_inputs_are_own_minus_peer_mean(lab: LabData) -> None:
    net = ClusterCNN(width=8, depth=1, peer_inputs=True)
    batch = collate([to_arrays(bt) for bt in lab.X[:2]])
    x, _ = net._inputs("nic", batch)
    c = len(KIND_CHANNEL_DEFS["nic"])
    own, mask, rel = x[:, :c], x[:, c : 2 * c], x[:, 2 * c :]
    first = batch.kinds["nic"].bundle == 0
    peers = (own[first] * mask[first]).sum(0) / mask[first].sum(0).clamp(min=1)
    torch.testing.assert_close(rel[first], own[first] - peers * mask[first])
    assert ClusterCNN(width=8, depth=1, peer_inputs=False)._inputs("nic", batch)[0].shape[1] == 2 * c


def test_early_stopping_keeps_the_best_exact_match(lab: LabData) -> None:
    from models.metrics import exact_match

    X, y = lab.train
    Xv, yv = X[12:18], y[12:18]
    m = create_model("cnn_small", width=8, depth=1, epochs=6, patience=6, coarsen_p=0.0).fit(
        X[:12], y[:12], eval_set=(Xv, yv)
    )
    best = max(h["val_exact_match"] for h in m.history_)
    assert exact_match(yv, m.predict(Xv)) == best  # the restored weights are the best epoch's


def test_kind_balance_weighs_every_kind_alike(lab: LabData) -> None:
    import torch.nn.functional as F

    from models.base import KIND_LABELS
    from models.cnn_train import batch_loss
    from vsandx.faults import COMPONENT_KINDS

    batch = collate([to_arrays(bt, labels) for bt, labels in zip(lab.X[:2], lab.y[:2], strict=True)])
    torch.manual_seed(0)
    logits = {k: torch.randn(len(batch.kinds[k].target), len(KIND_LABELS[k])) for k in COMPONENT_KINDS}
    ones = {k: torch.ones(len(KIND_LABELS[k])) for k in COMPONENT_KINDS}
    per_kind = {
        k: F.cross_entropy(logits[k], batch.kinds[k].target, ignore_index=-1, reduction="none") for k in COMPONENT_KINDS
    }
    labelled = {k: per_kind[k][batch.kinds[k].target >= 0] for k in COMPONENT_KINDS}
    by_component = torch.cat(list(labelled.values())).mean()
    by_kind = torch.stack([v.mean() for v in labelled.values() if len(v)]).mean()
    torch.testing.assert_close(batch_loss(logits, batch, ones), by_component)
    torch.testing.assert_close(batch_loss(logits, batch, ones, kind_balance=1.0), by_kind)
