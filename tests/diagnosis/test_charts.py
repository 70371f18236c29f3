"""Charts behind the findings: which channels, peers of the same role, the onset estimate (against the
simulator's ground truth), SVG that stands alone and escapes what bundles carry, PNG that draws every
name as plain text."""

from __future__ import annotations

import calendar
import io
import time
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from data.simulate.archive import tar_bytes
from data.simulate.generate import simulate_bundle
from diagnosis.chart_png import chart_png, figure
from diagnosis.chart_render import RIGHT, W, chart_svgs, extent, nice_ticks, peer_stats, time_ticks
from diagnosis.charts import OVERVIEW, SPECS, Chart, Panel, chart_for, charts_for, peers_of
from diagnosis.onset import Onset, estimate_onset
from pipeline.api import load_bundle
from pipeline.tensors import BundleTensors
from tests.attacks.bounds import bounded
from tests.service.kit import hostile_chart
from vsandx.faults import FAULT_IDS, FAULTS

SVG = "{http://www.w3.org/2000/svg}"


def _noise(seed: int, shape: tuple[int, ...], scale: float = 0.05) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, scale, shape)


def test_onset_is_the_first_sustained_departure() -> None:
    peers = 1 + _noise(1, (5, 180))
    x = 1 + _noise(2, (180,))
    x[70:] += 2.0
    assert estimate_onset(x, peers) == Onset(70, False)
    x[30] += 5  # one spike before it is not an onset
    assert estimate_onset(x, peers) == Onset(70, False)


def test_onset_downwards_and_without_peers() -> None:
    x = 0.8 + _noise(3, (120,), 0.01)
    x[40:] = np.linspace(0.8, 0.0, 80)  # a write buffer draining
    onset = estimate_onset(x, np.empty((0, 120)), direction=-1)
    assert onset is not None and 40 <= onset.step <= 60 and not onset.at_start
    assert estimate_onset(x, np.empty((0, 120)), direction=1) is None  # it never goes up


def test_fault_present_from_the_start_and_healthy_series() -> None:
    peers = 1 + _noise(4, (6, 100))
    assert estimate_onset(5 + _noise(5, (100,)), peers) == Onset(0, True)
    assert estimate_onset(1 + _noise(6, (100,)), peers) is None
    gappy = 1 + _noise(7, (100,))
    gappy[:95] = np.nan
    assert estimate_onset(gappy, peers) is None  # too few observed steps to say


@pytest.fixture(scope="module")
def by_fault() -> dict[str, tuple[BundleTensors, dict[str, object]]]:
    """One lab bundle per fault, with the simulator's truth (component, onset)."""
    out = {}
    for f in FAULT_IDS:
        b = simulate_bundle("lab", 11, 0, faults=[f])
        out[f] = (load_bundle(io.BytesIO(tar_bytes(b.files))), b.labels["faults"][0])
    return out


@pytest.mark.parametrize("fault", FAULT_IDS)
def test_each_fault_charts_its_signature_with_the_true_onset(
    fault: str, by_fault: dict[str, tuple[BundleTensors, dict[str, object]]]
) -> None:
    bt, truth = by_fault[fault]
    component = str(truth["component"])
    chart = chart_for(bt, component, fault)
    assert chart is not None and chart.component == component and chart.fault == fault
    channels = [p.channel for p in chart.panels]
    assert channels == [s.channel for s in SPECS[fault] if s.channel in channels]  # the spec's order
    assert len(chart.panels) >= 3
    kind = FAULTS[fault].kind
    if kind == "nic":  # the negotiated speed is part of the evidence
        assert chart.panels[0].subject_label.endswith("Gb/s)")
    for p in chart.panels:
        assert len(p.subject) == bt.T and any(v is not None for v in p.subject)
        assert p.unit and p.title
        if kind != "cluster":
            assert p.peers and all(len(r) == bt.T for r in p.peers)
    onset_s = calendar.timegm(time.strptime(str(truth["onset"]), "%Y-%m-%dT%H:%M:%SZ"))
    true_step = (onset_s - bt.start) / bt.step_s
    assert chart.onset is not None
    if true_step <= 0:
        assert chart.onset.at_start
    else:
        # a write buffer fills for a while before its free space departs from its peers': the chart may
        # date it a few steps late, never early
        late = 6 if fault == "dg.write_buffer" else 3
        assert -3 <= chart.onset.step - true_step <= late, (chart.onset, true_step)


def test_peers_share_the_role(by_fault: dict[str, tuple[BundleTensors, dict[str, object]]]) -> None:
    bt, truth = by_fault["net.packet_loss"]
    nic = bt.kinds["nic"]
    i = nic.ids.index(str(truth["component"]))
    peers = peers_of(bt, "nic", i)
    assert len(peers) == len(bt.hosts) - 1  # the vSAN uplink of each other host
    assert {int(nic.host_index[j]) for j in peers} == set(range(len(bt.hosts))) - {int(nic.host_index[i])}
    disk = bt.kinds["disk"]
    cache = disk.static_names.index("is_cache")
    for j in peers_of(bt, "disk", 0):
        assert disk.static[j, cache] == disk.static[0, cache]
    assert peers_of(bt, "cluster", 0) == []


