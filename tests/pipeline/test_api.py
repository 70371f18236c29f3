"""load_bundle end to end: formats agree, topology matches the reference validator, tensor semantics."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from data.simulate.archive import tar_bytes, write_bundle
from data.simulate.generate import Bundle, simulate_bundle
from data.simulate.perturb import drop_hosts
from pipeline import (
    KIND_CHANNELS,
    KIND_STATIC,
    SCHEMA_VERSION,
    BundleTensors,
    NoPerfData,
    PipelineConfig,
    load_bundle,
    parse_bundle,
)
from pipeline.channels import KIND_CHANNEL_DEFS
from tests.pipeline.simbundles import (
    LABELS,
    dump_members,
    dump_series,
    fault,
    first_log_time,
    host_top,
    log_text,
    perf_as_json,
    pick,
    upload,
)
from vsandx.faults import COMPONENT_KINDS

_COLLECTED = re.compile(r"-(\d{4}-\d\d-\d\d--\d\d\.\d\d)-\d+$")


def _long_shape(b: Bundle) -> bool:
    """About 48 hours at 300 s (more than 540 samples: held whole only on 1,200-s steps), the dump holding
    every sample with some values missing (None), and the failing device's host uploaded, failing from
    hour 16 on (past the first 15-hour window)."""
    disk = fault(b, "disk.latency")
    series = dump_series(b.files[dump_members(b.files)[0]])
    cluster = series[f"cluster-domclient:{b.cluster.uuid}"][0]
    host = b.cluster.hosts[0].uuid
    return (
        b.interval == 300
        and b.samples > 540
        and len(cluster) == b.samples
        and "None" in series[f"host-domclient:{host}"][1]["iopsRead"]
        and host_top(b.files, b.cluster.hosts[disk.host].name) is not None
        and disk.onset * b.interval >= 16 * 3600
    )


@pytest.fixture(scope="module")
def long_bundle() -> Bundle:
    """A field capture of about 48 hours at the service's default 300 s with a device failing late."""
    return pick(
        "field", 1, _long_shape, start=893, tries=3, faults=["disk.latency"], causes=["disk.latency:medium_error"]
    )


@pytest.fixture(scope="module")
def long_upload(long_bundle: Bundle) -> bytes:
    return tar_bytes(upload(long_bundle.files))


def test_simulated_bundles_are_spec_conformant(
    checker: ModuleType, bundle: Bundle, bundle_tgz: Path, bundle_zip: Path, bundle_dir: Path, tmp_path: Path
) -> None:
    """Every upload format, and the perf dump in its JSON form (which the simulator does not write)."""
    as_json = perf_as_json(bundle.files)
    assert not dump_members(as_json) and any(p.endswith("/perf.json") for p in as_json)
    for p in (bundle_tgz, bundle_zip, bundle_dir, write_bundle("j", as_json, tmp_path, "tgz")):
        ck = checker.check_bundle(str(p))
        assert ck.problems == [], p


def test_perf_json_gives_the_tensors_of_the_xml_dump(bundle: Bundle, bundle_tgz: Path) -> None:
    a, j = load_bundle(bundle_tgz), load_bundle(tar_bytes(perf_as_json(bundle.files)))
    assert j.component_ids == a.component_ids and (j.step_s, j.T, j.start) == (a.step_s, a.T, a.start)
    for k in COMPONENT_KINDS:
        perf = np.array([c.source == "perf" for c in KIND_CHANNEL_DEFS[k]])
        np.testing.assert_array_equal(j.kinds[k].mask[:, perf], a.kinds[k].mask[:, perf])
        np.testing.assert_allclose(j.kinds[k].values[:, perf], a.kinds[k].values[:, perf], rtol=1e-6)


def test_formats_give_identical_tensors(bundle_tgz: Path, bundle_zip: Path, bundle_dir: Path) -> None:
    a, b, c = (load_bundle(p) for p in (bundle_tgz, bundle_zip, bundle_dir))
    d = load_bundle(bundle_tgz.read_bytes())
    for other in (b, c, d):
        assert other.component_ids == a.component_ids
        for k in COMPONENT_KINDS:
            np.testing.assert_array_equal(other.kinds[k].values, a.kinds[k].values)
            np.testing.assert_array_equal(other.kinds[k].mask, a.kinds[k].mask)


