"""Findings: every fault's verdict comes with evidence read from the bundle and the recommendation."""

from __future__ import annotations

import calendar
import gzip
import io
import re
import tarfile
import time
from pathlib import Path

import numpy as np
import pytest

from data.simulate.archive import tar_bytes, write_bundle
from data.simulate.generate import simulate_bundle
from diagnosis.charts import chart_for
from diagnosis.citations import FAULT_EVENTS, MAX_LINES
from diagnosis.findings import CLUES, evidence, findings
from diagnosis.onset import describe
from diagnosis.series import decoded, peers_of
from pipeline.api import load_bundle
from pipeline.channels import KIND_CHANNELS
from pipeline.citations import PER_KIND
from tests.pipeline.simbundles import pick, upload
from vsandx.faults import FAULT_IDS, FAULTS

EXPECT = {  # a phrase the first evidence line must carry, from faults.md's signature column
    "net.packet_loss": "packet loss",
    "net.link_degraded": "throughput",
    "disk.latency": "DAVG",
    "disk.hotspot": "read latency",
    "dg.write_buffer": "write buffer free",
    "host.cpu_contention": "CPU utilisation",
    "cluster.low_oio": "outstanding I/O",
    "cluster.resync": "resync traffic",
}


def test_every_fault_has_clues() -> None:
    assert set(CLUES) == set(FAULT_IDS) == set(EXPECT)


@pytest.mark.parametrize("fault", FAULT_IDS)
def test_findings_carry_evidence_and_recommendation(fault: str) -> None:
    b = simulate_bundle("lab", 8, 2, faults=(fault,))
    bt = load_bundle(tar_bytes(b.files))
    comp = b.plan.faults[0].component
    out = findings(bt, {comp: (fault, 0.9), "cluster" if comp != "cluster" else "host:x": ("none", 0.99)})
    assert len(out) == 1
    f = out[0]
    assert f.component == comp and f.fault == fault and f.recommendation == FAULTS[fault].recommendation
    assert f.evidence and EXPECT[fault] in f.evidence[0]
    doc = f.to_dict()
    assert set(doc) == {"component", "fault", "confidence", "summary", "recommendation", "evidence",
                        "cited_lines", "series", "onset"}  # fmt: skip
    assert len(f.series) == len(f.evidence)  # each evidence line's worst sample


def test_findings_sorted_by_confidence() -> None:
    b = simulate_bundle("field", 8, 3, faults=("net.packet_loss", "host.cpu_contention"))
    bt = load_bundle(tar_bytes(b.files))
    (a, c) = (f.component for f in b.plan.faults)
    out = findings(bt, {a: ("net.packet_loss", 0.6), c: ("host.cpu_contention", 0.95)})
    assert [f.fault for f in out] == ["host.cpu_contention", "net.packet_loss"]
    assert evidence(bt, a, "net.packet_loss")


# ------------------------------------------------------------------ what the evidence cites


def _archive_line(archive: Path, member: str, line: int) -> str:
    """Line `line` (1-based) of `member` inside the .tgz, as a reader of the archive finds it (a rotated
    `.gz` log decompressed)."""
    with tarfile.open(archive) as tf:
        f = tf.extractfile(member)
        assert f is not None, member
        data = f.read()
    if member.endswith(".gz"):
        data = gzip.decompress(data)
    return data.decode("utf-8", "replace").split("\n")[line - 1]


@pytest.mark.parametrize(
    ("fault", "cause", "names"),
    [
        ("disk.latency", "disk.latency:medium_error", "device"),
        ("net.link_degraded", "net.link_degraded:speed_1g", "nic"),
    ],
)
def test_cited_lines_are_the_archives_lines(tmp_path: Path, fault: str, cause: str, names: str) -> None:
    """Each cited line is, character for character, that line of that file inside the uploaded archive;
    it names the faulty device or vmnic, and is of an event kind that speaks of the fault."""
    b = pick("lab", 5, lambda b: b.plan.faults[0].onset > 0, faults=(fault,), causes=(cause,))
    archive = write_bundle("b", upload(b.files), tmp_path, "tgz")
    comp = b.plan.faults[0].component
    (f,) = findings(load_bundle(archive), {comp: (fault, 0.9)})
    cited = f.cited_lines
    assert cited, "the simulator logs this cause: its lines must be cited"
    for c in cited:
        assert set(c) == {"file", "line", "text", "event"} and c["event"] in FAULT_EVENTS[fault]
        assert c["file"].split("/")[0] in {p.split("/")[0] for p in b.files}  # a path inside the bundle
        assert _archive_line(archive, c["file"], c["line"]) == c["text"]
        assert comp.rsplit("/", 1)[1] in c["text"]  # naa.… or vmnicN: the component's own line
    kinds = [c["event"] for c in cited]
    assert len(cited) <= MAX_LINES and all(kinds.count(k) <= PER_KIND for k in kinds)
    assert {"deteriorated", "scsi_fail_medium"} & set(kinds) if names == "device" else "link_down" in kinds


