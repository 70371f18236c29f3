"""data/simulate/vscsi.py: vscsiStats captures of the VMs in question, read back as an engineer reads
them (pipeline.parse.vscsistats.disk_oio: threads per disk), in their own random stream."""

from __future__ import annotations

from pathlib import Path

import pytest

from data.simulate import generate
from data.simulate.archive import write_bundle
from data.simulate.generate import simulate_bundle
from pipeline.parse.vscsistats import disk_oio, parse_vscsistats
from tests.conftest import load_checker


def _captured(cause: str, n: int = 40) -> list[float | None]:
    out = []
    for i in range(n):
        b = simulate_bundle("lab", 61, i, faults=["cluster.low_oio"], causes=[cause])
        caps = [(p, parse_vscsistats(v.decode())) for p, v in b.files.items() if "vscsiStats" in p]
        if caps:
            out.append(disk_oio(caps))
    return out


@pytest.mark.parametrize(("cause", "threads"), [("one_thread", 1.0), ("two_threads", 2.0)])
def test_an_under_driven_benchmark_reads_its_threads_per_disk(cause: str, threads: float) -> None:
    got = _captured(cause)
    assert 6 <= len(got) <= 24  # a third of lab bundles carry a capture
    # the odd I/O issued as another one completed (8 %) moves the grouped median a little under N
    assert all(g is not None and threads - 0.1 <= g <= threads for g in got), got


def test_captures_pass_the_spec_checker(tmp_path: Path) -> None:
    paths = []
    for i in range(12):
        b = simulate_bundle("field", 62, i)
        if any("vscsiStats" in p for p in b.files):
            paths.append(write_bundle(b.name, b.files, tmp_path, "tgz"))
    assert paths
    checker = load_checker()
    for path in paths:
        assert checker.check_bundle(str(path)).problems == [], path.name


def test_a_capture_draws_from_its_own_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every other file of a bundle is the same with or without its capture."""
    bundles = (simulate_bundle("lab", 63, i) for i in range(20))
    with_cap = next(b for b in bundles if any("vscsiStats" in p for p in b.files))
    monkeypatch.setattr(generate, "vscsi_files", lambda *a, **k: {})
    without = simulate_bundle("lab", 63, int(with_cap.name.rsplit("-", 1)[1]))
    assert {p: v for p, v in with_cap.files.items() if "vscsiStats" not in p} == without.files
