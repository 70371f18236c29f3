"""Data coverage on the diagnosis page (issue 20 item 6): how many hosts sent a support bundle and
esxtop, and which did not; a document made before `coverage` existed shows the host count as before."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from tests.service.api.test_ui import stored_document
from tests.service.kit import service_settings


@pytest.fixture
def client(tmp_path: Path, model_dir: Path) -> Iterator[TestClient]:
    with TestClient(create_app(service_settings(tmp_path / "var", model_dir))) as c:
        yield c


def _done(c: TestClient, bundle: Path) -> dict[str, Any]:
    r = c.post("/api/v1/diagnoses?wait=true", files={"bundle": (bundle.name, bundle.read_bytes())})
    assert r.status_code == 201, r.text
    got: dict[str, Any] = r.json()
    return got


def test_coverage_in_the_json_and_on_the_page(client: TestClient, bundles: list[Path]) -> None:
    res = _done(client, bundles[0])
    cov = res["diagnosis"]["coverage"]
    assert cov["hosts"] == len(res["diagnosis"]["bundle"]["hosts"]) > 0
    page = client.get(f"/diagnoses/{res['id']}").text
    assert f"{cov['hosts']}: {cov['with_bundle']} with a support" in page and 'id="coverage"' in page
    with stored_document(client, res["id"]) as doc:
        doc["coverage"] = {**cov, "with_bundle": cov["hosts"] - 1, "without_bundle": ["<b>esx9</b>"],
                           "with_esxtop": 0, "without_esxtop": ["esx1", "esx2"]}  # fmt: skip
    page = client.get(f"/diagnoses/{res['id']}").text
    assert 'id="coverage-gaps"' in page and "&lt;b&gt;esx9&lt;/b&gt;" in page and "<b>esx9" not in page
    assert "without esxtop: <span" in page and "esx1, esx2" in page


def test_a_document_without_coverage_still_shows_its_hosts(client: TestClient, bundles: list[Path]) -> None:
    res = _done(client, bundles[0])
    with stored_document(client, res["id"]) as doc:
        del doc["coverage"]
    page = client.get(f"/diagnoses/{res['id']}")
    assert page.status_code == 200 and 'id="coverage"' not in page.text and "<dt>Hosts</dt>" in page.text
