from __future__ import annotations

import copy

import numpy as np
import numpy.ma as ma
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models import features as features_module
from models.features import (
    STATS,
    UPLINK_CHECKS,
    _minus_group_median,
    _uplink_checks,
    bundle_features,
    channel_stats,
    feature_names,
)
from pipeline.channels import KIND_STATIC
from pipeline.tensors import KindTensors
from vsandx.faults import COMPONENT_KINDS

from .conftest import LabData


def test_shapes_names_and_finiteness(lab: LabData) -> None:
    bt = lab.X[0]
    feats = bundle_features(bt)
    assert set(feats) == set(COMPONENT_KINDS)
    for kind, f in feats.items():
        assert f.shape == (len(bt.kinds[kind].ids), len(feature_names(kind)))
        assert f.dtype == np.float32
        assert np.isfinite(f).all()


def test_rows_are_computed_once_per_bundle_object(lab: LabData) -> None:
    bt = lab.X[1]
    first = bundle_features(bt)
    assert bundle_features(bt) is first  # an ensemble's second member reads the same rows
    twin = copy.deepcopy(bt)  # equal content, another object: computed afresh, same values
    again = bundle_features(twin)
    assert again is not first
    for kind in COMPONENT_KINDS:
        np.testing.assert_array_equal(again[kind], first[kind])
    other = bundle_features(lab.X[2])
    assert other["disk"].shape[0] == len(lab.X[2].kinds["disk"].ids)
    for bt_other in lab.X[3:30]:  # the memo is bounded: old entries go, and come back equal
        bundle_features(bt_other)
    assert len(features_module._RECENT) <= features_module._RECENT_SIZE
    np.testing.assert_array_equal(bundle_features(bt)["disk"], first["disk"])


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 60), st.floats(0.0, 1.0), st.integers(0, 2**31 - 1))
def test_channel_stats_match_a_masked_reference(t: int, p_missing: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    mask = rng.random((3, 4, t)) >= p_missing
    values = np.where(mask, rng.normal(size=(3, 4, t)), 0.0).astype(np.float32)
    s = channel_stats(values, mask)
    assert s.shape == (3, 4, len(STATS))
    ref = ma.masked_array(values, ~mask)
    has = mask.any(-1)
    np.testing.assert_allclose(s[..., 0], np.where(has, ref.mean(-1).filled(0), 0), atol=1e-5)
    np.testing.assert_allclose(s[..., 1], np.where(has, ref.std(-1).filled(0), 0), atol=1e-4)
    np.testing.assert_allclose(s[..., 2], np.where(has, ref.max(-1).filled(0), 0), atol=1e-6)
    np.testing.assert_allclose(s[..., 6], mask.mean(-1), atol=1e-6)
    for i, c in zip(*np.nonzero(has), strict=True):
        obs = values[i, c][mask[i, c]]
        assert s[i, c, 3] == np.percentile(obs, 90, method="lower")


def test_step_finds_the_onset() -> None:
    x = np.zeros((1, 1, 96), np.float32)
    x[..., 60:] = 5.0
    s = channel_stats(x, np.ones_like(x, bool))[0, 0]
    assert s[STATS.index("step")] == 5.0
    assert s[STATS.index("trend")] == 5.0


def test_peer_relative_features_single_out_the_odd_disk(lab: LabData) -> None:
    bt = lab.X[0]
    kt = bt.kinds["disk"]
    names = feature_names("disk")
    col = names.index("vs_kind:disk.latencyDevDAvg:mean")
    f = bundle_features(bt)["disk"]
    own = names.index("disk.latencyDevDAvg:mean")
    np.testing.assert_allclose(f[:, col], f[:, own] - np.median(f[:, own]), atol=1e-5)
    assert len(kt.ids) == f.shape[0]


def test_uplink_checks_flag_a_slow_or_half_duplex_vsan_uplink() -> None:
    """faults.md: Speed 1000 (or Duplex Half) on the vSAN uplink of a 10/25 GbE network; a 1 GbE
    management port that carries no vSAN traffic is normal, and a NIC without nicinfo reads 0."""
    ids = ("nic:a/vmnic0", "nic:a/vmnic1", "nic:b/vmnic1", "nic:c/vmnic1", "nic:d/vmnic1")
    kt = KindTensors.empty("nic", ids, 4)
    names = KIND_STATIC["nic"]
    rows = [  # speed_gbps, duplex_full, traffic_share; None = no nicinfo
        (1.0, 1.0, 0.0),  # management port
        (10.0, 1.0, 1.0),  # healthy vSAN uplink
        (1.0, 1.0, 0.95),  # renegotiated to 1 Gb/s
        (10.0, 0.0, 1.0),  # half duplex
        (None, None, 1.0),  # nicinfo missing (host bundle not uploaded)
    ]
    for i, (speed, duplex, share) in enumerate(rows):
        for name, v in (("speed_gbps", speed), ("duplex_full", duplex), ("traffic_share", share)):
            if v is not None:
                kt.static[i, names.index(name)], kt.static_mask[i, names.index(name)] = v, True
    got = _uplink_checks(kt)
    assert got.shape == (5, len(UPLINK_CHECKS))
    np.testing.assert_allclose(got[:, 0], [0.0, 0.0, 0.95, 0.0, 0.0], rtol=1e-5)  # saturated at one doubling
    np.testing.assert_allclose(got[:, 1], [0.0, 0.0, 0.0, 1.0, 0.0])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-1, 4), min_size=1, max_size=30), st.integers(0, 2**31 - 1))
