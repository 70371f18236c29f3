"""Shared test helpers: where the shared/ folder (spec, samples, bundle checker) lives."""

from __future__ import annotations

import importlib.util
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
