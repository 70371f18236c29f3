"""What the rules read off a bundle (models/rules_evidence.py): measures in physical units."""

from __future__ import annotations

import numpy as np

from data.simulate.archive import tar_bytes
from data.simulate.generate import simulate_bundle
from models.rules_evidence import _cap, bundle_evidence
from models.rules_read import static
from pipeline import load_bundle
from pipeline.channels import KIND_CHANNELS, LOG_SCALED
from pipeline.tensors import KindTensors


def _ceiling(t: np.ndarray) -> tuple[float, float, float, float]:
    """_cap of one (T,) series: (cap, share, held, before)."""
    got = _cap(t[None])
    cap, share, held, before = (float(got[k][0]) for k in ("cap_mbs", "cap_share", "cap_held", "cap_before"))
    return cap, share, held, before


def test_ceiling_reads_a_step_down_to_a_line_rate() -> None:
    """A vSAN uplink at 200-540 MB/s that renegotiated to 1 GbE at step 100 of 180, its last 20 samples
    not collected: the ceiling is 1 GbE's payload, held from the step on, and it carried 4.6x before."""
    rng = np.random.default_rng(0)
    t = np.concatenate([rng.uniform(200, 540, 100), np.full(60, 117.5), np.full(20, np.nan)])
    t[50] = 540.0
    cap, share, held, before = _ceiling(t)
    assert abs(cap - 117.5) < 0.1
    assert abs(share - 60 / 160) < 1e-9 and held == 1.0
    assert abs(before - 540 / 117.5) < 1e-6


def test_ceiling_of_a_wandering_or_a_level_flow() -> None:
    """A guest mix that rarely repeats its rate spends little of the window at any one rate; a flow level
    for the whole window has a ceiling but carried nothing more before it; one that leaves the ceiling
    again holds it for part of the time."""
    rng = np.random.default_rng(1)
    cap, share, _, _ = _ceiling(rng.uniform(50, 300, 180))
    assert np.isnan(cap) or share < 0.05
    cap, share, held, before = _ceiling(np.full(180, 113.0))
    assert cap == 113.0 and share == 1.0 and held == 1.0 and before == 0.0
    t = np.concatenate([rng.uniform(200, 300, 40), np.full(40, 117.5), rng.uniform(200, 300, 100)])
    _, share, held, before = _ceiling(t)
    assert abs(share - 40 / 180) < 1e-9 and abs(held - 40 / 140) < 1e-9 and before > 1.5


def _set(kt: KindTensors, channel: str, rows: np.ndarray, value: float | np.ndarray) -> None:
    """Set a channel's series (in its converted unit) on `rows` of a kind's tensors, observed."""
    c = KIND_CHANNELS[kt.kind].index(channel)
    v = np.broadcast_to(np.asarray(value, np.float64), kt.values[rows, c].shape)
    kt.values[rows, c] = np.log1p(v) if LOG_SCALED[kt.kind][c] else v
    kt.mask[rows, c] = True


def test_resync_share_is_the_resyncs_mb_over_the_hosts_disk_group_traffic_while_the_buffer_is_full() -> None:
    """(resync reads + recovery writes x the cluster's resync chunk) / (those + the host's cache devices'
    writes), at the fifth of the window where the group's buffer is fullest; the buffer's free share while
    the resync is quiet beside it; NaN where not collected."""
    b = simulate_bundle("field", 41, 0, faults=["cluster.resync"], causes=["cluster.resync:host_failure"])
    bt = load_bundle(tar_bytes(b.files))
    host, dg, disk = bt.kinds["host"], bt.kinds["diskgroup"], bt.kinds["disk"]
    T = host.values.shape[2]
    every = np.arange(len(host.ids))
    full = np.arange(T) >= T - T // 5  # the buffer is full over the last fifth only
    _set(dg, "dg.wbFreePct", np.arange(len(dg.ids)), np.where(full, 0.02, 0.8))
    # 40 MB/s of resync reads in 160 I/Os (a chunk of 0.25 MB) while the buffer is full, none before
    _set(host, "domcompmgr.tputResyncRead", every, np.where(full, 40.0, 0.0))
    _set(host, "domcompmgr.iopsResyncRead", every, np.where(full, 160.0, 0.0))
    _set(host, "domcompmgr.iopsRecWrite", every, np.where(full, 80.0, 0.0))  # 20 MB/s of recovery writes
    cache = np.flatnonzero(np.nan_to_num(static(disk, "is_cache")) > 0.5)
    per_host = np.bincount(disk.host_index[cache], minlength=len(host.ids))[disk.host_index[cache]]
    _set(disk, "disk.throughputDevWrite", cache, 140.0 / per_host[:, None])  # 140 MB/s into each host's cache tier
    g = bundle_evidence(bt)["diskgroup"]
    assert np.allclose(g["resync_share"][dg.host_index >= 0], 60.0 / 200.0, atol=1e-3), g["resync_share"]
    assert np.allclose(g["wb_free_quiet_pct"], 80.0, atol=1e-3)  # drained before the resync began
    _set(dg, "dg.wbFreePct", np.arange(len(dg.ids)), 0.02)  # full whether the resync runs or not
    assert np.allclose(bundle_evidence(bt)["diskgroup"]["wb_free_quiet_pct"], 2.0, atol=1e-3)
    c = KIND_CHANNELS["disk"].index("disk.throughputDevWrite")
    disk.mask[:, c] = False
    assert np.isnan(bundle_evidence(bt)["diskgroup"]["resync_share"]).all()  # cache writes not collected


def test_others_max_is_the_max_of_every_other_row() -> None:
    """One sort, against the max over the other rows' values row by row: ties, NaN rows, one value."""
    from models.rules_evidence import _others_max

    def by_row(x: np.ndarray) -> np.ndarray:
        rest = [np.delete(x, i) for i in range(len(x))]
        return np.array([r[np.isfinite(r)].max() if np.isfinite(r).any() else np.nan for r in rest])

    rng = np.random.default_rng(7)
    for trial in range(400):
        x = rng.choice([1.0, 2.0, 5.0, -1.0, np.nan], int(rng.integers(0, 12))) if trial % 2 else rng.normal(size=5)
        assert np.array_equal(_others_max(x), by_row(x), equal_nan=True), x
    assert _others_max(np.array([3.0, np.nan])).tolist()[1] == 3.0 and np.isnan(_others_max(np.array([3.0, np.nan]))[0])
