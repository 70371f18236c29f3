"""Fixtures of the service backend's tests, in every sub-folder (helpers in kit.py; the small trained
model and its bundles, `model_dir` and `bundles`, are tests/conftest.py's): a real `vsandx serve`
without workers or model for the attacks on its HTTP edge; a database on SQLite and on the real local
PostgreSQL (each test using it runs on both)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.store.db import Database
from tests.service.kit import pg_schema, serving


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
