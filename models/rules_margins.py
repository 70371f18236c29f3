"""faults.md's signatures as rules: each fault's *margin* per component, from named thresholds
(models/rules_thresholds.py, each with where it comes from).

Every rule reads the measures of models/rules_evidence.py (physical units, peer-relative where faults.md
says "one component standing out") and gives a margin: log2 of how far the evidence lies past its
named threshold, clipped to +-CAP. Conditions combine as fuzzy logic: all-of = the smallest margin,
any-of = the largest; a measure the bundle cannot show (NaN: counter not collected, host folder missing,
no esxtop) is left out instead of voting, so a site that collects less loses evidence, not verdicts.
A margin > 0 means the rule fires. A rule whose symptom another component's fault explains (drops on a
link that negotiated 1 Gb/s, a disk group's congestion behind a failing capacity disk) is lowered by
that explanation's margin: the label goes on the cause.

Used by the `rules` diagnoser (models/rules.py) and, saturated, as engineered features of every learnt
model (models/features.py): "this rule fires" reads the same whichever cause made it fire.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import numpy as np

from models.memo import per_bundle
from models.rules_evidence import Evidence, bundle_evidence
from models.rules_thresholds import THRESHOLDS
from pipeline.tensors import BundleTensors

__all__ = ["CAP", "THRESHOLDS", "named_margins", "no_thread_count", "open_stream", "rule_margins"]

CAP: Final = 4.0  # margins are clipped to +-CAP (log2: 16x past or short of a threshold)


def up(x: np.ndarray, t: float | np.ndarray) -> np.ndarray:
    """Margin of `x` above threshold t: log2(x / t) clipped to +-CAP (NaN stays NaN: not observed)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        m = np.log2(np.maximum(x, 0) / t)
    return np.where(np.isnan(x), np.nan, np.clip(m, -CAP, CAP))


def down(x: np.ndarray, t: float | np.ndarray) -> np.ndarray:
    """Margin of `x` below threshold t."""
    return -up(x, t)


def score_up(x: np.ndarray, t: float) -> np.ndarray:
    """Margin of a score in [-1, 1] above t: twice the difference (1.0 at +1 against 0.5), NaN unobserved."""
    return np.where(np.isnan(x), np.nan, np.clip(2.0 * (x - t), -CAP, CAP))


def veto_below(x: np.ndarray, t: float) -> np.ndarray:
    """A score in [-1, 1] as a veto: its margin below t, no say (NaN) at or above t, so that a score near
    its noise level leaves the other conditions' margin as it was."""
    return np.where(x < t, score_up(x, t), np.nan)


def veto_above(x: np.ndarray, t: float) -> np.ndarray:
    """A measure as a veto: its margin below t where it is past t, no say (NaN) at or under t."""
    return np.where(x > t, down(x, t), np.nan)


def veto_under(x: np.ndarray, t: float) -> np.ndarray:
    """A measure as a veto: its margin above t (negative) where it falls short of t, no say (NaN) at or
    over t. For a measure with a ceiling: a CPU at most 100 % busy stood log2(100 / 85) = 0.23 past its
    bar, so as a condition of all_of it held every finding's margin under 0.23, and a calibration that
    moved the threshold a third of a doubling (models.rules.MAX_SHIFT) silenced the rule."""
    return np.where(x < t, up(x, t), np.nan)


def gate(flag: np.ndarray) -> np.ndarray:
    """A yes/no condition as a margin: +CAP, -CAP, NaN when unknown."""
    return np.where(np.isnan(flag), np.nan, np.where(flag > 0.5, CAP, -CAP))


def all_of(*ms: np.ndarray) -> np.ndarray:
    """Smallest margin over the observed conditions (NaN where none is observed)."""
    s = np.stack(ms)
    ok = np.isfinite(s)
    return np.where(ok.any(0), np.where(ok, s, np.inf).min(0), np.nan)


def any_of(*ms: np.ndarray) -> np.ndarray:
    s = np.stack(ms)
    ok = np.isfinite(s)
    return np.where(ok.any(0), np.where(ok, s, -np.inf).max(0), np.nan)


def given(core: np.ndarray, *conditions: np.ndarray) -> np.ndarray:
    """all_of(core, *conditions), but unobserved (NaN) where the core evidence is: side conditions
    (a gate, a load level) may veto a finding, never make one on their own."""
    return np.where(np.isnan(core), np.nan, all_of(core, *conditions))


