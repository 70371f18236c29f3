"""Integrated gradients point at the injected fault: on held-out simulated lab bundles, the CNN's
attribution for a component fault it calls right names one of the fault's own channels first, and its
span overlaps the faulty period and starts no earlier before the onset than the network's receptive
field allows."""

from __future__ import annotations

import datetime as dt
import json
import re
import tarfile
from pathlib import Path

import numpy as np
import pytest

from models.attribution import (
    Attribution,
    cnn_members,
    feature_source,
    integrated_gradients,
    receptive_field,
    sources,
    span,
)
from models.base import Diagnoser
from models.calibration import CalibratedDiagnoser
from models.ensemble import EnsembleDiagnoser
from models.features import feature_names
from models.registry import create_model
from pipeline.channels import KIND_CHANNELS

from .conftest import LabData

# What an engineer would accept as "the reason" for each component fault (faults.md, signature column):
# a channel of the component itself, or the expert rule's margin for that fault.
SIGNATURE = {
    "disk.latency": r"^disk\.latency|^esxtop\.(davg|kavg)|^ev\.(scsi_fail|deteriorated)|^rule:disk\.latency$",
    "disk.hotspot": r"^disk\.(latency|iops|oio).*Read|^disk\.oio|^rule:disk\.hotspot$",
    "host.cpu_contention": r"^(cpu|vsancpu)\.|^esxtop\.ready|^rule:host\.cpu_contention$",
    "net.packet_loss": r"^pnic\.(rx|tx).*(Err|Loss|Drop)|^pnic\.portRxDrops|^esxtop\.rx_drop|^rule:net\.packet_loss$",
    "net.link_degraded": r"^pnic\..*(hroughput|pause)|^static:(speed|duplex)|^uplink:|^rule:net\.link_degraded$",
    "dg.write_buffer": r"^dg\.|^ev\.lsom_congestion|^rule:dg\.write_buffer$",
}


def read_truth(path: Path) -> dict[str, object]:
    with tarfile.open(path) as tf:
        member = next(m for m in tf.getmembers() if m.name.endswith("labels.json"))
        fh = tf.extractfile(member)
        assert fh is not None
        return dict(json.load(fh))


@pytest.fixture(scope="module")
def cnn(lab: LabData) -> Diagnoser:
    return create_model("cnn_small", epochs=25).fit(*lab.train)


def test_attribution_points_at_the_fault_channels_and_onset(cnn: Diagnoser, lab: LabData) -> None:
    X_test, y_test = lab.test
    paths = lab.paths[len(lab.train[0]) :]
    predicted = cnn.predict(X_test)
    checked = []
    for bt, y, pred, path in zip(X_test, y_test, predicted, paths, strict=True):
        for fault in read_truth(path)["faults"]:  # type: ignore[attr-defined]
            cid, label = fault["component"], fault["fault"]
            if cid == "cluster" or pred.get(cid) != label or y.get(cid) != label:
                continue  # a cluster has no peers to contrast with; a missed fault has nothing to explain
            attr = integrated_gradients(cnn, bt, cid, label)  # type: ignore[arg-type]
            assert attr.series.shape == (len(KIND_CHANNELS[attr.kind]), bt.T)
            assert attr.features.shape == (len(feature_names(attr.kind)),)
            assert attr.gain > 0, (cid, label, attr.gain)  # believed more than for a peer-like component
            top = next(iter(sources(attr)))
            assert re.search(SIGNATURE[label], top), (cid, label, list(sources(attr).items())[:4])
            onset = (dt.datetime.fromisoformat(fault["onset"]).timestamp() - bt.start) / bt.step_s
            window = span(attr)
            assert window is not None
            assert window[1] > onset, (label, onset, window)  # overlaps the faulty period
            if onset >= 0.1 * bt.T:  # a fault present from the start has no onset to find
                # no sharper than the network sees: half its receptive field (26 steps for this one)
                assert window[0] >= onset - receptive_field(cnn) / 2, (label, onset, window)  # type: ignore[arg-type]
            checked.append(label)
    assert len(checked) >= 5 and len(set(checked)) >= 3, checked  # enough cases to mean something


