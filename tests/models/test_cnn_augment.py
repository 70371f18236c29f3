"""Augmentation (models/cnn_augment.py): what a coarser interval, or no logs, would give."""

from __future__ import annotations

import numpy as np
import torch

from models.cnn_augment import LOAD_INVARIANT, LOAD_SCALE_RANGE, coarsen, load_factor, rescale_load, without_events
from models.cnn_train import to_arrays
from models.registry import create_model
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


def test_without_events_is_the_bundle_with_no_logs_collected(lab: LabData) -> None:
    """Blanking the arrays gives what the pipeline and the feature code give for a bundle whose logs
    are missing: series and engineered features alike (the features are not recomputed per epoch)."""
    disk_events = [i for i, c in enumerate(KIND_CHANNEL_DEFS["disk"]) if c.source == "event"]
    bt = next(b for b in lab.X if b.kinds["disk"].values[:, disk_events].any())  # a bundle whose logs tell
    got = without_events(to_arrays(bt, features=True))
    want = to_arrays(bt.without({"event"}), features=True)
    for k in got:
        assert torch.equal(got[k]["mask"], want[k]["mask"])
        assert torch.equal(got[k]["values"], want[k]["values"])
        np.testing.assert_allclose(got[k]["feat"].numpy(), want[k]["feat"].numpy(), rtol=1e-5, atol=1e-5)
    assert not torch.equal(got["disk"]["feat"], to_arrays(bt, features=True)["disk"]["feat"])


def test_event_dropout_trains(lab: LabData) -> None:
    """With every training bundle shown without logs, the weights that read log-event channels never get
    a gradient: they stay at their initial values, while training on the logs moves them."""
    X, y = lab.train
    disk_events = [i for i, c in enumerate(KIND_CHANNEL_DEFS["disk"]) if c.source == "event"]
    with_logs = [i for i, bt in enumerate(X) if bt.kinds["disk"].values[:, disk_events].any()][:4]
    Xs, ys = [X[i] for i in with_logs], [y[i] for i in with_logs]
    kw = {"width": 8, "depth": 1, "features": False, "coarsen_p": 0.0, "weight_decay": 0.0, "seed": 4}

    def event_weights(**more: object) -> torch.Tensor:
        m = create_model("cnn_small", **kw, **more).fit(Xs, ys)
        return m.network_.encoders["disk"].stem.weight[:, disk_events].detach().clone()

    m = create_model("cnn_small", width=8, depth=1, epochs=1, event_dropout=1.0).fit(X[:4], y[:4])
    assert m.get_params()["event_dropout"] == 1.0 and len(m.history_) == 1
    start = event_weights(epochs=0)
    assert torch.equal(event_weights(epochs=2, event_dropout=1.0), start)
    assert not torch.equal(event_weights(epochs=2, event_dropout=0.0), start)


# What a closed loop with s times the threads shows s times over: rates, throughputs, outstanding I/Os.
_LOAD_CHANNELS = {
    "cluster": {"domclient.iopsRead", "domclient.iopsWrite", "domclient.throughputRead"}
    | {"domclient.throughputWrite", "domclient.oio", "vm.iops", "vm.throughput"},
    "host": {"domclient.iopsRead", "domclient.iopsWrite", "domclient.throughputRead", "domclient.throughputWrite"}
    | {"domclient.oio", "domcompmgr.iopsRead", "domcompmgr.iopsWrite", "domcompmgr.oio"}
    | {"net.rxThroughput", "net.txThroughput", "net.rxPackets", "net.txPackets"},
    "nic": {"pnic.rxThroughput", "pnic.txThroughput", "pnic.rxPackets", "pnic.txPackets", "esxtop.rx_mbits"},
    "diskgroup": {"dg.iopsSched", "dg.oioWrite"},
    "disk": {"disk.iopsDevRead", "disk.iopsDevWrite", "disk.throughputDevRead", "disk.throughputDevWrite"}
    | {"disk.iopsRead", "disk.iopsWrite", "esxtop.cmds"},
}


def test_rescale_load_is_the_same_cluster_at_another_load(lab: LabData) -> None:
    """s times the load at the same latency: rates, throughputs and outstanding I/Os x s in linear units,
    latencies, congestion, loss rates, resync traffic and statics as they were; features computed anew."""
    bt = lab.X[0]
    s = 0.5
    got = rescale_load(bt, s)
    assert got is not bt
    for kind, kt in bt.kinds.items():
        g = got.kinds[kind]
        assert np.array_equal(g.mask, kt.mask) and np.array_equal(g.static, kt.static)
        assert not g.values[~g.mask].any()  # "no data" stays 0 (pipeline.tensors' contract)
        for ci, ch in enumerate(KIND_CHANNEL_DEFS[kind]):
            m = kt.mask[:, ci]
            want = np.expm1(kt.values[:, ci][m].astype(np.float64)) * (s if ch.name in _LOAD_CHANNELS[kind] else 1.0)
            np.testing.assert_allclose(np.expm1(g.values[:, ci][m].astype(np.float64)), want, rtol=1e-4, atol=1e-4)
    oio = [c.name for c in KIND_CHANNEL_DEFS["cluster"]].index("domclient.oio")
    assert bt.kinds["cluster"].mask[:, oio].any()  # the check above saw an oio series scaled
    lat = [c.name for c in KIND_CHANNEL_DEFS["disk"]].index("disk.latencyDevRead")
    assert np.array_equal(got.kinds["disk"].values[:, lat], bt.kinds["disk"].values[:, lat])
    a, b = to_arrays(bt, features=True), to_arrays(got, features=True)
    assert not torch.equal(a["cluster"]["feat"], b["cluster"]["feat"])  # the features read the new load


def test_load_factor_spans_halved_to_doubled() -> None:
    rng = np.random.default_rng(0)
    s = np.array([load_factor(rng) for _ in range(2000)])
    assert LOAD_SCALE_RANGE == (0.5, 2.0)
    assert s.min() >= 0.5 and s.max() <= 2.0 and abs(np.median(np.log2(s))) < 0.1
    assert (s < 0.6).mean() > 0.05 and (s > 1.7).mean() > 0.05


def test_load_scaling_trains_on_under_driven_clusters_only(lab: LabData) -> None:
    """Only bundles of an under-driven cluster are shown at another load: with one among the training
    bundles the network ends elsewhere than shown them as collected; without one, where it would anyway."""
    X, y = lab.train
    low = [i for i, lab_ in enumerate(y) if "cluster.low_oio" in lab_.values()]
    other = [i for i, lab_ in enumerate(y) if not LOAD_INVARIANT.intersection(lab_.values())][:3]
    assert low and len(other) == 3
    kw = {"width": 8, "depth": 1, "epochs": 2, "coarsen_p": 0.0, "event_dropout": 0.0, "seed": 3}  # no other draws

    def stem(rows: list[int], p: float) -> torch.Tensor:
        m = create_model("cnn_small", **kw, load_scale_p=p).fit([X[i] for i in rows], [y[i] for i in rows])
        assert m.get_params()["load_scale_p"] == p
        return m.network_.encoders["cluster"].stem.weight.detach().clone()

    assert not torch.equal(stem([low[0], *other], 0.0), stem([low[0], *other], 1.0))
    assert torch.equal(stem(other, 0.0), stem(other, 1.0))
