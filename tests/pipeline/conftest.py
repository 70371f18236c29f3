"""Shared fixtures: spec-conformant bundles built in test code, validated by shared/tools/check_bundle.py."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from tests.pipeline.pipeline_fixtures import build_bundle, write_dir, write_tgz, write_vcenter_zip

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SHARED = REPO.parent / "shared"
REAL = SHARED / "samples" / "real"


def load_checker() -> ModuleType | None:
    path = SHARED / "tools" / "check_bundle.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location("check_bundle", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def checker() -> ModuleType:
    mod = load_checker()
    if mod is None:
        pytest.skip("../shared/tools/check_bundle.py not found")
    return mod


@pytest.fixture(scope="session")
def bundle() -> tuple[dict[str, bytes], dict]:
    return build_bundle(n_hosts=3, hours=1.0, interval=20, seed=1)


@pytest.fixture(scope="session")
def bundle_tgz(tmp_path_factory: pytest.TempPathFactory, bundle: tuple[dict[str, bytes], dict]) -> Path:
    return write_tgz(bundle[0], tmp_path_factory.mktemp("b") / "bundle.tgz")


@pytest.fixture(scope="session")
def bundle_zip(tmp_path_factory: pytest.TempPathFactory, bundle: tuple[dict[str, bytes], dict]) -> Path:
    return write_vcenter_zip(bundle[0], tmp_path_factory.mktemp("b") / "bundle.zip")


@pytest.fixture(scope="session")
def bundle_dir(tmp_path_factory: pytest.TempPathFactory, bundle: tuple[dict[str, bytes], dict]) -> Path:
    return write_dir(bundle[0], tmp_path_factory.mktemp("b") / "bundle")


@pytest.fixture(scope="session")
def real() -> Path:
    if not REAL.is_dir():
        pytest.skip(f"real samples not found at {REAL} (shared/samples/real is outside the repo)")
    return REAL
