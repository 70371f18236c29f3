"""The rules' margins (models/rules_margins.py): each fault's rule fires through every cause the
simulator renders it with, and the under-driven cluster's rule reads the benchmark's plateau."""

from __future__ import annotations

import numpy as np
import pytest

from data.simulate.archive import tar_bytes
from data.simulate.generate import simulate_bundle
from models.rules_evidence import bundle_evidence
from models.rules_margins import CAP, THRESHOLDS, no_thread_count, rule_margins
from models.rules_read import mtu_below_peers
from pipeline import load_bundle
from pipeline.channels import KIND_STATIC
from pipeline.tensors import BundleTensors


def _bundle(fault: str, cause: str, index: int) -> tuple[BundleTensors, dict[str, str]]:
    b = simulate_bundle("field", 41, index, faults=[fault], causes=[f"{fault}:{cause}"])
    comps = b.labels["components"]
    assert isinstance(comps, dict)
    return load_bundle(tar_bytes(b.files)), comps


@pytest.mark.parametrize("cause", ["one_thread", "two_threads"])
def test_low_oio_fires_at_one_and_at_two_threads_per_disk(cause: str) -> None:
    """faults.md: cluster oio ≈ VM disks x 1 (or 2), latency low. A rule that learnt one thread count
    would miss the other: the plateau measure holds for both (most bundles; a co-occurring fault
    elsewhere can raise the cluster's latency past 'low'). Measured: 8 of 8 and 6 of 8."""
    fired, spread = [], []
    for i in range(8):
        bt, y = _bundle("cluster.low_oio", cause, i)
        assert y[bt.kinds["cluster"].ids[0]] == "cluster.low_oio"
        spread.append(bundle_evidence(bt)["cluster"]["oio_plateau_spread"][0])
        fired.append(rule_margins(bt, THRESHOLDS)["cluster.low_oio"][0] > 0)
    assert np.median(spread) < 1.05  # a closed loop's oio is flat on its plateau
    assert sum(fired) >= 6, fired


def _nics_found(fault: str, cause: str, n: int = 8) -> int:
    """Of n bundles with `fault` through `cause`, those where the rule fires on every NIC labelled with it."""
    hits = 0
    for i in range(n):
        bt, y = _bundle(fault, cause, i)
        m = rule_margins(bt, THRESHOLDS)[fault]
        bad = [j for j, cid in enumerate(bt.kinds["nic"].ids) if y.get(cid) == fault]
        hits += bool(bad) and bool((m[bad] > 0).all())
    return hits


@pytest.mark.parametrize("cause", ["speed_1g", "speed_100m", "half_duplex", "mtu_mismatch"])
def test_link_rule_fires_through_every_cause(cause: str) -> None:
    """Measured 6, 6, 7 and 8 of 8 (5, 6 and 7 before the rated speed and the logged link-up speed): every
    miss is on a host whose support bundle is not in the upload (no nicinfo, no logs: no speed to read)
    and whose uplink carries too little load to flat-top. A cluster whose every known vSAN uplink runs
    at 1 Gb/s is caught by the port's own rating (tests/pipeline/test_static.py)."""
    hits = _nics_found("net.link_degraded", cause)
    assert hits >= 6, (cause, hits)


@pytest.mark.parametrize("cause", ["cable_crc", "switch_overrun", "firmware_drop", "intermittent_optic", "stack_drop"])
def test_loss_rule_fires_through_every_cause(cause: str) -> None:
    """A stack that drops every N-th packet shows on the host's vSAN vmknic and its TCP retransmits, not
    on the uplink's own counters: the vmknic's loss lent to the uplink finds it (0 of 20 before, seed
    51); mild firmware drops of 0.7-0.9 per-mille sat under the old 1 per-mille bar. Misses left: a
    host whose vSAN traffic the data puts on another port than the labelled one."""
    hits = _nics_found("net.packet_loss", cause)
    assert hits >= 6, (cause, hits)


@pytest.mark.parametrize("cause", ["host_failure", "disk_failure", "policy_change", "rebalance"])
def test_resync_rule_fires_through_every_cause(cause: str) -> None:
    found = 0
    for i in range(6):
        bt, y = _bundle("cluster.resync", cause, i)
        m = rule_margins(bt, THRESHOLDS)["cluster.resync"]
        found += all(m[j] > 0 for j, cid in enumerate(bt.kinds["cluster"].ids) if y.get(cid) == "cluster.resync")
    assert found == 6, (cause, found)


def test_a_mild_rebalance_on_a_second_host_is_a_resync_and_the_benign_trickle_is_not() -> None:
    """The mildest rebalance (~40 MB/s from a few groups) reads 10-20 MB/s on the second-busiest host,
    where a bar of 20 missed 14 of 137 simulated resyncs; a healthy cluster's second host reads <= 3.7."""
    bt, _ = _bundle("cluster.resync", "rebalance", 0)
    ev = bundle_evidence(bt)

    def margin(mbs: float) -> float:
        ev["cluster"]["resync_mbs_2nd_host"] = np.full(len(bt.kinds["cluster"].ids), mbs)
        return float(rule_margins(bt, THRESHOLDS, ev)["cluster.resync"][0])

    assert margin(14.0) > 0.4
    assert margin(3.7) < -1.0


def test_margins_are_finite_and_capped() -> None:
    bt, _ = _bundle("net.packet_loss", "switch_overrun", 0)
    for fault, m in rule_margins(bt, THRESHOLDS).items():
        assert np.isfinite(m).all() and (np.abs(m) <= 4.0).all(), fault


def test_named_margins_are_computed_once_per_bundle_object() -> None:
    """The served ensemble's `rules` member and its learnt members' rule columns read one computation."""
    from models.features import bundle_features
    from models.rules import RulesDiagnoser
    from models.rules_margins import named_margins

    bt, _ = _bundle("net.packet_loss", "firmware_drop", 1)
    first = named_margins(bt)
    bundle_features(bt)
    assert RulesDiagnoser().margins([bt])[0] is first
    custom = RulesDiagnoser(thresholds={"loss_pct": 0.2}).margins([bt])[0]
    assert custom is not first  # other thresholds are computed afresh