def test_charts_follow_the_findings(by_fault: dict[str, tuple[BundleTensors, dict[str, object]]]) -> None:
    bt, truth = by_fault["disk.latency"]
    host = bt.kinds["host"].ids[0]
    doc = {
        "findings": [
            {"component": host, "fault": "host.cpu_contention"},
            {"component": "disk:nowhere/naa.0", "fault": "disk.latency"},  # not in this bundle
            {"component": truth["component"], "fault": "disk.latency"},
        ]
    }
    got = charts_for(bt, doc)
    expected = [(host, "host.cpu_contention"), (truth["component"], "disk.latency")]
    assert [(c.component, c.fault) for c in got] == expected


def test_a_healthy_bundle_gets_the_clusters_overview(
    by_fault: dict[str, tuple[BundleTensors, dict[str, object]]],
) -> None:
    """No finding: one chart, the cluster's latency and throughput (each host beside it), so that an
    engineer can confirm "healthy" by eye."""
    bt, _ = by_fault["disk.latency"]
    (chart,) = charts_for(bt, {"findings": []})
    assert (chart.component, chart.fault, chart.onset, chart.title) == ("cluster", OVERVIEW, None, "Cluster overview")
    channels = [p.channel for p in chart.panels]
    for want in ("domclient.latencyAvgRead", "domclient.latencyAvgWrite", "domclient.throughputRead"):
        assert want in channels
    for p in chart.panels:
        assert p.subject_label == "cluster" and any(v is not None for v in p.subject)
        assert len(p.peers) == len(bt.hosts) and p.peer_label == "each host"
    assert chart_svgs(chart, "o") and chart_png(chart)[:4] == b"\x89PNG"


def test_svg_stands_alone_and_escapes_bundle_text() -> None:
    svgs = chart_svgs(hostile_chart(), "c0")
    assert len(svgs) == 2
    for k, s in enumerate(svgs):
        assert "<script" not in s and "&lt;script&gt;" in s
        root = ET.fromstring(s)  # well-formed XML
        assert root.tag == f"{SVG}svg" and root.get("role") == "img"
        title = root.find(f"{SVG}title")
        assert title is not None and title.get("id") == f"c0-{k}-t" and "disk.latency" in (title.text or "")
        assert root.get("aria-labelledby") == f"c0-{k}-t c0-{k}-d"
        onset = [e for e in root.iter(f"{SVG}line") if e.get("class") == "onset"]
        assert len(onset) == 1
        subject = [e for e in root.iter(f"{SVG}path") if e.get("class") == "subject"]
        assert subject and subject[0].get("d", "").count("M") == 4  # three gaps break the line
        texts = "".join(t.text or "" for t in root.iter(f"{SVG}text"))
        assert "time (UTC)" in texts and "22:20" in texts  # 1700000000 = 2023-11-14 22:13:20 UTC
    many, few = ET.fromstring(svgs[0]), ET.fromstring(svgs[1])
    assert len(many.findall(f"{SVG}polygon")) >= 1  # many peers: their range
    assert not few.findall(f"{SVG}polygon")  # a few peers: a line each
    refs = [e for e in few.iter(f"{SVG}line") if e.get("class") == "ref"]
    assert len(refs) == 1 and not [e for e in many.iter(f"{SVG}line") if e.get("class") == "ref"]


def test_png_for_reports() -> None:
    png = chart_png(hostile_chart())
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