def test_components_match_reference_validator(checker: ModuleType, bundle_tgz: Path) -> None:
    """The validator's own component derivation (what simulated labels list) equals our topology."""
    tree = checker.load_bundle(str(bundle_tgz))
    ck = checker.Checker("x")
    cm = None
    ents: dict[str, object] = {}
    nic_rows = {}
    for p, data in tree.files.items():
        if "cmmds-tool" in p and cm is None:
            cm = ck.parse_cmmds(data.decode(), p)
        if "perf_stats_with_dump" in p:
            ck.parse_dump(data.decode(), p, ents)
        if "nicinfo" in p:
            host = checker.HOST_RE.match(p.split("/")[0]).group("host")
            nic_rows[host] = ck.check_nicinfo(data.decode(), p)
    want = checker.components_from(cm, ents, nic_rows)
    bt = load_bundle(bundle_tgz)
    assert set(bt.component_ids) == set(want)
    for cid in bt.component_ids:
        assert cid.split(":", 1)[0] == want[cid]


def test_result_shape_and_schema(bundle_tgz: Path, bundle: Bundle) -> None:
    bt = load_bundle(bundle_tgz)
    assert bt.schema_version == SCHEMA_VERSION
    assert set(bt.kinds) == set(COMPONENT_KINDS)
    hosts = bundle.cluster.hosts
    assert bt.hosts == tuple(sorted(h.name for h in hosts))
    assert len(bt.kinds["disk"].ids) == sum(len(h.disks) for h in hosts)
    for k, kt in bt.kinds.items():
        n = len(kt.ids)
        assert kt.values.shape == (n, len(KIND_CHANNELS[k]), bt.T) and kt.values.dtype == np.float32
        assert kt.mask.shape == kt.values.shape and kt.mask.dtype == bool
        assert kt.static.shape == (n, len(KIND_STATIC[k]))
        assert np.all(kt.values[~kt.mask] == 0) and np.isfinite(kt.values).all()
    # two hours at 20 s are 360 samples: the grid's 180 steps take two each
    assert (bundle.interval, bundle.samples) == (20, 360)
    assert PipelineConfig().grid_steps == bt.T and bt.step_s == 40 and bt.native_interval_s == 20
    assert bt.kinds["disk"].group_index.min() >= 0 and bt.kinds["nic"].host_index.min() >= 0
    assert bt.context.shape == (len(KIND_STATIC["cluster"]),)
    json.dumps(bt.summary())


def test_cache_disks_mask_capacity_only_channels(bundle_tgz: Path) -> None:
    bt = load_bundle(bundle_tgz)
    kt = bt.kinds["disk"]
    cache = kt.static[:, KIND_STATIC["disk"].index("is_cache")] == 1
    assert cache.any() and (~cache).any()
    for ch in ("disk.iopsRead", "disk.latencyRead"):
        i = kt.channels.index(ch)
        assert not kt.mask[cache, i].any() and kt.mask[~cache, i].any()
    i = kt.channels.index("disk.latencyDevDAvg")
    assert kt.mask[:, i].all()