def _link_margin(bt: BundleTensors, uplink: bool, nic: dict[str, float]) -> float:
    """The link rule's margin for the first NIC that is (or is not) its host's vSAN uplink, with its
    evidence set to `nic`, the rest of the bundle as read."""
    ev = bundle_evidence(bt)
    n = ev["nic"]
    j = int(np.flatnonzero((n["uplink"] > 0.5) == uplink)[0])
    for k, v in nic.items():
        n[k] = n[k].copy()
        n[k][j] = v
    return float(rule_margins(bt, THRESHOLDS, ev)["net.link_degraded"][j])


def _flat_top(bt: BundleTensors, top: float, peers: float) -> float:
    """The link rule's margin for the first vSAN uplink, its speed unknown, flat at `top` MB/s for the
    whole window while the busiest other uplink carries `peers` MB/s."""
    return _link_margin(bt, True, {"speed_gbps": np.nan, "half_duplex": np.nan, "tput_top_mbs": top,
                                   "tput_at_top": 1.0, "peer_top_mbs": peers, "vsan_share": 1.0, "cap_mbs": top,
                                   "cap_share": 1.0, "cap_held": 1.0, "cap_before": 0.0})  # fmt: skip


def test_a_management_port_at_its_own_rated_speed_is_no_slow_link() -> None:
    """A 1 GbE port (rated 1 GbE, at 1 Gb/s) carrying a fifth of an idle host's vSAN trickle is the host's
    management port, not a degraded vSAN uplink: 5 of the lab set's 5 false link findings and a healthy
    quick-preset test bundle called faulty once the rules weighed as the CNNs on NICs. Below its own
    rating, or as the host's vSAN uplink, the same speed still fires."""
    bt, _ = _bundle("net.packet_loss", "switch_overrun", 0)

    def margin(**v: float) -> float:  # a port that is not its host's vSAN uplink, at 1 Gb/s
        return _link_margin(bt, False, {"speed_gbps": 1.0, "design_gbps": 25.0, "vsan_share": 0.27,
                                        "half_duplex": 0.0, **v})  # fmt: skip

    assert margin(rated_gbps=1.0) < 0
    assert margin(rated_gbps=25.0) > 3.0  # a 25 GbE port at 1 Gb/s
    assert margin(rated_gbps=np.nan) > 3.0  # its rating unknown: the design decides, as before
    assert margin(rated_gbps=1.0, uplink=1.0, vsan_share=0.9) > 3.0  # the vSAN uplink itself is a 1 GbE port


def test_a_vsan_uplink_at_its_own_rated_10_gbe_in_a_25_gbe_cluster_is_no_slow_link() -> None:
    """A cluster grown with 25 GbE hosts keeps its 10 GbE ones: their uplinks run at their own rating, which
    is another generation of NIC, not a link that negotiated down (faults.md: 1 Gb/s or half duplex on a
    10/25 GbE design). The same port below its own rating still fires, and so does a 1 GbE vSAN uplink."""
    bt, _ = _bundle("net.packet_loss", "switch_overrun", 0)

    def margin(**v: float) -> float:  # its host's vSAN uplink in a cluster whose fastest uplinks run 25 GbE
        return _link_margin(bt, True, {"uplink": 1.0, "vsan_share": 1.0, "design_gbps": 25.0,
                                       "half_duplex": 0.0, **v})  # fmt: skip

    assert margin(speed_gbps=10.0, rated_gbps=10.0) < 0
    assert margin(speed_gbps=10.0, rated_gbps=25.0) > 0  # a 25 GbE port at 10 Gb/s negotiated down
    assert margin(speed_gbps=10.0, rated_gbps=np.nan) > 0  # its rating unknown: the design decides
    assert margin(speed_gbps=1.0, rated_gbps=1.0) > 3.0  # a 1 GbE port as the vSAN uplink


def test_flat_top_at_a_link_rate_fires_clearly_and_only_there() -> None:
    """1 GbE's payload ceiling (~117 MB/s) and 100 Mb/s' (~12 MB/s) are bands, not distances: at the
    canonical 117.5 MB/s the rule used to fire by 0.09 (log2 125/117.5) and its calibration dropped it.
    Between the two rates, or with peers carrying as little, it does not fire."""
    bt, _ = _bundle("net.packet_loss", "switch_overrun", 0)
    assert _flat_top(bt, 117.5, 354.0) > 0.25  # graded by the peers' 3x, not by the 125 MB/s edge
    assert _flat_top(bt, 117.5, 1000.0) > 1.5  # then its time at the top (100 % against 30 %) grades it
    assert _flat_top(bt, 11.8, 60.0) > 1.0
    assert _flat_top(bt, 50.0, 500.0) < 0  # no link rate flat-tops at 50 MB/s
    assert _flat_top(bt, 117.5, 130.0) < 0  # the peers carry as little: the load, not the link


def _other_findings(margins: dict[str, np.ndarray]) -> float:
    """The strongest margin of any rule but the under-driven one, over every component."""
    return max(float(m.max()) for f, m in margins.items() if f != "cluster.low_oio" and m.size)


def test_one_thread_on_one_disk_is_not_on_the_rules_edge() -> None:
    """A one-thread benchmark's oio per VM sits near its VM disk count; with the lower bound at 1 its margin
    was 0.4-0.6 and the held-out one-thread cause went unreported (recall 0.64, bench_generalise fold 0).
    Counted as VMs (a VM that reads and writes once, schema 8), these read 2.6-6.5 a VM."""
    seen, vetoed = [], 0
    for i in range(8):
        bt, _ = _bundle("cluster.low_oio", "one_thread", i)
        opv = bundle_evidence(bt)["cluster"]["oio_per_vm"][0]
        margins = rule_margins(bt, THRESHOLDS)
        other = _other_findings(margins)
        if other > 0:  # another rule's finding vetoes it (bundle 3: a spindle at 54 ms, 10x its peers)
            assert margins["cluster.low_oio"][0] <= -other
            vetoed += 1
        seen.append((opv, margins["cluster.low_oio"][0] if other <= 0 else np.inf))
    assert min(opv for opv, _ in seen) < 3.0, seen  # the low end is covered
    assert min(m for _, m in seen) > 0.9 and vetoed <= 1, seen


