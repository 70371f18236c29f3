"""A TestClient of the whole application on embedded defaults, serving the small test model (modules that
need other settings define their own `client`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from tests.service.kit import service_settings


@pytest.fixture
def client(tmp_path: Path, model_dir: Path) -> Iterator[TestClient]:
    with TestClient(create_app(service_settings(tmp_path / "var", model_dir))) as c:
        yield c
