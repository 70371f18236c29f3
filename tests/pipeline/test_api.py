"""load_bundle end to end: formats agree, topology matches the reference validator, tensor semantics."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

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
from tests.pipeline.pipeline_fixtures import build_bundle, tgz_bytes, write_dir, write_tgz
from vsandx.faults import COMPONENT_KINDS


def test_fixtures_are_spec_conformant(
    checker: ModuleType, bundle_tgz: Path, bundle_zip: Path, bundle_dir: Path, tmp_path: Path
) -> None:
    files, _ = build_bundle(n_hosts=2, json_perf=True, seed=5)
    for p in (bundle_tgz, bundle_zip, bundle_dir, write_tgz(files, tmp_path / "j.tgz")):
        ck = checker.check_bundle(str(p))
        assert ck.problems == [], p


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
    cm = ents = None
    ents = {}
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


def test_result_shape_and_schema(bundle_tgz: Path, bundle: tuple[dict[str, bytes], dict]) -> None:
    bt = load_bundle(bundle_tgz)
    assert bt.schema_version == SCHEMA_VERSION
    assert set(bt.kinds) == set(COMPONENT_KINDS)
    truth = bundle[1]
    assert bt.hosts == tuple(sorted(h.name for h in truth["hosts"]))
    assert len(bt.kinds["disk"].ids) == sum(len(h.disks) for h in truth["hosts"])
    for k, kt in bt.kinds.items():
        n = len(kt.ids)
        assert kt.values.shape == (n, len(KIND_CHANNELS[k]), bt.T) and kt.values.dtype == np.float32
        assert kt.mask.shape == kt.values.shape and kt.mask.dtype == bool
        assert kt.static.shape == (n, len(KIND_STATIC[k]))
        assert np.all(kt.values[~kt.mask] == 0) and np.isfinite(kt.values).all()
    assert PipelineConfig().grid_steps == bt.T and bt.step_s == 20 and bt.native_interval_s == 20
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


def test_units_and_log_scaling(bundle: tuple[dict[str, bytes], dict], bundle_tgz: Path) -> None:
    parsed = parse_bundle(bundle_tgz)
    bt = load_bundle(bundle_tgz)
    truth = bundle[1]
    h = truth["hosts"][0]
    raw = parsed.records.perf[f"host-domclient:{h.uuid}"].metrics["latencyAvgRead"]  # µs
    kt = bt.kinds["host"]
    r = kt.ids.index(f"host:{h.name}")
    got = kt.values[r, kt.channels.index("domclient.latencyAvgRead")]
    np.testing.assert_allclose(got[: len(raw)], np.log1p(raw / 1000), rtol=1e-5)  # ms, log1p
    pct = kt.values[r, kt.channels.index("cpu.pcpuUtilPct")]
    assert 0 <= pct.max() <= 1  # percent -> fraction, not log-scaled
    # the missing sample (None in the dump) is masked, not zero-filled data
    assert not kt.mask[0, kt.channels.index("domclient.iopsRead"), 3]


def test_fault_evidence_lands_on_the_right_disk(bundle: tuple[dict[str, bytes], dict], bundle_tgz: Path) -> None:
    bad = bundle[1]["bad"]
    host = bundle[1]["hosts"][0].name
    bt = load_bundle(bundle_tgz)
    kt = bt.kinds["disk"]
    r = kt.ids.index(f"disk:{host}/{bad.dev}")
    for ch in ("ev.scsi_fail_medium", "ev.deteriorated", "esxtop.davg"):
        col = kt.values[:, kt.channels.index(ch)].max(axis=1)
        assert col.argmax() == r and col[r] > 0, ch
    benign = kt.values[:, kt.channels.index("ev.scsi_fail_benign")].sum(axis=1)
    assert benign[r] == 0 and benign.sum() > 0
    nk = bt.kinds["nic"]
    assert nk.values[:, nk.channels.index("ev.link_down")].sum() > 0
    slow = nk.static[:, KIND_STATIC["nic"].index("speed_gbps")]
    assert sorted(set(slow.tolist())) == [1.0, 10.0]


def test_partial_upload_keeps_every_host(tmp_path: Path) -> None:
    files, truth = build_bundle(n_hosts=4, host_bundles=1, seed=3)
    bt = load_bundle(write_tgz(files, tmp_path / "p.tgz"))
    assert len(bt.hosts) == 4 and len(bt.host_bundles) == 1
    assert len(bt.kinds["disk"].ids) == sum(len(h.disks) for h in truth["hosts"])
    assert sum("no host support bundle" in m for m in bt.missing) == 3


def test_no_perf_data(tmp_path: Path) -> None:
    files = {k: v for k, v in build_bundle()[0].items() if "perf_stats" not in k}
    with pytest.raises(NoPerfData, match="no vSAN performance data found in"):
        load_bundle(tgz_bytes(files))


def test_labels_json_is_never_read(tmp_path: Path, bundle: tuple[dict[str, bytes], dict]) -> None:
    from pipeline.parse.bundle import classify

    assert classify("labels.json", b'[{"entityRefId": "host-cpu:x"}]') is None
    a = load_bundle(write_tgz(bundle[0], tmp_path / "a.tgz", labels={"schema": "vsandx.labels/1"}))
    assert a.component_ids == load_bundle(tgz_bytes(bundle[0])).component_ids


def test_a_48_hour_capture_is_held_whole(tmp_path: Path) -> None:
    files, _ = build_bundle(n_hosts=2, hours=48, interval=300, seed=4, esxtop_rows=0)
    bt = load_bundle(write_tgz(files, tmp_path / "l.tgz"))
    assert bt.step_s == 1200 and bt.T == 180  # 144 steps of 20 min hold the 48 hours
    valid = bt.kinds["cluster"].mask[0, 0]  # (T,) steps with a cluster-wide IOPS sample
    assert valid[:144].all() and not valid[144:].any()
    vob = bt.kinds["cluster"].channels.index("ev.vob")  # log counts hold where some host's vobd covers
    assert bt.kinds["cluster"].mask[0, vob, :144].all() and not bt.kinds["cluster"].mask[0, vob, 150:].any()
    kt = bt.kinds["disk"]  # the fixture's bad disk degrades from hour 24 on: its log burst is in
    assert kt.values[:, kt.channels.index("ev.scsi_fail_medium")].sum() > 0


def test_longer_than_the_grid_window_follows_activity(tmp_path: Path) -> None:
    files, _ = build_bundle(n_hosts=2, hours=48, interval=300, seed=4, esxtop_rows=0)
    bt = load_bundle(write_tgz(files, tmp_path / "l.tgz"), PipelineConfig(max_step_s=300))
    assert bt.step_s == 300 and bt.T == 180
    # 15 of the 48 hours fit: the window goes where the bad disk's log burst is (from hour 24 on)
    capture_start = int(datetime(2026, 3, 2, 10, tzinfo=UTC).timestamp())
    assert bt.start >= capture_start + 9 * 3600
    kt = bt.kinds["disk"]
    assert kt.values[:, kt.channels.index("ev.scsi_fail_medium")].sum() > 0


def test_every_labelled_fault_lies_inside_the_tensors() -> None:
    """Field test bundles (seed 3) longer than 16 hours with a fault that begins after hour 15: the
    whole capture is on the grid now, where a 15-hour window (steps capped at 300 s) left some out."""
    from data.simulate.generate import simulate_bundle

    missed = checked = 0
    for index in range(200):
        b = simulate_bundle("field", 3, index)
        g = b.plan.grid
        if g.n * g.dt <= 16 * 3600 or not any(f.onset * g.dt > 15 * 3600 for f in b.plan.faults):
            continue
        upload = tgz_bytes({k: v for k, v in b.files.items() if k != "labels.json"})
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


def test_grid_step_coarsens_to_cover_the_capture(tmp_path: Path) -> None:
    files, _ = build_bundle(n_hosts=2, hours=2, interval=20, seed=6, esxtop_rows=0)
    bt = load_bundle(tgz_bytes(files))
    assert (bt.step_s, bt.T) == (40, 180)
    assert bt.kinds["cluster"].mask[0, 0].all()
    bt = load_bundle(tgz_bytes(files), PipelineConfig(grid_steps=64, max_step_s=60))
    assert (bt.step_s, bt.T) == (60, 64)


def test_cli_parse(bundle_tgz: Path, tmp_path: Path) -> None:
    exe = [sys.executable, "-m", "cli.main", "parse"]
    out = subprocess.run([*exe, str(bundle_tgz), "--json"], capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    assert doc["schema"] == SCHEMA_VERSION and len(doc["hosts"]) == 3
    assert doc["components"]["disk"]["shape"][1] == len(KIND_CHANNELS["disk"])
    text = subprocess.run([*exe, str(bundle_tgz)], capture_output=True, text=True, check=True).stdout
    assert "window" in text and "diskgroup" in text
    bad = tmp_path / "bad.tgz"
    bad.write_bytes(b"not an archive at all")
    r = subprocess.run([*exe, str(bad), "--json"], capture_output=True, text=True)
    assert r.returncode == 1 and r.stdout == "" and "bad.tgz" in r.stderr


def test_result_type() -> None:
    assert BundleTensors.__dataclass_fields__["schema_version"]
    assert write_dir  # re-exported for other tests


def test_a_folder_of_several_clusters_is_refused(tmp_path: Path) -> None:
    """Two escalations' bundles dropped in one folder are two clusters, not one of all their hosts."""
    from pipeline import SeveralClusters

    (tmp_path / "uploads").mkdir()
    for seed in (1, 2):
        files, _ = build_bundle(n_hosts=2, seed=seed)
        write_tgz(files, tmp_path / "uploads" / f"case-{seed}.tgz")
    with pytest.raises(SeveralClusters, match="holds 2 separate clusters"):
        load_bundle(tmp_path / "uploads")
    got = subprocess.run([sys.executable, "-m", "cli.main", "parse", str(tmp_path / "uploads")],
                         capture_output=True, text=True)  # fmt: skip
    assert got.returncode == 1 and "separate clusters" in got.stderr and "uploads" in got.stderr
    assert load_bundle(tmp_path / "uploads" / "case-1.tgz").hosts  # each one alone reads
