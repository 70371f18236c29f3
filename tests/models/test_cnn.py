"""The wide-and-deep option of models/cnn.py: the head also reads each component's engineered features."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from models.base import load_model
from models.cnn_net import ClusterCNN
from models.cnn_stats import feature_stats
from models.cnn_train import collate, to_arrays
from models.features import bundle_features, feature_names
from models.registry import create_model
from vsandx.faults import COMPONENT_KINDS

from .conftest import LabData


def test_arrays_carry_each_components_feature_row_only_when_asked(lab: LabData) -> None:
    bt = lab.X[0]
    plain, wide = to_arrays(bt), to_arrays(bt, features=True)
    expected = bundle_features(bt)
    for k in COMPONENT_KINDS:
        assert "feat" not in plain[k]
        np.testing.assert_array_equal(wide[k]["feat"].numpy(), expected[k])
    batch = collate([wide, to_arrays(lab.X[1], features=True)])
    n_disks = len(bt.kinds["disk"].ids) + len(lab.X[1].kinds["disk"].ids)
    assert batch.kinds["disk"].feat is not None
    assert batch.kinds["disk"].feat.shape == (n_disks, len(feature_names("disk")))
    assert collate([plain]).kinds["disk"].feat is None


def test_the_head_reads_the_features(lab: LabData) -> None:
    torch.manual_seed(0)
    net = ClusterCNN(width=8, depth=1, features=True).eval()
    arrays = [to_arrays(bt, features=True) for bt in lab.X[:2]]
    net.set_feature_normalisation(feature_stats(arrays))
    batch = collate(arrays)
    with torch.inference_mode():
        before = net(batch)["disk"].clone()
        assert batch.kinds["disk"].feat is not None
        batch.kinds["disk"].feat = batch.kinds["disk"].feat + 10.0
        after = net(batch)["disk"]
    assert not torch.allclose(before, after)
    with pytest.raises(AssertionError, match="engineered features"):
        net(collate([to_arrays(bt) for bt in lab.X[:2]]))


def test_a_wide_model_trains_saves_and_loads(lab: LabData, tmp_path: Path) -> None:
    X, y = lab.train
    model = create_model("cnn_small", width=8, depth=1, epochs=2, coarsen_p=0.5, features=True, seeds=2)
    model.fit(X[:8], y[:8], eval_set=(X[8:10], y[8:10]))
    assert {"val_loss", "val_exact_match"} <= set(model.history_[-1])
    mu = model.network_.members[0].fmu_disk
    assert mu.abs().sum() > 0  # the feature normalisation was learned from the training rows
    again = load_model(model.save(tmp_path / "wide"))
    assert again.get_params()["features"] is True
    for a, b in zip(model.predict_proba(X[10:12]), again.predict_proba(X[10:12]), strict=True):
        assert a.keys() == b.keys()
        for cid in a:
            np.testing.assert_allclose(a[cid], b[cid], rtol=1e-6)


def test_each_family_sweeps_its_own_size_class() -> None:
    """A family's sweep cannot draw another family's size: the largest network cnn_small's space
    allows is smaller than cnn_base's defaults' widest-deepest neighbour, and no family draws the
    stride-2, width-96, depth-4+ networks that took 150-580 s an epoch in the standard preset."""
    from models.registry import default_config, search_space

    def biggest(name: str) -> tuple[int, int, int]:
        sp = search_space(name)
        return max(sp["width"][1]), sp["depth"][2], min(sp["stride"][1])

    for name in ("cnn_small", "cnn_base", "cnn_deep"):
        width, depth, stride = biggest(name)
        cfg = default_config(name)
        assert cfg["width"] in search_space(name)["width"][1] and cfg["depth"] <= depth
        assert not (width >= 96 and depth >= 4 and stride <= 2), name
    assert biggest("cnn_small")[:2] <= (default_config("cnn_base")["width"], default_config("cnn_base")["depth"])