@pytest.mark.parametrize("name", ["esx$a^{$", "$\\frac{1}{0}$ \\$x$", "$$", "a_$b$_\\", "{" * 50 + "$"])
def test_png_draws_mathtext_and_tex_in_names_as_text(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A device named like mathtext (`$a^{$` made matplotlib raise: the PNG answered 500) is drawn as its
    characters, whatever TeX setting the deployment's matplotlibrc has."""
    import matplotlib
    from matplotlib.text import Text

    monkeypatch.setitem(matplotlib.rcParams, "text.usetex", True)  # no LaTeX may ever run
    drawn: list[str] = []
    original = Text.draw

    def record(self: Text, renderer: object) -> None:
        if self.get_visible() and self.get_text():
            assert not self.get_usetex() and self._preprocess_math(self.get_text()) == (self.get_text(), False)
            drawn.append(self.get_text())
        original(self, renderer)

    monkeypatch.setattr(Text, "draw", record)
    chart = hostile_chart()
    chart.panels[1].subject_label = chart.panels[1].peer_label = chart.panels[0].subject_label = name
    chart.component = f"disk:{name}"
    with bounded(f"a chart PNG of {name!r}"):
        png = chart_png(chart)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert name in drawn and any(name in t for t in drawn if t.startswith("disk.latency on disk:"))


def test_axis_ticks() -> None:
    assert nice_ticks(0, 97) == [0, 20, 40, 60, 80, 100]
    flat = nice_ticks(0, 0)
    assert flat[0] == 0 and flat[-1] >= 1 and len(flat) <= 7
    ticks = time_ticks(1_700_000_000, 7200)
    assert 4 <= len(ticks) <= 8 and all(t % 600 == 0 for t in ticks)
    assert ticks[0] >= 1_700_000_000 and ticks[-1] <= 1_700_007_200


def test_the_band_is_the_peers_middle_half() -> None:
    """Many peers are drawn as their interquartile range and median: one wild peer (a second faulty
    component) neither widens the band nor stretches the value axis until the subject hides inside."""
    calm: list[list[float | None]] = [[1.0 + 0.1 * k] * 5 for k in range(8)]  # 1.0 … 1.7
    lo, med, hi = peer_stats(calm)
    assert lo[0] == pytest.approx(1.175) and med[0] == pytest.approx(1.35) and hi[0] == pytest.approx(1.525)
    wild: list[list[float | None]] = [*calm, [1000.0] * 5]
    lo2, _, hi2 = peer_stats(wild)
    assert lo2[0] == pytest.approx(1.2) and hi2[0] == pytest.approx(1.6)  # the quartiles of 9, not 1000
    assert peer_stats([[None, 2.0], [None, 4.0]]) == ([None, 2.5], [None, 3.0], [None, 3.5])
    subject: list[float | None] = [5.0] * 5
    chart = Chart("disk:d", "disk.latency", 1_700_000_000, 20, [Panel("lat", "c", "ms", "d", subject, "peers", wild)],
                  None)  # fmt: skip
    (svg,) = chart_svgs(chart, "w")
    root = ET.fromstring(svg)
    ticks = [t.text or "" for t in root.iter(f"{SVG}text") if t.get("class") == "ca" and ":" not in (t.text or "")]
    assert ticks and max(float(t) for t in ticks) <= 10  # the axis is the subject's and the band's, not 1000's
    assert len(root.findall(f"{SVG}polygon")) == 1


def test_time_axis_ends_where_the_data_ends() -> None:
    """A chart whose samples stop before the window's end (a capture cut short) draws its time axis to
    the last sample: the series reach the plot's right edge, no time label lies past the last sample."""
    n, last = 100, 59
    subject: list[float | None] = [float(i % 5) if i <= last else None for i in range(n)]
    peers = [[1.0 if i <= last - 10 else None for i in range(n)]]
    start, step = 1_700_000_000, 60
    panel = Panel("loss", "c", "%", "vmnic1", subject, "p", peers)
    chart = Chart("nic:h/vmnic1", "net.packet_loss", start, step, [panel], None)
    assert extent(chart) == (0, last)
    (svg,) = chart_svgs(chart, "x")
    root = ET.fromstring(svg)
    path = next(e for e in root.iter(f"{SVG}path") if e.get("class") == "subject").get("d", "")
    assert float(path.rsplit("L", 1)[1].split(",")[0]) == pytest.approx(W - RIGHT, abs=0.1)
    labels = [t.text or "" for t in root.iter(f"{SVG}text") if t.get("class") == "ca" and ":" in (t.text or "")]
    end = time.strftime("%H:%M", time.gmtime(start + last * step))
    assert labels and max(lb[-5:] for lb in labels) <= end
    ax = figure(chart).axes[0]
    import matplotlib.dates as mdates

    lo, hi = ax.get_xlim()
    assert mdates.num2date(hi).timestamp() == pytest.approx(start + last * step)
    assert mdates.num2date(lo).timestamp() == pytest.approx(start)


def test_the_span_that_drove_the_verdict_is_shaded(
    by_fault: dict[str, tuple[BundleTensors, dict[str, object]]],
) -> None:
    """A finding's drivers span (diagnosis.drivers, ISO times) becomes steps of the grid, shaded behind the
    data on every panel and in the PNG, with a legend entry; a finding without drivers has no shading."""
    bt, truth = by_fault["disk.latency"]
    comp = str(truth["component"])

    def iso(step: int) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(bt.start + step * bt.step_s))

    span = {"start": iso(10), "end": iso(20)}
    (chart,) = charts_for(bt, {"findings": [{"component": comp, "fault": "disk.latency", "drivers": {"span": span}}]})
    assert chart.span == (10, 20)
    for s in chart_svgs(chart, "d"):
        rect = ET.fromstring(s).find(f".//{SVG}rect[@class='drivers-span']")
        assert rect is not None and float(rect.get("width", "0")) > 0
        assert "what drove the verdict" in s
    assert chart_png(chart)[:4] == b"\x89PNG"
    labels = [t.get_text() for ax in figure(chart).axes for t in ax.get_legend().get_texts()]
    assert "what drove the verdict" in labels
    (plain,) = charts_for(bt, {"findings": [{"component": comp, "fault": "disk.latency"}]})
    assert plain.span is None and all("drivers-span" not in s for s in chart_svgs(plain, "p"))