def test_group_median_matches_a_loop(groups: list[int], seed: int) -> None:
    g = np.array(groups)
    x = np.random.default_rng(seed).normal(size=(len(g), 3)).astype(np.float32)
    ref = np.zeros_like(x)
    for k in set(groups) - {-1}:
        ref[g == k] = x[g == k] - np.median(x[g == k], axis=0)
    np.testing.assert_allclose(_minus_group_median(x, g), ref, atol=1e-6)


def test_ceiling_tells_a_flat_top_from_a_burst() -> None:
    t = np.arange(120, dtype=np.float32)
    flat = np.minimum(np.log1p(5 * t), np.log1p(117.5))  # a 1 GbE link saturating
    burst = np.log1p(10 + 100 * (t == 60))  # one peak
    x = np.stack([flat, burst])[None]  # (1, 2, T)
    st = channel_stats(x, np.ones_like(x, bool))
    ceiling = st[0, :, STATS.index("ceiling")]
    assert ceiling[0] > 0.7 and ceiling[1] < 0.02


def test_rule_columns_are_the_rules_margins_saturated(lab: LabData) -> None:
    """The last columns of every kind are its faults' rule margins clipped to +-1: a rule firing by one
    doubling or sixteen reads alike, so a learnt model cannot tell the cause it was trained on by them."""
    from models.rules_margins import THRESHOLDS, rule_margins
    from vsandx.faults import faults_for_kind

    for bt in lab.X[:4]:
        feats, margins = bundle_features(bt), rule_margins(bt, THRESHOLDS)
        for kind in COMPONENT_KINDS:
            names = feature_names(kind)
            for fault in faults_for_kind(kind):
                col = feats[kind][:, names.index(f"rule:{fault}")]
                np.testing.assert_allclose(col, np.clip(margins[fault], -1, 1), atol=1e-6)
    assert any((bundle_features(bt)["disk"][:, -2:] > 0.99).any() for bt in lab.X)  # some rule fires


def test_hold_features_holds_the_rows_and_the_rule_margins_they_include() -> None:
    """A training run's one hold covers both memos a model's prediction reads (models.features and the
    rules member's named_margins), and lets them go after."""
    from models.features import bundle_features, hold_features
    from models.rules_margins import named_margins

    with hold_features(900):
        assert bundle_features._limit() == named_margins._limit() == 900
    assert bundle_features._limit() == bundle_features.size and named_margins._limit() == named_margins.size


@pytest.mark.parametrize(
    ("static", "evidence", "values"),
    [("vm_closed_loop", "closed_loop", (-1.0, 1.0)), ("vm_inflight_spread", "inflight_spread", (0.05, 0.5))],
)
def test_learnt_models_do_not_read_the_vm_statics_the_rules_read(
    lab: LabData, static: str, evidence: str, values: tuple[float, float]
) -> None:
    """The VMs' closed-loop score and in-flight spread reach the rules' evidence but neither the
    engineered rows (their rule columns aside) nor the CNN's inputs: two bundles that differ only in
    one look alike to a learnt model."""
    from models.cnn_train import to_arrays
    from models.rules_evidence import bundle_evidence

    j = KIND_STATIC["cluster"].index(static)
    twins = [copy.deepcopy(lab.X[0]) for _ in range(2)]
    for bt, value in zip(twins, values, strict=True):
        bt.kinds["cluster"].static[:, j] = value
        bt.kinds["cluster"].static_mask[:, j] = True
    assert [bundle_evidence(bt)["cluster"][evidence][0] for bt in twins] == pytest.approx(list(values))
    a, b = (bundle_features(bt) for bt in twins)
    for kind in COMPONENT_KINDS:
        learnt = [i for i, name in enumerate(feature_names(kind)) if not name.startswith("rule:")]
        np.testing.assert_array_equal(a[kind][:, learnt], b[kind][:, learnt])
    arrays = [to_arrays(bt)["cluster"] for bt in twins]
    assert not any(bool(x["static_mask"][:, j].any()) for x in arrays)
    assert all(bool(x["static_mask"][:, :j].any()) for x in arrays)  # the other statics still pass