def test_units_and_log_scaling(long_bundle: Bundle, long_upload: bytes) -> None:
    """One grid step per sample (grid_steps = the capture's samples): values are the dump's, converted."""
    cfg = PipelineConfig(grid_steps=long_bundle.samples)
    parsed = parse_bundle(long_upload, cfg)
    bt = load_bundle(long_upload, cfg)
    assert (bt.step_s, bt.T) == (long_bundle.interval, long_bundle.samples) and bt.native_interval_s == bt.step_s
    h = min(long_bundle.cluster.hosts, key=lambda x: x.name)
    raw = parsed.records.perf[f"host-domclient:{h.uuid}"].metrics["latencyAvgRead"]  # µs
    kt = bt.kinds["host"]
    r = kt.ids.index(f"host:{h.name}")
    assert r == 0
    lat = kt.channels.index("domclient.latencyAvgRead")
    ok = np.isfinite(raw)
    assert len(raw) == bt.T and ok.sum() > bt.T // 2
    np.testing.assert_allclose(kt.values[r, lat][ok], np.log1p(raw[ok] / 1000), rtol=1e-5)  # ms, log1p
    pct = kt.values[r, kt.channels.index("cpu.pcpuUtilPct")]
    assert 0 <= pct.max() <= 1  # percent -> fraction, not log-scaled
    # the missing samples (None in the dump) are masked, not zero-filled data
    printed = dump_series(long_bundle.files[dump_members(long_bundle.files)[0]])[f"host-domclient:{h.uuid}"][1]
    missing = np.array([v == "None" for v in printed["iopsRead"]])
    assert missing.any() and (~missing).any()
    np.testing.assert_array_equal(kt.mask[0, kt.channels.index("domclient.iopsRead")], ~missing)


def _scsi_lines(text: str, dev: str, sense: str) -> int:
    """vmkernel lines of a failed command to `dev` with sense key `sense` (0x3 medium, 0x5 illegal request)."""
    pat = re.compile(r'to dev "' + re.escape(dev) + r'" failed H:0x0 D:0x2 P:0x0 Valid sense data: ' + sense + " ")
    return sum(1 for line in text.splitlines() if pat.search(line))


def test_fault_evidence_lands_on_the_right_disk(bundle: Bundle, bundle_tgz: Path) -> None:
    bad = fault(bundle, "disk.latency")
    host = bundle.cluster.hosts[bad.host].name
    bt = load_bundle(bundle_tgz)
    kt = bt.kinds["disk"]
    r = kt.ids.index(f"disk:{host}/{bad.disk}")
    for ch in ("ev.scsi_fail_medium", "ev.deteriorated", "esxtop.davg"):
        col = kt.values[:, kt.channels.index(ch)].max(axis=1)
        assert col.argmax() == r and col[r] > 0, ch
    # every medium error of the device, and only its benign feature-probe failures (which every device
    # logs now and then), counted as what they are: the vmkernel lines the simulator wrote, read back
    text = log_text(bundle.files, str(host_top(bundle.files, host)), "vmkernel")
    counts = {
        ch: np.expm1(kt.values[:, kt.channels.index(ch)].astype(float)).sum(axis=1)
        for ch in ("ev.scsi_fail_medium", "ev.scsi_fail_benign")
    }
    medium = _scsi_lines(text, bad.disk, "0x3")
    assert medium > 0 and counts["ev.scsi_fail_medium"][r] == pytest.approx(medium, rel=1e-4)
    benign = counts["ev.scsi_fail_benign"]
    assert benign[r] == pytest.approx(_scsi_lines(text, bad.disk, "0x5"), abs=1e-3) and benign.sum() > benign[r]
    nk = bt.kinds["nic"]
    assert nk.values[:, nk.channels.index("ev.link_down")].sum() > 0
    speeds = nk.static[:, KIND_STATIC["nic"].index("speed_gbps")]
    link = fault(bundle, "net.link_degraded")
    want = {
        (link.param if (h, k) == (link.host, link.nic) else nic.speed_mbps) / 1000
        for h, hh in enumerate(bundle.cluster.hosts)
        for k, nic in enumerate(hh.nics)
    }
    assert sorted(set(speeds.tolist())) == sorted(want) and len(want) > 1


def test_partial_upload_keeps_every_host(bundle: Bundle) -> None:
    files = drop_hosts(upload(bundle.files), np.random.default_rng(3))
    present = len({p.split("/", 1)[0] for p in files if p.startswith("esx-")})
    assert 0 < present < bundle.hosts
    bt = load_bundle(tar_bytes(files))
    assert len(bt.hosts) == bundle.hosts and len(bt.host_bundles) == present
    assert len(bt.kinds["disk"].ids) == sum(len(h.disks) for h in bundle.cluster.hosts)
    assert sum("no host support bundle" in m for m in bt.missing) == bundle.hosts - present


