"""Fixtures of the service backend's tests (helpers in kit.py): a small trained model and bundles it
finds a fault in, built once per test run and shared by every module and xdist worker that asks; a
real `vsandx serve` without workers or model for the attacks on its HTTP edge; a database on SQLite
and on the real local PostgreSQL (each test using it runs on both)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.db import Database
from tests.service.kit import pg_schema, serving, shared_dir, simulate_bundles, train_small_model


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_dir(tmp_path_factory, "model", train_small_model) / "model"


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> list[Path]:
    return sorted(
        shared_dir(tmp_path_factory, "bundles", lambda out: simulate_bundles(out, model_dir)).glob("lab-*.tgz")
    )


@pytest.fixture(scope="module")
def edge_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A real `vsandx serve` without workers or model, for the attacks on its HTTP edge: (URL, process)."""
    root = tmp_path_factory.mktemp("edge-serve")
    env = {"VSANDX_DATA_DIR": str(root / "var"), "VSANDX_WORKER_PROCESSES": "0", "VSANDX_EMBEDDED_WORKERS": "0"}
    with serving(env, log=root / "serve.log") as (url, p):
        yield url, p


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        db = Database(f"sqlite:///{tmp_path / 'vsandx.db'}")
        yield db
        db.dispose()
        return
    with pg_schema() as url:
        db = Database(url)
        yield db
        db.dispose()