def _band(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return (x >= lo) & (x <= hi)


def _at_link_rate(mbs: np.ndarray, th: Mapping[str, float]) -> np.ndarray:
    """Whether a throughput is 1 GbE's (or 100 Mb/s') payload rate, as a gate: a band, yes or no (as a
    distance, a canonical 117 MB/s sat a hair under 125 and the rule barely fired)."""
    at = _band(mbs, th["gbe_floor_mbs"], th["gbe_top_mbs"]) | _band(mbs, th["fe_floor_mbs"], th["fe_top_mbs"])
    return gate(np.where(np.isnan(mbs), np.nan, at))


def open_stream(disk_oio: np.ndarray, th: Mapping[str, float]) -> np.ndarray:
    """Where vscsiStats' outstanding I/Os per virtual disk (NaN: no capture) read between one thread's
    whole 1 and two threads' near 2: over half the I/Os went out alone, but not all (a paced stream)."""
    with np.errstate(invalid="ignore"):
        return (disk_oio > th["disk_oio_lone_max"]) & (disk_oio < th["disk_oio_pair_min"])


def no_thread_count(disk_oio: np.ndarray, th: Mapping[str, float]) -> np.ndarray:
    """Where a capture rules out faults.md's one or two threads a disk: three and more, or an open stream."""
    with np.errstate(invalid="ignore"):
        return (disk_oio > th["disk_oio_max"]) | open_stream(disk_oio, th)


def _pos(m: np.ndarray) -> np.ndarray:
    return np.maximum(np.nan_to_num(m, nan=-CAP), 0.0)


def rule_margins(bt: BundleTensors, th: Mapping[str, float], ev: Evidence | None = None) -> dict[str, np.ndarray]:
    """Per fault id, its rule's margin for each component of the fault's kind ((n,) float64, no NaN)."""
    ev = ev if ev is not None else bundle_evidence(bt)
    n, h, g, d, c = (ev[k] for k in ("nic", "host", "diskgroup", "disk", "cluster"))
    with np.errstate(invalid="ignore", divide="ignore"):
        # below the design speed, or below the port's own rated speed (NaN where neither is known)
        below = np.fmax(n["design_gbps"], n["rated_gbps"]) / n["speed_gbps"]
        # a port at its own rated speed is measured against the design only where it is the host's vSAN
        # uplink (a 1 GbE management port on an idle host may carry a share of little) and at most 1 Gb/s
        # (a 10 GbE host in a cluster grown with 25 GbE ones is another generation, not a slow link)
        at_rating = n["rated_gbps"] <= n["speed_gbps"]
        excused = at_rating & ((n["uplink"] < 0.5) | (n["speed_gbps"] > th["own_rate_max_gbps"]))
        slow = np.where((n["vsan_share"] >= th["uplink_share"]) & ~excused, below, np.nan)
        top, cap = n["tput_top_mbs"], n["cap_mbs"]
        # speed unknown (no nicinfo, no logged link-up): read off the uplink's throughput, flat at its top
        # for a share of the window while its peers carry more, or stepped down to a rate and held there
        # after carrying more before (a whole-window top reads the busier hours before the onset), or
        # saturated (port drops, pause frames) at no more than 1 GbE's rate without losing packets; the
        # time at that rate, how much more the peers carry and how saturated it is grade the finding
        flat_top = all_of(
            _at_link_rate(top, th),
            up(n["tput_at_top"], th["at_top_share"]),
            up(n["peer_top_mbs"] / top, th["peer_top_ratio"]),
        )
        stepped = all_of(
            _at_link_rate(cap, th),
            up(n["cap_share"], th["at_top_share"]),
            gate(
                np.where(
                    np.isnan(cap),
                    np.nan,
                    (n["cap_held"] >= th["cap_held"]) & (n["cap_before"] >= th["cap_before_ratio"]),
                )
            ),
        )
        saturated = given(
            any_of(up(n["drops_pct"], th["sat_drops_pct"]), up(n["pause_per_s"], th["sat_pause_per_s"])),
            gate(np.nan_to_num(np.fmin(top, cap), nan=np.inf) <= th["gbe_top_mbs"]),
            veto_above(np.fmax(np.fmax(n["loss_pct"], n["host_loss_pct"]), n["rexmit_pct"]), th["loss_pct"]),
        )
        by_rate = np.where(
            (n["uplink"] > 0.5) & np.isnan(n["speed_gbps"]), any_of(flat_top, stepped, saturated), np.nan
        )
    half, mtu = (np.where(n[k] > 0.5, CAP, np.nan) for k in ("half_duplex", "mtu_below_peers"))
    # MTU unknown (the host's nicinfo missing): frames no larger than MTU 1500 allows among jumbo peers
    jumbo_peers = up(n["peer_frame_bytes"], th["jumbo_frame_bytes"])
    small = given(jumbo_peers, down(n["frame_bytes"], th["mtu_1500_frame_bytes"]))
    mtu = np.where(np.isnan(n["mtu_below_peers"]), small, mtu)
    link = any_of(up(slow, th["speed_ratio"]), half, mtu, by_rate)
    # the loss rates and the host's retransmits must agree where both are collected; port drops count
    # only where loss rates are not collected (an uplink at line rate overruns the switch port too)
    loss = any_of(
        all_of(up(np.fmax(n["loss_pct"], n["host_loss_pct"]), th["loss_pct"]), up(n["rexmit_pct"], th["rexmit_pct"])),
        up(n["esxtop_drop_pct"], th["esxtop_drop_pct"]),
        up(n["err_pct"], th["err_pct"]),
        np.where(np.isnan(n["loss_pct"]), up(n["drops_pct"], th["port_drops_pct"]), np.nan),
    )
    cpu = given(  # how long vSAN's worlds wait to run, on a host whose CPUs are busy
        any_of(up(h["ready_pct"], th["ready_pct"]), up(h["esxtop_ready_pct"], th["ready_pct"])),
        veto_under(h["cpu_util_pct"], th["cpu_util_pct"]),
    )
    # its I/O rate over its siblings', over the window or while it is slow (a hot spot that began late)
    serves = np.fmax(d["iops_vs_peers"], d["iops_vs_peers_slow"])
    slow_read = up(d["read_ms"], th["hot_read_ms"])
    hot = given(
        any_of(
            all_of(slow_read, up(d["read_vs_peers"], th["hot_read_vs_peers"])),
            given(  # serving at least its siblings' rate: no idle device's few slow reads
                all_of(slow_read, up(d["read_vs_peers"], th["hot_busy_read_vs_peers"])),
                up(serves, th["hot_busy_iops_vs_peers"]),
            ),
            given(
                up(serves, th["hot_few_iops_vs_peers"]),
                up(d["read_ms"], th["hot_few_read_ms"]),
                up(d["read_vs_peers"], th["hot_few_read_vs_peers"]),
            ),
        ),
        gate(np.where(np.isnan(d["write_vs_peers"]), np.nan, d["write_vs_peers"] < th["hot_write_vs_peers"])),
        gate(np.where(np.isnan(serves), np.nan, serves >= th["hot_iops_vs_peers"])),
        gate(d["capacity_ssd"]),
        gate(d["dedup"]),  # faults.md: "dedup enabled in storage list" (no say where the list is missing)
        gate(np.where(d["scsi_errors"] > 0, 0.0, 1.0)),
    )
    stands_out = np.fmax(d["dev_vs_peers"], d["write_vs_peers"])  # its device or write latency over its siblings'
    ratio, above = up(stands_out, th["dev_vs_peers"]), up(stands_out, th["dev_abs_vs_peers"])
    slow_dev = given(
        any_of(
            all_of(ratio, up(any_of(d["dev_ms"], d["write_ms"]), th["dev_floor_ms"])),
            all_of(up(d["dev_ms"], th["dev_ms"]), above),  # slow in absolute terms and above its siblings
            all_of(up(d["deteriorated"], th["deteriorated"]), above),  # ESXi's watch, with the numbers
        ),
        veto_above(d["iops_vs_peers"], th["dev_busy_iops_vs_peers"]),  # "while its iops are ordinary"
    )
    resync = up(c["resync_mbs_2nd_host"], th["resync_mbs"])
    # a rebuild loads every device it touches: without SCSI errors, a slow disk during a resync is the resync's
    resync_on = float(_pos(resync).max()) if len(resync) else 0.0
    disk = any_of(slow_dev - 2.0 * _pos(hot) - resync_on, up(d["scsi_errors"], th["scsi_errors"]))
    wb = any_of(
        all_of(up(g["congestion"], th["congestion"]), down(g["wb_free_pct"], th["wb_free_pct"])),
        all_of(up(g["lsom_events"], th["lsom_events"]), up(g["congestion"], th["congestion"])),
    )
    # a buffer filled while resync traffic is a large share of its host's, and not full while the resync
    # is quiet, is the resync's finding: the group is "no" as surely as the resync is "yes"
    with np.errstate(invalid="ignore"):
        by_resync = (g["resync_share"] >= th["resync_share"]) & ~(g["wb_free_quiet_pct"] < th["wb_free_pct"])
    explained = np.where(by_resync, resync_on, 0.0)
    # a disk group's congestion behind a failing device of that group is the device's finding
    disk_m = np.nan_to_num(disk, nan=-CAP)
    grp = np.full(len(wb), -CAP)
    gi = np.asarray(bt.kinds["disk"].group_index)
    if len(gi):
        np.maximum.at(grp, gi[gi >= 0], disk_m[gi >= 0])
    wb_own = wb - 2.0 * _pos(grp)
    with np.errstate(invalid="ignore"):
        # threads per disk: vscsiStats counts them where captured (1 or 2: faults.md's fault; 3 and more a
        # benchmark driven as it should be); elsewhere the VMs' I/Os in flight on the plateau stand in
        per_vm = all_of(up(c["oio_per_vm"], th["oio_per_vm_min"]), down(c["oio_per_vm"], th["oio_per_vm_max"]))
        under = (
            np.where(np.isnan(c["disk_oio"]), per_vm, down(c["disk_oio"], th["disk_oio_max"])),
            # a count between one thread's and two's is an open stream's, no thread count: a veto
            np.where(open_stream(c["disk_oio"], th), -CAP, np.nan),
            # a thread holds its I/O in flight all the time (Little's law): VMs holding under half of one
            # are paced, whatever a capture counts (a guest paced at a low rate reads 1 a disk there too)
            veto_under(c["oio_per_vm"], th["oio_per_vm_min"]),
            down(c["latency_ms"], np.where(c["hybrid"] > 0.5, th["low_latency_hybrid_ms"], th["low_latency_ms"])),
            veto_above(c["inflight_spread"], th["threaded_inflight_spread"]),
            veto_above(c["oio_per_disk"], th["oio_per_disk_max"]),  # devices busy: not under-driven
        )
        flat = c["oio_plateau_spread"] - 1.0  # how far the plateau's top rises over its body
        held = any_of(  # threads, not a rate: the sum holds still, or each VM's in-flight level does
            down(flat, th["held_oio_spread"]),
            down(c["inflight_spread"], th["held_inflight_spread"]),
        )
        low_oio = any_of(
            given(down(flat, th["oio_plateau_spread"]), *under,
                  veto_below(c["closed_loop"], th["paced_loop"]), held),
            given(score_up(c["closed_loop"], th["closed_loop"]), *under),
        )  # fmt: skip
    out = {
        "net.packet_loss": loss - 2.0 * _pos(link),  # drops on a link run below its design are the link's
        "net.link_degraded": link,
        "host.cpu_contention": cpu,
        "disk.hotspot": hot,
        "disk.latency": disk,
        "dg.write_buffer": np.where(explained > 0, np.minimum(wb_own, -explained), wb_own),
        "cluster.resync": resync,
        "cluster.low_oio": low_oio,
    }
    out = {f: np.clip(np.nan_to_num(m, nan=-CAP), -CAP, CAP) for f, m in out.items()}
    # faults.md: under-driven is "the system is healthy but under-driven", so another rule's finding
    # anywhere in the bundle vetoes it by that finding's margin (the served ensemble weighs its combined
    # under-driven score the same way, models.alone; this is the rules' own, readable as a margin)
    other = max((float(m.max()) for f, m in out.items() if f != "cluster.low_oio" and m.size), default=-CAP)
    if other > 0:
        out["cluster.low_oio"] = np.minimum(out["cluster.low_oio"], -other)
    return out


@per_bundle
def named_margins(bt: BundleTensors) -> dict[str, np.ndarray]:
    """rule_margins at the named THRESHOLDS, computed once per bundle object: the learnt models' rule
    columns (models/features.py) and the `rules` member beside them in the served ensemble read these."""
    return rule_margins(bt, THRESHOLDS)