def _disk_margin(bt: BundleTensors, fault: str, pick: str | None, disk: dict[str, float]) -> float:
    """`fault`'s rule margin for one disk (the first with evidence `pick` == 1, else the first) with its
    evidence set to `disk`."""
    ev = bundle_evidence(bt)
    d = ev["disk"]
    j = int(np.flatnonzero(d[pick] == 1)[0]) if pick else 0
    for k, v in disk.items():
        d[k] = d[k].copy()
        d[k][j] = v
    return float(rule_margins(bt, THRESHOLDS, ev)[fault][j])


def _hot(bt: BundleTensors, **disk: float) -> float:
    """The hot-spot rule's margin for the first capacity SSD with its evidence set to `disk` (an I/O rate
    over its siblings' given for the whole window holds while it is slow too, unless given apart)."""
    rate = {"iops_vs_peers_slow": disk["iops_vs_peers"]} if "iops_vs_peers" in disk else {}
    return _disk_margin(bt, "disk.hotspot", "capacity_ssd", {"write_vs_peers": 1.0, "scsi_errors": 0.0, **rate, **disk})


def test_a_hot_spot_serves_more_than_its_siblings() -> None:
    """faults.md: at a few outstanding reads a hot device reads only past its siblings' 0.1-0.2 ms, but it
    serves the reads they do not get (two held-out hot spots missed at 0.38 and 0.45 ms with 7x and 17x
    their siblings' I/O rate); a device serving less than its siblings is none, whatever its latency
    (five healthy, near-idle disks at 0.8-0.9 ms and 4x their siblings fired). Leave-one-cause-out:
    rules' hot-spot findings 13 of 18 -> 17 of 18 and false ones 6 -> 0 on 600 test bundles (4 -> 0 on 800
    training bundles)."""
    bt, _ = _bundle("disk.hotspot", "narrow_lba", 0)
    assert _hot(bt, read_ms=0.4, read_vs_peers=4.3, iops_vs_peers=16.7) > 0.5  # few reads, busy: fires
    assert _hot(bt, read_ms=0.4, read_vs_peers=4.3, iops_vs_peers=1.2) < 0  # as slow, not busier: no
    assert _hot(bt, read_ms=0.9, read_vs_peers=4.5, iops_vs_peers=0.02) < 0  # slow and idle: no
    assert _hot(bt, read_ms=2.0, read_vs_peers=10.0, iops_vs_peers=1.2) > 1.0  # the canonical one
    assert _hot(bt, read_ms=2.0, read_vs_peers=10.0, iops_vs_peers=np.nan) > 1.0  # rate not collected
    assert _hot(bt, read_ms=0.15, read_vs_peers=1.5, iops_vs_peers=8.0) < 0  # busy but not slow: no


def test_a_hot_spot_serving_its_siblings_rate_fires_at_three_times_their_latency() -> None:
    """faults.md's siblings stay near 0.1-0.2 ms, so a device past 0.5 ms is already 2.5-5x them. At
    4x alone an idle device's few slow reads fired; serving at least its siblings' rate, 3x suffices:
    the clean-room generator's mild hot spots (seed 2) read 0.63-0.69 ms at 3.7-3.8x, serving 1.2-1.9x.
    An idle device at that latency (0.67x) and a device without read latencies stay unreported."""
    bt, _ = _bundle("disk.hotspot", "narrow_lba", 0)
    assert _hot(bt, read_ms=0.69, read_vs_peers=3.66, iops_vs_peers=1.87) > 0.25
    assert _hot(bt, read_ms=0.63, read_vs_peers=3.83, iops_vs_peers=1.18) > 0.2
    assert _hot(bt, read_ms=0.68, read_vs_peers=3.96, iops_vs_peers=0.67) < 0  # slower to serve: no
    assert _hot(bt, read_ms=0.69, read_vs_peers=2.8, iops_vs_peers=1.18) < 0  # under 3x: no
    assert _hot(bt, read_ms=0.45, read_vs_peers=3.66, iops_vs_peers=1.18) < 0  # under 0.5 ms: no
    # no read latency collected: the rate alone is no finding
    assert _hot(bt, read_ms=np.nan, read_vs_peers=np.nan, iops_vs_peers=1.01) < 0


def test_a_mild_hot_spot_fires_at_twice_its_siblings_latency_serving_half_again_their_rate() -> None:
    """The few-outstanding-reads route at half again the siblings' I/O rate (it was three times): the
    outsider's mild dedup hot spot (seed 2, bundle 67) read 0.51 ms at 2.05x its siblings, serving 1.8x,
    and went unfound. A device at its siblings' rate, or under twice their latency, stays unreported."""
    bt, _ = _bundle("disk.hotspot", "narrow_lba", 0)
    assert _hot(bt, read_ms=0.507, read_vs_peers=2.05, iops_vs_peers=1.81) > 0
    assert _hot(bt, read_ms=0.507, read_vs_peers=2.05, iops_vs_peers=1.2) < 0
    assert _hot(bt, read_ms=0.507, read_vs_peers=1.8, iops_vs_peers=1.81) < 0
    assert _hot(bt, read_ms=0.18, read_vs_peers=2.05, iops_vs_peers=1.81) < 0  # faults.md's siblings' own


def test_a_hot_spot_may_serve_fewer_ios_than_its_siblings() -> None:
    """Reads serialised on one flash channel serve fewer I/Os at the same outstanding count (Little's
    law), and faults.md gives a hot spot no I/O rate: the clean-room generator's hot devices at 3-7 ms,
    18-40x their siblings' latency, served 0.14-0.88 of their I/O. Only an idle device (a tenth of its
    siblings' rate or less) is vetoed."""
    bt, _ = _bundle("disk.hotspot", "narrow_lba", 0)
    assert _hot(bt, read_ms=4.2, read_vs_peers=17.6, iops_vs_peers=0.14) > 1.0
    assert _hot(bt, read_ms=3.0, read_vs_peers=18.2, iops_vs_peers=0.35) > 1.0
    assert _hot(bt, read_ms=4.2, read_vs_peers=17.6, iops_vs_peers=0.05) < 0  # idle: no


