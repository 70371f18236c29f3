"""The CNN's training-time pieces: coarsening and event-dropout augmentation, peer-relative inputs."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from models.cnn import ClusterCNN
from models.cnn_train import coarsen, collate, to_arrays, without_events
from models.registry import create_model
from pipeline.tensors import BundleTensors
from pipeline.channels import KIND_CHANNEL_DEFS, KIND_STATIC

from .conftest import LabData


def test_coarsen_is_what_a_coarser_interval_gives(lab: LabData) -> None:
    bt, labels = lab.X[0], lab.y[0]
    a = to_arrays(bt, labels)
    k = 5
    c = coarsen(a, k)
    for kind, arr in a.items():
        v, m, cv, cm = arr["values"], arr["mask"], c[kind]["values"], c[kind]["mask"]
        t = v.shape[-1]
        tk = t // k
        assert cv.shape == v.shape and not cm[..., tk:].any()  # the rest of the grid is "no data"
        assert torch.equal(cm[..., :tk], m[..., : tk * k].reshape(*m.shape[:2], tk, k).any(-1))
        assert torch.equal(c[kind]["target"], arr["target"])
        for ci, ch in enumerate(KIND_CHANNEL_DEFS[kind]):
            lin = torch.expm1(v[:, ci]) if ch.log else v[:, ci]
            lin_c = torch.expm1(cv[:, ci]) if ch.log else cv[:, ci]
            blocks = (lin * m[:, ci])[:, : tk * k].reshape(-1, tk, k)
            n = m[:, ci, : tk * k].reshape(-1, tk, k).sum(-1)
            want = blocks.sum(-1) if ch.source == "event" else blocks.sum(-1) / n.clamp(min=1)
            np.testing.assert_allclose(lin_c[:, :tk][n > 0], want[n > 0], rtol=1e-3, atol=1e-3)
    step = KIND_STATIC["cluster"].index("step_s")
    assert float(c["cluster"]["static"][0, step]) == k * float(a["cluster"]["static"][0, step])


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
    from models.registry import create_model

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


def _no_logs(bt: BundleTensors) -> BundleTensors:
    kinds = {}
    for k, kt in bt.kinds.items():
        ev = np.array([c.source == "event" for c in KIND_CHANNEL_DEFS[k]])[None, :, None]
        kinds[k] = dataclasses.replace(kt, values=np.where(ev, 0, kt.values).astype(np.float32), mask=kt.mask & ~ev)
    return dataclasses.replace(bt, kinds=kinds)


def test_without_events_is_the_bundle_with_no_logs_collected(lab: LabData) -> None:
    """Blanking the arrays gives what the pipeline and the feature code give for a bundle whose logs
    are missing: series and engineered features alike (the features are not recomputed per epoch)."""
    disk_events = [i for i, c in enumerate(KIND_CHANNEL_DEFS["disk"]) if c.source == "event"]
    bt = next(b for b in lab.X if b.kinds["disk"].values[:, disk_events].any())  # a bundle whose logs tell
    got = without_events(to_arrays(bt, features=True))
    want = to_arrays(_no_logs(bt), features=True)
    for k in got:
        assert torch.equal(got[k]["mask"], want[k]["mask"])
        assert torch.equal(got[k]["values"], want[k]["values"])
        np.testing.assert_allclose(got[k]["feat"].numpy(), want[k]["feat"].numpy(), rtol=1e-5, atol=1e-5)
    assert not torch.equal(got["disk"]["feat"], to_arrays(bt, features=True)["disk"]["feat"])


def test_event_dropout_trains(lab: LabData) -> None:
    X, y = lab.train
    m = create_model("cnn_small", width=8, depth=1, epochs=1, event_dropout=1.0).fit(X[:4], y[:4])
    assert m.get_params()["event_dropout"] == 1.0 and len(m.history_) == 1