def test_no_perf_data(bundle: Bundle) -> None:
    files = {k: v for k, v in bundle.files.items() if "perf_stats" not in k}
    with pytest.raises(NoPerfData, match="no vSAN performance data found in"):
        load_bundle(tar_bytes(files))


def test_labels_json_is_never_read(bundle: Bundle, bundle_tgz: Path) -> None:
    from pipeline.parse.bundle import classify

    assert classify("labels.json", b'[{"entityRefId": "host-cpu:x"}]') is None
    assert LABELS in bundle.files  # the simulator's ground truth travels in its bundles
    a = load_bundle(bundle_tgz)
    assert a.component_ids == load_bundle(tar_bytes(upload(bundle.files))).component_ids


def _vob_cover(files: dict[str, bytes], bt: BundleTensors) -> tuple[int, int]:
    """Grid steps from the one holding the earliest vobd line of any host to the one holding the latest
    collection time (the host folders' names): where vobd covers the capture."""
    tops = sorted({p.split("/", 1)[0] for p in files if p.startswith("esx-") and "/" in p})
    first = min(first_log_time(files, t, ["vobd"]) for t in tops)
    stamps = []
    for t in tops:
        m = _COLLECTED.search(t)
        assert m is not None, t
        stamps.append(np.datetime64(m.group(1).replace("--", "T").replace(".", ":")).astype("datetime64[s]"))
    last = int(max(stamps).astype(np.int64))
    return int((first - bt.start) // bt.step_s), int((last - bt.start) // bt.step_s)


def test_a_48_hour_capture_is_held_whole(long_bundle: Bundle, long_upload: bytes) -> None:
    bt = load_bundle(long_upload)
    assert bt.step_s == 1200 and bt.T == 180  # 180 steps of 20 min hold the 46-48 hours
    held = -(-long_bundle.samples * long_bundle.interval // bt.step_s)
    assert 135 < held < 145
    valid = bt.kinds["cluster"].mask[0, 0]  # (T,) steps with a cluster-wide IOPS sample
    assert valid[:held].all() and not valid[held:].any()
    vob = bt.kinds["cluster"].channels.index("ev.vob")  # log counts hold where some host's vobd covers
    a, z = _vob_cover(upload(long_bundle.files), bt)
    assert a <= 1 and held <= z < bt.T - 3
    assert bt.kinds["cluster"].mask[0, vob, a:z].all() and not bt.kinds["cluster"].mask[0, vob, z + 1 :].any()
    kt = bt.kinds["disk"]  # the device fails from hour 16 on: its log burst is in
    assert kt.values[:, kt.channels.index("ev.scsi_fail_medium")].sum() > 0


def test_longer_than_the_grid_window_follows_activity(long_bundle: Bundle, long_upload: bytes) -> None:
    bt = load_bundle(long_upload, PipelineConfig(max_step_s=300))
    assert bt.step_s == 300 and bt.T == 180
    # 15 of the 46-48 hours fit: the window goes where the failing device is (from hour 16 on)
    times = long_bundle.plan.grid.times
    onset = int(times[fault(long_bundle, "disk.latency").onset])
    assert onset >= int(times[0]) + 16 * 3600  # a window at the capture's start holds none of it
    assert bt.start > int(times[0]) and bt.start + bt.T * bt.step_s > onset
    kt = bt.kinds["disk"]
    assert kt.values[:, kt.channels.index("ev.scsi_fail_medium")].sum() > 0


def test_every_labelled_fault_lies_inside_the_tensors() -> None:
    """Field test bundles (seed 3) longer than 16 hours with a fault that begins after hour 15: the
    whole capture is on the grid now, where a 15-hour window (steps capped at 300 s) left some out."""
    missed = checked = 0
    for index in range(200):
        b = simulate_bundle("field", 3, index)
        g = b.plan.grid
        if g.n * g.dt <= 16 * 3600 or not any(f.onset * g.dt > 15 * 3600 for f in b.plan.faults):
            continue
        upload = tar_bytes({k: v for k, v in b.files.items() if k != "labels.json"})
        onsets = [int(g.times[f.onset]) for f in b.plan.faults]
        bt = load_bundle(upload)
        end = bt.start + bt.T * bt.step_s
        assert bt.start <= int(g.times[0]) and int(g.times[-1]) < end, index
        assert all(bt.start <= t < end for t in onsets), index
        old = load_bundle(upload, PipelineConfig(max_step_s=300))
        missed += not all(old.start <= t < old.start + old.T * old.step_s for t in onsets)
        checked += 1
        if checked == 4:
            break
    assert checked == 4 and missed >= 1, (checked, missed)  # the old window lost a labelled fault


def test_without_blanks_only_the_named_sources(bundle_tgz: Path) -> None:
    bt = load_bundle(bundle_tgz)
    out = bt.without({"event"})
    for k, kt in bt.kinds.items():
        ev = np.array([c.source == "event" for c in KIND_CHANNEL_DEFS[k]])
        assert not out.kinds[k].mask[:, ev].any() and not out.kinds[k].values[:, ev].any()
        assert np.array_equal(out.kinds[k].mask[:, ~ev], kt.mask[:, ~ev])
        assert np.array_equal(out.kinds[k].values[:, ~ev], kt.values[:, ~ev])
    assert bt.kinds["disk"].mask[:, [c.source == "event" for c in KIND_CHANNEL_DEFS["disk"]]].any()  # untouched


def test_grid_step_coarsens_to_cover_the_capture(bundle: Bundle) -> None:
    assert (bundle.interval, bundle.samples) == (20, 360)  # two hours at 20 s
    upload_ = tar_bytes(upload(bundle.files))
    bt = load_bundle(upload_)
    assert (bt.step_s, bt.T) == (40, 180)
    assert bt.kinds["cluster"].mask[0, 0].all()
    bt = load_bundle(upload_, PipelineConfig(grid_steps=64, max_step_s=60))
    assert (bt.step_s, bt.T) == (60, 64)


def test_cli_parse(bundle: Bundle, bundle_tgz: Path, tmp_path: Path) -> None:
    exe = [sys.executable, "-m", "cli.main", "parse"]
    out = subprocess.run([*exe, str(bundle_tgz), "--json"], capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    assert doc["schema"] == SCHEMA_VERSION and len(doc["hosts"]) == bundle.hosts == 4
    assert doc["components"]["disk"]["shape"][1] == len(KIND_CHANNELS["disk"])
    text = subprocess.run([*exe, str(bundle_tgz)], capture_output=True, text=True, check=True).stdout
    assert "window" in text and "diskgroup" in text
    bad = tmp_path / "bad.tgz"
    bad.write_bytes(b"not an archive at all")
    r = subprocess.run([*exe, str(bad), "--json"], capture_output=True, text=True)
    assert r.returncode == 1 and r.stdout == "" and "bad.tgz" in r.stderr


def test_result_type() -> None:
    assert BundleTensors.__dataclass_fields__["schema_version"]


def test_a_folder_of_several_clusters_is_refused(bundle: Bundle, tmp_path: Path) -> None:
    """Two escalations' bundles dropped in one folder are two clusters, not one of all their hosts."""
    from pipeline import SeveralClusters

    other = simulate_bundle("lab", 2, 0)
    assert other.cluster.uuid != bundle.cluster.uuid
    for i, b in enumerate((bundle, other), 1):
        write_bundle(f"case-{i}", upload(b.files), tmp_path / "uploads", "tgz")
    with pytest.raises(SeveralClusters, match="holds 2 separate clusters"):
        load_bundle(tmp_path / "uploads")
    got = subprocess.run([sys.executable, "-m", "cli.main", "parse", str(tmp_path / "uploads")],
                         capture_output=True, text=True)  # fmt: skip
    assert got.returncode == 1 and "separate clusters" in got.stderr and "uploads" in got.stderr
    assert load_bundle(tmp_path / "uploads" / "case-1.tgz").hosts  # each one alone reads