def test_no_hot_spot_on_a_disk_group_without_deduplication() -> None:
    """faults.md's signature includes "dedup enabled in storage list": a busy, mildly slow capacity SSD
    where the list says deduplication is off is no hot spot (three in one healthy bundle of the quick
    preset's varied set fired at 0.27-0.29 ms, 2.0-2.4x their siblings, serving far more), and an upload
    without the list leaves the other evidence to decide."""
    bt, _ = _bundle("disk.hotspot", "narrow_lba", 0)
    busy = {"read_ms": 0.4, "read_vs_peers": 4.3, "iops_vs_peers": 16.7}
    assert _hot(bt, **busy, dedup=1.0) > 0.5
    assert _hot(bt, **busy, dedup=np.nan) > 0.5
    assert _hot(bt, **busy, dedup=0.0) < 0
    assert _hot(bt, read_ms=2.0, read_vs_peers=10.0, iops_vs_peers=1.2, dedup=0.0) < 0


def _step_down(bt: BundleTensors, cap: float, share: float, held: float, before: float) -> float:
    """The link rule's margin for the first vSAN uplink, its speed unknown, its peers carrying no more
    than it ever did: `share` of the window at a ceiling of `cap` MB/s, `held` of the samples from the
    step on at it, `before` times the ceiling carried before the step."""
    top = cap * max(before, 1.0)
    return _link_margin(bt, True, {"speed_gbps": np.nan, "half_duplex": np.nan, "tput_top_mbs": top,
                                   "tput_at_top": 0.1, "peer_top_mbs": top, "vsan_share": 1.0, "cap_mbs": cap,
                                   "cap_share": share, "cap_held": held, "cap_before": before})  # fmt: skip


def test_a_step_down_to_a_link_rate_fires_where_the_whole_window_top_did_not() -> None:
    """A vSAN uplink that carried 148-540 MB/s and from the onset on sits at 117.5 MB/s: its whole-window
    top (the busy hours before) and its peers (no busier) hid it from the flat-top check; 4 of fold 0's 8
    missed held-out 1 GbE links were this. It needs the step (more carried before) and the stay (the
    samples after it at the ceiling): a paced flow that levels off, or leaves the ceiling again, is load."""
    bt, _ = _bundle("net.packet_loss", "switch_overrun", 0)
    assert _step_down(bt, 117.5, 0.5, 1.0, 4.6) > 0.5
    assert _step_down(bt, 11.7, 0.4, 0.95, 1.3) > 0
    assert _step_down(bt, 117.5, 0.5, 1.0, 1.1) < 0  # it carried no more before: a level, not a step
    assert _step_down(bt, 117.5, 0.5, 0.7, 4.6) < 0  # it left the ceiling again: the load moved
    assert _step_down(bt, 50.0, 0.5, 1.0, 4.6) < 0  # no link rate sits at 50 MB/s
    assert _step_down(bt, 117.5, 0.1, 1.0, 4.6) < 0  # a few samples at the end are no finding


def test_a_stepped_down_uplink_in_a_bundle_reaches_the_link_rule() -> None:
    """From the tensors to the margin: a vSAN uplink whose host sent no nicinfo, rewritten to carry
    200-540 MB/s and then 117.5 MB/s from step 100 on, reads as capped at 1 GbE and fires."""
    from pipeline.channels import KIND_CHANNELS, KIND_STATIC, LOG_SCALED

    bt, _ = _bundle("net.packet_loss", "switch_overrun", 0)
    nic = bt.kinds["nic"]
    j = int(np.flatnonzero(bundle_evidence(bt)["nic"]["uplink"] > 0.5)[0])
    T = nic.values.shape[-1]
    mbs = np.concatenate([np.random.default_rng(0).uniform(200, 540, 100), np.full(T - 100, 117.5)])
    for ch in ("pnic.rxThroughput", "pnic.txThroughput"):
        c = KIND_CHANNELS["nic"].index(ch)
        nic.values[j, c] = np.log1p(mbs) if LOG_SCALED["nic"][c] else mbs
        nic.mask[j, c] = True
    for name in ("speed_gbps", "rated_gbps", "duplex_full"):
        nic.static_mask[j, KIND_STATIC["nic"].index(name)] = False
    ev = bundle_evidence(bt)["nic"]
    assert abs(ev["cap_mbs"][j] - 117.5) < 0.1 and ev["cap_held"][j] == 1.0 and ev["cap_before"][j] > 4
    assert rule_margins(bt, THRESHOLDS)["net.link_degraded"][j] > 0.5


def _saturated(bt: BundleTensors, mbs: float, **sat: float) -> float:
    """The link rule's margin for the first vSAN uplink, its speed unknown, its top `mbs` MB/s reached
    at a few samples only and no busier than its peers (neither the flat-top nor the step-down check
    fires), no loss, with the saturation evidence `sat` (drops_pct, pause_per_s, loss_pct...)."""
    base = {"speed_gbps": np.nan, "half_duplex": np.nan, "tput_top_mbs": mbs, "tput_at_top": 0.1,
            "peer_top_mbs": mbs, "vsan_share": 1.0, "cap_mbs": np.nan, "cap_share": np.nan,
            "cap_held": np.nan, "cap_before": np.nan, "drops_pct": 0.0, "pause_per_s": 0.0, "loss_pct": 0.0,
            "host_loss_pct": 0.0, "rexmit_pct": 0.0, "err_pct": 0.0}  # fmt: skip
    return _link_margin(bt, True, {**base, **sat})


def test_an_uplink_saturated_at_a_link_rate_is_slow() -> None:
    """faults.md: a slow link's "pauseCount may rise". A vSAN uplink at no more than 1 GbE's payload rate
    whose switch port drops frames for it, or which sends pause frames, is saturated there: 11 of the 20
    slow uplinks the rate checks missed on 800 simulated field bundles (seed 4), none of 536 healthy
    ones. Loss or retransmits on it make it packet loss's finding; a 10 GbE link saturated at ~1 GB/s is
    busy, not slow; without the counters there is no finding."""
    bt, _ = _bundle("net.packet_loss", "switch_overrun", 0)
    assert _saturated(bt, 117.5) < 0  # the rate alone: the flat-top and step-down checks' business
    assert _saturated(bt, 117.5, pause_per_s=16.0) > 1.0
    assert _saturated(bt, 11.8, drops_pct=0.4) > 0.5
    assert _saturated(bt, 117.5, pause_per_s=16.0, loss_pct=1.0, rexmit_pct=0.8) < 0  # lossy: packet loss
    assert _saturated(bt, 117.5, pause_per_s=16.0, host_loss_pct=0.5) < 0  # the host's stack loses them
    assert _saturated(bt, 1100.0, pause_per_s=16.0) < 0  # saturated at 10 GbE's rate
    assert _saturated(bt, 117.5, drops_pct=np.nan, pause_per_s=np.nan) < 0  # not collected
    assert _saturated(bt, np.nan, pause_per_s=16.0) < 0  # no throughput collected: no rate to be at


