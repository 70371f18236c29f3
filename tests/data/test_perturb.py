"""The generalisation benchmark's perturbations change only what they name: the bundle still passes
the spec's checker and parses, with the interval, hosts, esxtop, log style or load moved as said."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from data.simulate.archive import tar_bytes
from data.simulate.generate import simulate_bundle
from data.simulate.perturb import apply, coarser_interval, drop_esxtop, rescale_load, restyle_logs
from pipeline.api import load_bundle
from pipeline.tensors import BundleTensors

CHECKER = Path(__file__).resolve().parents[3] / "shared" / "tools" / "check_bundle.py"


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    b = simulate_bundle("lab", 8, 1, faults=["disk.latency"])  # lab: 20 s samples; this one has esxtop
    return dict(b.files)


def _load(files: dict[str, bytes]) -> BundleTensors:
    return load_bundle(io.BytesIO(tar_bytes({k: v for k, v in files.items() if k != "labels.json"})))


def test_coarser_interval_averages_k_samples(files: dict[str, bytes]) -> None:
    before, after = _load(files), _load(coarser_interval(files, 3))
    assert after.native_interval_s == 3 * before.native_interval_s
    kt0, kt1 = before.kinds["disk"], after.kinds["disk"]
    c = kt0.channels.index("iopsRead") if "iopsRead" in kt0.channels else 0
    m0 = np.nanmean(np.where(kt0.mask[:, c], kt0.values[:, c], np.nan))
    m1 = np.nanmean(np.where(kt1.mask[:, c], kt1.values[:, c], np.nan))
    assert m1 == pytest.approx(m0, rel=0.15)  # a mean over blocks keeps the level


def test_drop_esxtop_and_restyle(files: dict[str, bytes]) -> None:
    assert any("esxtop" in p for p in files)
    assert not any(p.rsplit("/", 1)[-1].startswith("esxtop") for p in drop_esxtop(files))
    seven, eight = restyle_logs(files, 7), restyle_logs(files, 8)
    logs = [p for p in files if p.rsplit("/", 1)[-1].startswith("vmkernel") and p.endswith(".log")]
    assert logs
    assert all(b" In(182) vmkernel: " in eight[p] or not eight[p] for p in logs)
    assert not any(b"In(182)" in seven[p] for p in logs)
    assert restyle_logs(seven, 8) == eight  # the two styles carry the same lines
    ev = [c for c in _load(files).kinds["disk"].channels if c.startswith("ev.")]
    a, b = _load(seven).kinds["disk"], _load(eight).kinds["disk"]
    for c in ev:
        i = a.channels.index(c)
        assert np.array_equal(a.values[:, i], b.values[:, i]), c  # the parser reads both styles alike


def test_rescale_load_moves_only_load(files: dict[str, bytes]) -> None:
    before, after = _load(files), _load(rescale_load(files, 2.0))
    kt0, kt1 = before.kinds["cluster"], after.kinds["cluster"]

    def seen(kt: object, name: str) -> np.ndarray:
        i = kt.channels.index(name)  # type: ignore[attr-defined]
        return kt.values[:, i][kt.mask[:, i]]  # type: ignore[attr-defined]

    for name in ("domclient.iopsRead", "domclient.throughputWrite"):  # log1p-scaled channels
        assert np.allclose(np.expm1(seen(kt1, name)), 2 * np.expm1(seen(kt0, name)), rtol=0.02, atol=2), name
    for name in ("domclient.latencyAvgRead", "domclient.latencyAvgWrite", "domclient.congestion"):
        assert np.array_equal(seen(kt0, name), seen(kt1, name)), name


def test_every_perturbation_passes_the_checker(files: dict[str, bytes], tmp_path: Path) -> None:
    if not CHECKER.exists():
        pytest.skip(f"{CHECKER} is absent (../shared is not checked out)")
    paths = []
    for spec in ("interval:3", "hosts", "esxtop", "logs:7", "logs:8", "load:0.5"):
        out = apply(spec, files, np.random.default_rng(1))
        p = tmp_path / f"{spec.replace(':', '-')}.tgz"
        p.write_bytes(tar_bytes(out))
        paths.append(str(p))
    r = subprocess.run([sys.executable, str(CHECKER), *paths], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]


def test_unknown_perturbation_is_refused(files: dict[str, bytes]) -> None:
    assert apply("", files, np.random.default_rng(0)) is files
    with pytest.raises(ValueError, match="unknown perturbation 'bogus'"):
        apply("bogus", files, np.random.default_rng(0))
