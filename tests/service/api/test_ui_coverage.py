"""Data coverage on the diagnosis page (issue 20 item 6): how many hosts sent a support bundle and
esxtop, and which did not; a document made before `coverage` existed shows the host count as before."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from tests.service.api.test_ui import stored_document
from tests.service.kit import diagnosed


def test_coverage_in_the_json_and_on_the_page(client: TestClient, bundles: list[Path]) -> None:
    res = diagnosed(client, bundles[0])
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
    res = diagnosed(client, bundles[0])
    with stored_document(client, res["id"]) as doc:
        del doc["coverage"]
    page = client.get(f"/diagnoses/{res['id']}")
    assert page.status_code == 200 and 'id="coverage"' not in page.text and "<dt>Hosts</dt>" in page.text