def test_pause_frames_reach_the_evidence_over_the_clusters_usual_level() -> None:
    """From the tensors: pauseCount, per second, over the median of the bundle's NICs."""
    from pipeline.channels import KIND_CHANNELS, LOG_SCALED

    bt, _ = _bundle("net.packet_loss", "switch_overrun", 0)
    nic = bt.kinds["nic"]
    j = int(np.flatnonzero(bundle_evidence(bt)["nic"]["uplink"] > 0.5)[0])
    c = KIND_CHANNELS["nic"].index("pnic.pauseCount")
    nic.mask[:, c] = False
    assert np.isnan(bundle_evidence(bt)["nic"]["pause_per_s"]).all()  # not collected: not observed
    nic.values[:, c] = np.log1p(0.5) if LOG_SCALED["nic"][c] else 0.5  # the usual trickle of pause frames
    nic.values[j, c] = np.log1p(25.0) if LOG_SCALED["nic"][c] else 25.0
    nic.mask[:, c] = True
    pause = bundle_evidence(bt)["nic"]["pause_per_s"]
    assert abs(pause[j] - 24.5) < 0.01 and np.allclose(np.delete(pause, j), 0.0)


def _slow(bt: BundleTensors, **disk: float) -> float:
    """The disk-latency rule's margin for the first disk with its evidence set to `disk` (no SCSI
    errors, no deterioration lines, writes as its siblings' unless set)."""
    base = {"scsi_errors": 0.0, "deteriorated": 0.0, "write_ms": 1.0, "write_vs_peers": 1.0}
    return _disk_margin(bt, "disk.latency", None, {**base, **disk})


def test_a_spindle_of_a_saturated_group_is_not_a_failing_device() -> None:
    """Destage saturating a group's spindles puts a 10-20 % slower one at 2.5-3.4x its siblings' latency
    (120 ms against 45): on 3,400 simulated bundles the rule's false findings were 144 at a 2.5x bar and
    85 at 4x, with the same 535 of 537 failing devices found either way."""
    bt, _ = _bundle("disk.latency", "firmware_degraded", 0)
    assert _slow(bt, dev_ms=120.0, dev_vs_peers=2.7) < 0  # the saturated group's slower spindle
    assert _slow(bt, dev_ms=120.0, dev_vs_peers=3.4, deteriorated=20.0) < 0  # ESXi's watch logs it too
    assert _slow(bt, dev_ms=120.0, dev_vs_peers=4.5) > 0  # standing out past what saturation does
    assert _slow(bt, dev_ms=60.0, dev_vs_peers=1.2, write_ms=60.0, write_vs_peers=4.5) > 0  # by its writes
    assert _slow(bt, dev_ms=8.0, dev_vs_peers=6.0) > 0  # past the 2 ms floor at 5x: as before


def test_a_slow_device_serving_well_past_its_siblings_rate_is_busy_not_failing() -> None:
    """faults.md: a failing device is slow "while its iops are ordinary". Healthy spindles the workload
    leans on read 20-160 ms at 6-15x their siblings while serving up to 8x their I/O (false findings
    on the simulator's field sets); failing devices without SCSI errors served at most 1.7x. SCSI
    failures still name the device however busy it is."""
    bt, _ = _bundle("disk.latency", "firmware_degraded", 0)
    assert _slow(bt, dev_ms=19.9, dev_vs_peers=5.9, iops_vs_peers=8.0) < 0  # a busy spindle
    assert _slow(bt, dev_ms=158.8, dev_vs_peers=14.7, iops_vs_peers=3.5) < 0
    assert _slow(bt, dev_ms=162.4, dev_vs_peers=838.8, iops_vs_peers=1.7) > 1.0  # failing, a little busier
    assert _slow(bt, dev_ms=19.9, dev_vs_peers=5.9, iops_vs_peers=2.9) > 0  # the bar is 3x, not 2x
    assert _slow(bt, dev_ms=19.9, dev_vs_peers=5.9, iops_vs_peers=np.nan) > 0  # rate not collected
    assert _slow(bt, dev_ms=26.4, dev_vs_peers=11.3, iops_vs_peers=5.6, scsi_errors=73.0) > 1.0


def _low_oio_margin(bt: BundleTensors, **cluster: float) -> float:
    """The under-driven rule's margin with the cluster's evidence set to `cluster`."""
    ev = bundle_evidence(bt)
    for k, v in cluster.items():
        ev["cluster"][k] = np.full_like(ev["cluster"][k], v)
    return float(rule_margins(bt, THRESHOLDS, ev)["cluster.low_oio"][0])


def test_another_finding_anywhere_vetoes_an_under_driven_cluster() -> None:
    """faults.md: under-driven is "the system is healthy but under-driven" (and the simulator never
    draws it beside another fault). A device failing its commands says the cluster is not healthy, and a
    hot-spot benchmark's VMs hold a few I/Os a disk in flight as threads do: the veto is the other
    finding's margin."""
    bt, _ = _bundle("cluster.low_oio", "one_thread", 0)
    ev = bundle_evidence(bt)
    alone = rule_margins(bt, THRESHOLDS, ev)
    assert alone["cluster.low_oio"][0] > 0.5 and _other_findings(alone) < 0
    ev["disk"]["scsi_errors"] = ev["disk"]["scsi_errors"].copy()
    ev["disk"]["scsi_errors"][0] = 8.0  # 8 failed commands: three doublings past the bar
    both = rule_margins(bt, THRESHOLDS, ev)
    assert float(both["disk.latency"][0]) == pytest.approx(3.0)
    assert float(both["cluster.low_oio"][0]) == pytest.approx(-3.0)