def test_worst_samples_are_the_charted_ones() -> None:
    """Each evidence line's worst sample (entity, metric, time, value) is the chart's highest point of the
    same series (the lowest, for a write buffer's free space), at the time the chart shows it."""
    for fault in ("disk.latency", "dg.write_buffer"):
        b = simulate_bundle("lab", 11, 0, faults=(fault,))
        bt = load_bundle(tar_bytes(b.files))
        comp = b.plan.faults[0].component
        (f,) = findings(bt, {comp: (fault, 0.9)})
        chart = chart_for(bt, comp, fault)
        assert chart is not None and f.series
        panels = {p.channel: p for p in chart.panels}
        checked = 0
        for s in f.series:
            assert s["entity"] == comp and s["metric"] in KIND_CHANNELS[comp.split(":")[0]]
            if s["metric"] not in panels:
                continue
            p = panels[s["metric"]]
            step = (calendar.timegm(time.strptime(s["time"], "%Y-%m-%dT%H:%M:%SZ")) - bt.start) // bt.step_s
            got = [v for v in p.subject if v is not None]
            assert s["unit"] == p.unit and p.subject[step] == pytest.approx(s["value"])
            assert s["value"] == pytest.approx(min(got) if s["metric"] == "dg.wbFreePct" else max(got))
            checked += 1
        assert checked >= (3 if fault == "dg.write_buffer" else 1)


def test_onset_is_in_the_document_in_words() -> None:
    b = simulate_bundle("lab", 11, 0, faults=("disk.latency",))
    bt = load_bundle(tar_bytes(b.files))
    comp = b.plan.faults[0].component
    (f,) = findings(bt, {comp: ("disk.latency", 0.9)})
    chart = chart_for(bt, comp, "disk.latency")
    assert chart is not None and chart.onset is not None and f.onset is not None
    assert f.onset["time"] == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(chart.time_of(chart.onset.step)))
    assert f.onset["at_start"] is chart.onset.at_start
    assert f"Onset: {f.onset['words']}" == describe(chart.onset, bt.start, bt.step_s)  # the chart's sentence
    assert f.onset["words"].startswith("started about ") and " UTC on " in f.onset["words"]


def test_nic_evidence_holds_it_against_the_other_hosts_uplinks() -> None:
    """A NIC's "(other hosts' vSAN uplinks …)" is the median over those uplinks, the same components as
    the chart's grey lines: never over idle or VM-network vmnics, nor the NIC's own host."""
    b = simulate_bundle("lab", 11, 0, faults=("net.link_degraded",))
    bt = load_bundle(tar_bytes(b.files))
    comp = b.plan.faults[0].component
    nic = bt.kinds["nic"]
    i = nic.ids.index(comp)
    peers = peers_of(bt, "nic", i)
    chart = chart_for(bt, comp, "net.link_degraded")
    assert chart is not None and len(chart.panels[0].peers) == len(peers) == len(bt.hosts) - 1
    x = decoded(nic, "pnic.rxThroughput")
    top = np.nanmax(x, axis=1)
    uplinks = float(np.median(top[peers]))
    everyone = float(np.nanmedian(np.delete(top, i)))
    assert abs(uplinks - everyone) > 0.5 * uplinks  # idle vmnics would drag the figure down
    line = evidence(bt, comp, "net.link_degraded")[0]
    assert line.endswith(f"(other hosts' vSAN uplinks {uplinks:.3g} MB/s)"), line


