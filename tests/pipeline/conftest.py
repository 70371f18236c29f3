"""Shared fixtures: simulator bundles (data/simulate/) written in each upload format, validated by
shared/tools/check_bundle.py."""

from __future__ import annotations

import datetime as dt
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from data.simulate.archive import write_bundle
from data.simulate.generate import Bundle
from tests.pipeline.simbundles import fault, pick

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SHARED = REPO.parent / "shared"
REAL = SHARED / "samples" / "real"

# The shared bundle: a lab cluster (4 hosts, 2 hours at 20 s) with a failing capacity or cache device
# and an uplink renegotiated to 1 Gb/s, each logged the way its cause logs it.
FAULTS = ("disk.latency", "net.link_degraded")
CAUSES = ("disk.latency:medium_error", "net.link_degraded:speed_1g")


def load_checker() -> ModuleType | None:
    path = SHARED / "tools" / "check_bundle.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location("check_bundle", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def esxtop_last_row(data: bytes) -> float:
    """Epoch seconds of an esxtop capture's last row (`"MM/DD/YYYY HH:MM:SS",...`)."""
    last = data.rstrip().rsplit(b"\n", 1)[-1].split(b",", 1)[0].strip(b'"').decode()
    return dt.datetime.strptime(last, "%m/%d/%Y %H:%M:%S").replace(tzinfo=dt.UTC).timestamp()


def session_shape(b: Bundle) -> bool:
    """All-flash with deduplication (the storage list's flags are set), both faults beginning inside the
    window (so the uplink's renegotiation and the device's latency jump are logged), and an esxtop
    capture on every host that runs past the device fault's onset."""
    disk, link = fault(b, "disk.latency"), fault(b, "net.link_degraded")
    onset = float(b.plan.grid.times[disk.onset])
    caps = [d for p, d in b.files.items() if p.endswith(".csv")]
    return (
        b.cluster.dedup
        and disk.onset > 0
        and link.onset > 0
        and len(caps) == b.hosts
        and all(esxtop_last_row(d) > onset for d in caps)
    )


@pytest.fixture(scope="session")
def checker() -> ModuleType:
    mod = load_checker()
    if mod is None:
        pytest.skip("../shared/tools/check_bundle.py not found")
    return mod


@pytest.fixture(scope="session")
def bundle() -> Bundle:
    return pick("lab", 1, session_shape, start=6, faults=FAULTS, causes=CAUSES)


@pytest.fixture(scope="session")
def bundle_tgz(tmp_path_factory: pytest.TempPathFactory, bundle: Bundle) -> Path:
    return write_bundle(bundle.name, bundle.files, tmp_path_factory.mktemp("b"), "tgz")


@pytest.fixture(scope="session")
def bundle_zip(tmp_path_factory: pytest.TempPathFactory, bundle: Bundle) -> Path:
    return write_bundle(bundle.name, bundle.files, tmp_path_factory.mktemp("b"), "zip")


@pytest.fixture(scope="session")
def bundle_dir(tmp_path_factory: pytest.TempPathFactory, bundle: Bundle) -> Path:
    return write_bundle(bundle.name, bundle.files, tmp_path_factory.mktemp("b"), "dir")


@pytest.fixture(scope="session")
def real() -> Path:
    if not REAL.is_dir():
        pytest.skip(f"real samples not found at {REAL} (shared/samples/real is outside the repo)")
    return REAL