def test_the_vms_little_law_decides_what_the_clusters_oio_cannot() -> None:
    """Threads seen per VM (pipeline.littles) make the finding where light guests on top spread the
    cluster's summed oio past the plateau bar (fold 1's held-out two-thread clusters, 1.07-1.5); a paced
    rate seen per VM vetoes a flat one (a benchmark at its io-rate setting is not under-driven); noise
    that hides both leaves the plateau measure as it was."""
    bt, _ = _bundle("cluster.low_oio", "two_threads", 0)
    base = {"oio_per_vm": 8.0, "latency_ms": 0.4, "hybrid": 0.0}
    assert _low_oio_margin(bt, **base, oio_plateau_spread=1.01, closed_loop=0.0) > 0.5
    assert _low_oio_margin(bt, **base, oio_plateau_spread=1.01, closed_loop=-0.9) < 0
    assert _low_oio_margin(bt, **base, oio_plateau_spread=1.3, closed_loop=0.0) < 0
    assert _low_oio_margin(bt, **base, oio_plateau_spread=1.3, closed_loop=np.nan) < 0
    assert _low_oio_margin(bt, **base, oio_plateau_spread=1.3, closed_loop=0.9) > 0.5
    # threads, but not under-driven: 24 I/Os in flight per VM, or a slow cluster
    assert _low_oio_margin(bt, **(base | {"oio_per_vm": 24.0}), oio_plateau_spread=1.3, closed_loop=0.9) < 0
    assert _low_oio_margin(bt, **(base | {"latency_ms": 9.0}), oio_plateau_spread=1.3, closed_loop=0.9) < 0


def test_vms_whose_in_flight_level_wanders_are_not_an_under_driven_benchmark() -> None:
    """A flat summed oio of light guests at a steady latency: the score reads noise and the plateau alone
    would fire (healthy clusters the rule fired on read a spread of 0.21 per VM); threads hold their
    in-flight level within the counters' noise (0.05), so past 0.25 the VMs veto either way of firing,
    and at or under it (or unobserved) they leave the margin as it was."""
    bt, _ = _bundle("cluster.low_oio", "two_threads", 0)
    base = {"oio_per_vm": 8.0, "latency_ms": 0.4, "hybrid": 0.0, "oio_plateau_spread": 1.01}
    flat = _low_oio_margin(bt, **base, closed_loop=0.0, inflight_spread=np.nan)
    assert flat > 0.5
    assert _low_oio_margin(bt, **base, closed_loop=0.0, inflight_spread=0.05) == pytest.approx(flat)
    assert _low_oio_margin(bt, **base, closed_loop=0.0, inflight_spread=0.25) == pytest.approx(flat)
    assert _low_oio_margin(bt, **base, closed_loop=0.0, inflight_spread=0.4) < 0
    assert _low_oio_margin(bt, **(base | {"oio_plateau_spread": 1.3}), closed_loop=0.9, inflight_spread=0.4) < 0


def test_a_flat_sum_must_be_held_by_threads_not_by_a_steady_rate() -> None:
    """On the plateau route, with the VMs' Little's-law score reading noise, a summed oio within the 10 %
    plateau bar is not enough: threads hold the sum within 4 %, or (light guests moving the sum) each VM's
    in-flight level within 0.1. A rate's in-flight level follows the latency, and moves."""
    bt, _ = _bundle("cluster.low_oio", "two_threads", 0)
    base = {"oio_per_vm": 8.0, "latency_ms": 0.4, "hybrid": 0.0, "closed_loop": 0.0}
    assert _low_oio_margin(bt, **base, oio_plateau_spread=1.02, inflight_spread=0.2) > 0.5  # the sum holds
    assert _low_oio_margin(bt, **base, oio_plateau_spread=1.06, inflight_spread=0.05) > 0.5  # each VM holds
    assert _low_oio_margin(bt, **base, oio_plateau_spread=1.06, inflight_spread=0.2) < 0  # neither does
    assert _low_oio_margin(bt, **base, oio_plateau_spread=1.06, inflight_spread=np.nan) < 0
    # the closed-loop route needs no flat sum: the VMs' score already shows threads
    assert _low_oio_margin(bt, **base | {"closed_loop": 0.9}, oio_plateau_spread=1.06, inflight_spread=0.2) > 0.5


@pytest.mark.parametrize(("index", "mix"), [(711, "hcibench,seqwrite,vdi"), (1157, "fileserver")])
def test_a_paced_benchmark_or_a_guest_mix_on_a_flat_sum_is_not_under_driven(index: int, mix: str) -> None:
    """Two healthy field bundles (seed 103) the rule called under-driven before the flat sum had to be
    threads': an HCIBench paced at its io-rate (2 threads a disk, 1.1 I/Os a VM in flight) beside guests,
    and a file server alone. Their sums read within the 10 % plateau bar, neither within 4 %."""
    b = simulate_bundle("field", 103, index)
    bt = load_bundle(tar_bytes(b.files))
    comps = b.labels["components"]
    assert isinstance(comps, dict) and set(comps.values()) == {"none"} and b.mix.startswith(mix)
    loose = {**THRESHOLDS, "held_oio_spread": 100.0, "held_inflight_spread": 100.0}
    assert rule_margins(bt, loose)["cluster.low_oio"][0] > 0.5
    assert rule_margins(bt, THRESHOLDS)["cluster.low_oio"][0] < -0.3


def test_cpu_contention_is_as_sure_as_the_ready_time_on_a_busy_host() -> None:
    """The margin is the ready time's (log2 of ready over 5 %) on a host past 85 % busy, not capped by how
    far past 85 % a CPU can be (0.23 at 100 %): a fit that moves the threshold by MAX_SHIFT must leave a
    host at 20 % ready found. A host under 85 % busy is vetoed; one whose utilisation is not collected
    keeps the ready time's margin."""
    from models.rules import MAX_SHIFT

    bt, y = _bundle("host.cpu_contention", "runaway_world", 0)
    ev = bundle_evidence(bt)
    j = next(i for i, c in enumerate(bt.kinds["host"].ids) if y.get(c) == "host.cpu_contention")

    def margin(ready: float, util: float) -> float:
        ev["host"]["ready_pct"][j], ev["host"]["esxtop_ready_pct"][j], ev["host"]["cpu_util_pct"][j] = (
            ready,
            ready,
            util,
        )
        return float(rule_margins(bt, THRESHOLDS, ev)["host.cpu_contention"][j])

    assert margin(20.0, 100.0) == pytest.approx(2.0) and margin(20.0, 100.0) > MAX_SHIFT
    assert margin(20.0, 90.0) == pytest.approx(2.0)
    assert margin(20.0, np.nan) == pytest.approx(2.0)
    assert margin(20.0, 60.0) == pytest.approx(np.log2(60 / 85))
    assert margin(2.5, 100.0) == pytest.approx(-1.0)