def test_resync_evidence_shows_resync_traffic() -> None:
    b = simulate_bundle("lab", 11, 0, faults=("cluster.resync",))
    bt = load_bundle(tar_bytes(b.files))
    (f,) = findings(bt, {"cluster": ("cluster.resync", 0.9)})
    assert f.evidence[0].startswith("resync traffic reaches ") and f.evidence[0].endswith("(resync reads, all hosts)")
    hosts = decoded(bt.kinds["host"], "domcompmgr.tputResyncRead")
    total = np.nansum(hosts, axis=0)
    s = f.series[0]
    assert (s["entity"], s["metric"], s["unit"]) == ("all hosts (total)", "domcompmgr.tputResyncRead", "MB/s")
    assert s["value"] == pytest.approx(float(total.max())) and float(total.max()) > 1  # MB/s of resync
    assert f.cited_lines == []  # no cluster fault has log lines of its own


@pytest.mark.parametrize(("index", "relation"), [(0, "before the onset"), (4, "after the onset")])
def test_esxtop_evidence_says_when_its_capture_ran(index: int, relation: str) -> None:
    """esxtop runs for minutes at collection time: a DAVG of 0.2 ms beside a perf DAVG of 700 ms is no
    contradiction when the capture ran before the fault began, and the evidence says so."""
    b = simulate_bundle("lab", 11, index, faults=["disk.latency"])
    comp = b.plan.faults[0].component
    bt = load_bundle(io.BytesIO(tar_bytes(b.files)))
    (f,) = findings(bt, {comp: ("disk.latency", 0.9)})
    (line,) = [e for e in f.evidence if e.startswith("esxtop")]
    got = re.search(r"\(esxtop captured (\d\d:\d\d)-(\d\d:\d\d) UTC(, [a-z ]+)?\)$", line)
    assert got is not None, line
    assert f.onset is not None and got.group(3) == f", {relation}"
    onset_hhmm = f.onset["time"][11:16]
    assert (got.group(2) <= onset_hhmm) if relation.startswith("before") else (got.group(1) >= onset_hhmm)


def test_a_link_that_stepped_down_reads_its_ceiling_from_the_onset_on() -> None:
    """A 1 GbE link from step 98 of 180 that carried 241 MB/s before: "tops out at 241 MB/s" contradicted
    its own chart (117 MB/s from the onset on). The figure, its peers' and the worst sample are read from
    the onset on, and the evidence says what it carried before; a link without the step reads as before."""
    b = simulate_bundle("lab", 11, 1, faults=("net.link_degraded",))
    bt = load_bundle(tar_bytes(b.files))
    comp = b.plan.faults[0].component
    (f,) = findings(bt, {comp: ("net.link_degraded", 0.9)})
    assert f.onset is not None and not f.onset["at_start"]
    on = (calendar.timegm(time.strptime(f.onset["time"], "%Y-%m-%dT%H:%M:%SZ")) - bt.start) // bt.step_s
    nic = bt.kinds["nic"]
    i = nic.ids.index(comp)
    x = decoded(nic, "pnic.rxThroughput")
    after, before = float(np.nanmax(x[i, on:])), float(np.nanmax(x[i, :on]))
    assert 100 < after < 125 < 1.2 * after < before  # 1 GbE's payload rate, and a busier past
    peers = float(np.median(np.nanmax(x[peers_of(bt, "nic", i), on:], axis=1)))
    assert f.evidence[0] == (
        f"receive throughput tops out at {after:.3g} MB/s from the onset on, after up to {before:.3g} MB/s "
        f"before it (other hosts' vSAN uplinks {peers:.3g} MB/s)"
    )
    worst = f.series[0]
    assert worst["value"] == pytest.approx(after) and worst["time"] >= f.onset["time"]
    flat = simulate_bundle("lab", 11, 2, faults=("net.link_degraded",))
    flat_bt = load_bundle(tar_bytes(flat.files))
    flat_comp = flat.plan.faults[0].component
    (g,) = findings(flat_bt, {flat_comp: ("net.link_degraded", 0.9)})
    assert "onset" not in g.evidence[0] and g.evidence[0] == evidence(flat_bt, flat_comp, "net.link_degraded")[0]