def test_span_is_the_shortest_window_with_the_share() -> None:
    series = np.zeros((2, 10))
    series[0, 6:9] = 1.0
    series[1, 2] = 0.2  # a small push elsewhere, and pushes against the verdict, count for nothing
    series[1, 0] = -5.0
    a = Attribution("disk:x", "disk", "disk.latency", series, np.zeros(3), 3.2, 0.0)
    assert span(a, share=0.9) == (6, 9)
    assert span(a, share=1.0) == (2, 9)
    assert span(Attribution("disk:x", "disk", "disk.latency", -np.abs(series), np.zeros(3), 0.0, 0.0)) is None


def test_feature_sources_name_what_the_feature_reads() -> None:
    ch = KIND_CHANNELS["disk"][0]
    assert feature_source("disk", f"{ch}:mean") == ch
    assert feature_source("disk", f"vs_kind:{ch}:p90") == ch
    assert feature_source("disk", "static:is_cache") == "static:is_cache"
    assert feature_source("disk", "rule:disk.latency") == "rule:disk.latency"
    assert feature_source("nic", "uplink:slow_for_design") == "uplink:slow_for_design"
    host_ch = KIND_CHANNELS["host"][0]
    assert feature_source("disk", f"host:{host_ch}:max") == f"host:{host_ch}"
    assert feature_source("cluster", f"hosts_median:{host_ch}:max") == f"hosts:{host_ch}"
    # every feature of every kind maps somewhere named
    for kind in KIND_CHANNELS:
        assert all(feature_source(kind, n) != "context" for n in feature_names(kind)), kind


def test_sources_share_the_positive_push() -> None:
    kind = "host"
    series = np.zeros((len(KIND_CHANNELS[kind]), 4))
    series[0] = 1.0  # 4 units on the first channel
    feats = np.zeros(len(feature_names(kind)))
    feats[feature_names(kind).index(f"rule:{'host.cpu_contention'}")] = 4.0
    feats[0] = -10.0  # against the verdict: not a source
    got = sources(Attribution("host:h", kind, "host.cpu_contention", series, feats, 8.0, 0.0))
    assert got == {KIND_CHANNELS[kind][0]: 0.5, "rule:host.cpu_contention": 0.5}


def test_cnn_members_unwraps_calibration_and_ensembles(cnn: Diagnoser, lab: LabData) -> None:
    rules = create_model("rules").fit(*lab.train)
    ens = EnsembleDiagnoser.of([cnn, rules, cnn], weights=[1.0, 0.5, 0.5])
    served = CalibratedDiagnoser.of(ens, method="temperature")
    got = cnn_members(served)
    assert [m for m, _ in got] == [cnn, cnn]
    assert [round(w, 3) for _, w in got] == [0.5, 0.25]
    assert cnn_members(rules) == []


@pytest.mark.parametrize(("seeds", "peer_inputs"), [(1, False), (2, False), (1, True)])
def test_the_row_forward_equals_the_whole_forward(lab: LabData, seeds: int, peer_inputs: bool) -> None:
    """Integrated gradients re-encode only the attributed row: what it computes must be the network's
    own answer for the bundle (one network, a seed stack, and peer inputs, which encode the kind whole)."""
    import torch

    from models.attribution import _row_log_prob
    from models.cnn_net import ClusterCNN
    from models.cnn_train import collate, to_arrays
    from models.seeds import SeedStack

    def one() -> ClusterCNN:
        return ClusterCNN(16, 1, 3, 4, 0.0, peer_inputs=peer_inputs, features=True)

    torch.manual_seed(0)
    net = (one() if seeds == 1 else SeedStack(one, seeds, 0)).eval()
    batch = collate([to_arrays(lab.X[0], features=True)])
    with torch.no_grad():
        whole = net(batch)
        for kind in ("disk", "nic", "cluster"):
            kb = batch.kinds[kind]
            for i in (0, len(kb.values) - 1):
                f = _row_log_prob(net, batch, kind, i, target=1)
                got = f(kb.values[i][None], kb.feat[i][None] if kb.feat is not None else None)
                want = torch.log_softmax(whole[kind][i].double(), -1)[1]
                torch.testing.assert_close(got[0], want, rtol=1e-5, atol=1e-5)