def test_busy_devices_veto_an_under_driven_finding() -> None:
    """faults.md's "devices are idle": the cluster's I/Os in flight per capacity device past 4 veto the
    finding however the VMs hold their threads (the other authors' healthy benchmarks drive 3+ I/Os on
    each of 1-8 disks a VM, so per VM they read as one or two threads on eight); at or under 4, or
    unknown (no disk group reported), the margin stands as it was."""
    bt, _ = _bundle("cluster.low_oio", "two_threads", 0)
    base = {"oio_per_vm": 8.0, "latency_ms": 0.4, "hybrid": 0.0, "oio_plateau_spread": 1.01, "closed_loop": 0.9}
    idle = _low_oio_margin(bt, **base, oio_per_disk=np.nan)
    assert idle > 0.5
    assert _low_oio_margin(bt, **base, oio_per_disk=1.0) == pytest.approx(idle)
    assert _low_oio_margin(bt, **base, oio_per_disk=4.0) == pytest.approx(idle)
    assert _low_oio_margin(bt, **base, oio_per_disk=6.0) < 0
    assert _low_oio_margin(bt, **base, oio_per_disk=16.0) == pytest.approx(-2.0)
    # a vscsiStats capture of one thread a disk keeps the finding; busy devices still veto it
    assert _low_oio_margin(bt, **base, disk_oio=1.0, oio_per_disk=2.0) > 0.5
    assert _low_oio_margin(bt, **base, disk_oio=1.0, oio_per_disk=8.0) < 0


def test_a_hot_spot_that_began_late_serves_more_while_it_is_slow() -> None:
    """A hot spot from past the window's middle on: over the whole window its median I/O rate reads as
    its siblings' (the gate `hot_iops_vs_peers` vetoed it at 0.97), while at the steps of its own
    highest read latency it serves several times theirs. Those steps decide; a disk's own slow
    commands at an idle device's rate (a twentieth of its siblings') still do not."""
    b = simulate_bundle("field", 9, 24, faults=["disk.hotspot"])  # onset at sample 316 of 543
    bt = load_bundle(tar_bytes(b.files))
    comps = b.labels["components"]
    assert isinstance(comps, dict)
    (j,) = [j for j, cid in enumerate(bt.kinds["disk"].ids) if comps.get(cid) == "disk.hotspot"]
    ev = bundle_evidence(bt)
    d = ev["disk"]
    assert d["iops_vs_peers"][j] < 1.0 and d["iops_vs_peers_slow"][j] > 3.0
    assert rule_margins(bt, THRESHOLDS, ev)["disk.hotspot"][j] > 0.5
    for k in ("iops_vs_peers", "iops_vs_peers_slow"):
        d[k] = d[k].copy()
        d[k][j] = 0.05
    assert rule_margins(bt, THRESHOLDS, ev)["disk.hotspot"][j] < 0


def _wb_margin(bt: BundleTensors, share: float, resync_mbs: float, quiet: float = 70.0) -> float:
    """The write-buffer rule's margin for the first disk group, congested (congestion 200, 5 % of its
    buffer free), with the resync's share of its host's traffic, its free buffer while the resync is
    quiet and the cluster's resync set."""
    ev = bundle_evidence(bt)
    g = ev["diskgroup"]
    for k, v in {"congestion": 200.0, "wb_free_pct": 5.0, "resync_share": share, "wb_free_quiet_pct": quiet}.items():
        g[k] = g[k].copy()
        g[k][0] = v
    ev["cluster"]["resync_mbs_2nd_host"] = np.full(len(bt.kinds["cluster"].ids), resync_mbs)
    return float(rule_margins(bt, THRESHOLDS, ev)["dg.write_buffer"][0])


def test_a_buffer_a_resync_fills_is_the_resyncs() -> None:
    """faults.md labels a rebuild filling write buffers on the resync: where the resync rule fires, the
    resync is a large share of the group's host's traffic while the buffer is full and the buffer is not
    full while the resync is quiet, the group is no finding. Leave-one-cause-out's 2,860 bundles: false
    findings 23 -> 3, congested groups found 450 -> 446 of 471."""
    bt, _ = _bundle("cluster.resync", "host_failure", 0)
    assert _wb_margin(bt, share=0.5, resync_mbs=80.0) < -2  # as surely "no" as the resync is "yes"
    assert _wb_margin(bt, share=0.1, resync_mbs=80.0) > 2  # the group's own writes fill it
    assert _wb_margin(bt, share=0.5, resync_mbs=80.0, quiet=5.0) > 2  # full without the resync too
    assert _wb_margin(bt, share=0.5, resync_mbs=80.0, quiet=np.nan) < -2  # the resync never stops
    assert _wb_margin(bt, share=np.nan, resync_mbs=80.0) > 2  # counters not collected: no say
    assert _wb_margin(bt, share=0.9, resync_mbs=2.0) > 2  # no resync the rules find: congested


def _with_mtus(mtus: dict[int, str]) -> tuple[BundleTensors, list[int]]:
    """A healthy lab bundle of a jumbo-frame cluster, each listed host's vSAN uplink and standby set to
    that MTU in its nicinfo; the rows of those hosts' vSAN uplinks."""
    i = 0
    while (b := simulate_bundle("lab", 43, i, issue_rate=0.0)).cluster.mtu != 9000:
        i += 1
    files, rows = dict(b.files), []
    for h, mtu in mtus.items():
        host = b.cluster.hosts[h]
        path = next(p for p in files if p.startswith(f"esx-{host.name}-") and p.endswith("nicinfo.sh.txt"))
        lines = files[path].decode().splitlines(keepends=True)
        for k in (host.vsan_nic, host.standby_nic):
            j = next((j for j, ln in enumerate(lines) if k is not None and ln.startswith(host.nics[k].name + " ")), -1)
            if j >= 0:
                lines[j] = lines[j].replace(" 9000 ", f" {mtu} ", 1)
        files[path] = "".join(lines).encode()
    bt = load_bundle(tar_bytes(files))
    for h in mtus:
        host = b.cluster.hosts[h]
        rows.append(bt.kinds["nic"].ids.index(f"nic:{host.name}/{host.nics[host.vsan_nic].name}"))
    return bt, rows


