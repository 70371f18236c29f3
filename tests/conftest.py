"""Shared test helpers: where the shared/ folder (spec, samples, bundle checker) lives; and the fixtures
the diagnosis and service tests share (helpers in tests/service/kit.py): a small trained model and
bundles it finds a fault in, built once per test run and shared by every module and xdist worker that
asks."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SAMPLES = SHARED / "samples" / "real"
CHECKER = SHARED / "tools" / "check_bundle.py"


def load_checker() -> ModuleType:
    """shared/tools/check_bundle.py as a module; skips the test when shared/ is absent."""
    if not CHECKER.exists():
        pytest.skip(f"bundle checker not found at {CHECKER}")
    spec = importlib.util.spec_from_file_location("check_bundle", CHECKER)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def require(what: str, available: bool, how: str = "") -> None:
    """Skip a test whose local service (Redis, PostgreSQL, Chromium…) is missing, with the reason;
    under CI (`.ci/run` sets VSANDX_REQUIRE_SERVICES=1) the same absence is a failure."""
    import os

    if available:
        return
    msg = f"{what} is not available{': ' + how if how else ''}"
    if os.environ.get("VSANDX_REQUIRE_SERVICES") == "1":
        pytest.fail(f"{msg} (required under CI)")
    pytest.skip(msg)


@contextmanager
def pipeline_env(monkeypatch: pytest.MonkeyPatch, **values: object) -> Iterator[None]:
    """VSANDX_PIPELINE_<NAME> set for each value (grid_steps=64, ...), the cached pipeline settings read
    afresh inside the block and forgotten after it, so no other test sees them."""
    from vsandx.settings import get_pipeline_settings

    for name, value in values.items():
        monkeypatch.setenv(f"VSANDX_PIPELINE_{name.upper()}", str(value))
    get_pipeline_settings.cache_clear()
    try:
        yield
    finally:
        get_pipeline_settings.cache_clear()


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.service.kit import shared_dir, train_small_model

    return shared_dir(tmp_path_factory, "model", train_small_model) / "model"


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> list[Path]:
    from tests.service.kit import shared_dir, simulate_bundles

    return sorted(
        shared_dir(tmp_path_factory, "bundles", lambda out: simulate_bundles(out, model_dir)).glob("lab-*.tgz")
    )