def test_a_vsan_uplink_below_the_other_hosts_mtu_is_a_degraded_link() -> None:
    """faults.md's MTU mismatch: one host's vSAN uplink at 1500 where the others run 9000 fires at full
    strength, whatever its speed; nothing else in the cluster does (management and VM ports at 1500 are
    normal). One host moved to jumbo frames ahead of the others at 1500 flags none of theirs."""
    bt, (bad,) = _with_mtus({1: "1500"})
    link = rule_margins(bt, THRESHOLDS)["net.link_degraded"]
    assert link[bad] == 4.0 and (np.delete(link, bad) < 0).all()
    assert bundle_evidence(bt)["nic"]["mtu_below_peers"][bad] == 1.0
    bt, rows = _with_mtus({h: "1500" for h in (0, 1, 2)})  # hosts 0-2 at 1500, host 3 alone at 9000
    assert (rule_margins(bt, THRESHOLDS)["net.link_degraded"] < 0).all()
    assert (bundle_evidence(bt)["nic"]["mtu_below_peers"][rows] == 0).all()


def test_vscsistats_threads_per_disk_decide_where_captured() -> None:
    """Where vscsiStats was captured, its outstanding I/Os per virtual disk stand in for the VMs' I/Os in
    flight (which need a VM's disk count to mean threads per disk): 1 or 2 keeps the finding whatever a VM
    holds (a VM of 40 disks at one thread each), 4 (three threads) and more is a benchmark driven as it
    should be. Uncaptured, the VMs' in-flight band decides as before. A capture's 1 is also what guests
    paced at a low rate read (no I/O finds another in flight): VMs holding under half an I/O each are no
    threads, so they veto the finding (the quick preset's field and lab sets: 6 of 53 false findings,
    none of 61 under-driven clusters found lost)."""
    bt, _ = _bundle("cluster.low_oio", "one_thread", 0)

    def margin(disk_oio: float, oio_per_vm: float | None = None) -> float:
        ev = bundle_evidence(bt)
        c = ev["cluster"]
        c["disk_oio"] = np.full(1, disk_oio)
        if oio_per_vm is not None:
            c["oio_per_vm"] = np.full(1, oio_per_vm)
        return float(rule_margins(bt, THRESHOLDS, ev)["cluster.low_oio"][0])

    base = margin(np.nan)
    assert base > 0
    assert margin(1.0) > 0 and margin(2.0) > 0 and margin(2.5) > 0  # 2.5: a capture spread around two
    assert margin(3.5) < 0 and margin(4.0) < 0 and margin(8.0) < margin(4.0)  # 3.5: three or four threads
    assert margin(np.nan, oio_per_vm=40.0) < 0 and margin(1.0, oio_per_vm=40.0) > 0
    assert margin(1.0, oio_per_vm=0.2) < 0 and margin(2.0, oio_per_vm=0.2) < 0  # paced, whatever the capture
    assert margin(1.0, oio_per_vm=1.0) == margin(1.0, oio_per_vm=4.0) > 0  # past half an I/O: no say


def test_a_count_between_one_thread_and_two_vetoes_the_under_driven_rule() -> None:
    """One thread's I/O never finds another out (its disks read 1.000), two threads' nearly always (1.95):
    a capture's median between, over half the I/Os alone but not all, is an open stream (the paced
    HCIBench of the quick preset's validation set read 1.113 and was called under-driven), so it vetoes
    the finding outright; one thread with a stray guest I/O (1.04) and two threads keep it."""
    bt, _ = _bundle("cluster.low_oio", "one_thread", 0)
    for disk_oio in (1.0, 1.04, 1.5, 1.96, 2.5):
        assert _low_oio_margin(bt, disk_oio=disk_oio) > 0, disk_oio
    for disk_oio in (1.06, 1.113, 1.3, 1.49):
        assert _low_oio_margin(bt, disk_oio=disk_oio) == -CAP, disk_oio
    assert not no_thread_count(np.array([np.nan]), THRESHOLDS)[0]  # no capture: no say


def test_an_mtu_1500_port_is_read_off_its_frames_where_nicinfo_is_missing() -> None:
    """A host whose folder is not in the upload has no nicinfo, but the cluster-wide dump still counts its
    uplink's bytes and packets: at most 1500 bytes a packet among jumbo-frame peers averaging thousands
    is an MTU-1500 link. Peers at 1500 themselves, or unknown, say nothing."""
    bt, (row,) = _with_mtus({0: "9000"})
    ev = bundle_evidence(bt)
    assert ev["nic"]["frame_bytes"][row] > 2500 and ev["nic"]["peer_frame_bytes"][row] > 2500  # a jumbo cluster

    def margin(frame: float, peers: float) -> float:
        return _link_margin(bt, True, {"mtu_below_peers": np.nan, "frame_bytes": frame, "peer_frame_bytes": peers})

    assert margin(900.0, 4500.0) > 0.5
    assert margin(4400.0, 4500.0) < 0 and margin(900.0, 1000.0) < 0 and margin(900.0, np.nan) < 0


def test_a_vm_port_the_traffic_share_misreads_is_not_an_mtu_mismatch() -> None:
    """Where a busy 1500 VM-network port follows the vmknic closer than the host's real 9000 vSAN uplink
    (share 0.6 against 0.4, seen on 4 healthy hosts of 1,000 bundles), the host still has a jumbo port
    carrying its vSAN traffic: no mismatch. Without that port the 1500 one is."""
    bt, (uplink,) = _with_mtus({0: "9000"})
    kt = bt.kinds["nic"]
    j_share, j_mtu = (KIND_STATIC["nic"].index(c) for c in ("traffic_share", "mtu_k"))
    host = kt.host_index[uplink]
    vm = next(i for i in np.flatnonzero(kt.host_index == host) if i != uplink and kt.static[i, j_mtu] == 1.5)
    kt.static[[vm, uplink], j_share] = 0.6, 0.4
    kt.static_mask[[vm, uplink], j_share] = True
    assert mtu_below_peers(kt)[vm] == 0.0
    kt.static[uplink, j_share] = 0.1
    assert mtu_below_peers(kt)[vm] == 1.0
