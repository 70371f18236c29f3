"""What a finding cites on the diagnosis page (issue 20 items 4 and 6): its onset in words, the worst
sample of each metric, the log lines (file inside the bundle, line number, the line); and a healthy
diagnosis shows the cluster's overview chart so that "healthy" can be confirmed."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from pipeline.api import load_bundle
from service.store import chart_store
from tests.service.api.test_ui import stored_document
from tests.service.kit import diagnosed

CITED: list[dict[str, Any]] = [
    {"file": "esx-h1-2026-03-02--10.00/var/run/log/vmkernel.1.gz", "line": 74, "event": "deteriorated",
     "text": "2026-03-02T10:40:00.000Z cpu1:2)WARNING: Device naa.1 performance has deteriorated <b>"},
    {"file": "esx-h1-2026-03-02--10.00/var/run/log/vobd.log", "line": 3, "event": "vob", "text": "[vob.scsi] x"},
]  # fmt: skip
SERIES = [{"entity": "disk:h1/naa.1", "metric": "disk.latencyDevDAvg", "time": "2026-03-02T10:42:20Z",
           "value": 699.5, "unit": "ms"}]  # fmt: skip


def test_the_page_shows_what_each_finding_cites(client: TestClient, bundles: list[Path]) -> None:
    res = diagnosed(client, bundles[0])
    for f in res["diagnosis"]["findings"]:  # the API's document carries the fields
        assert {"cited_lines", "series", "onset"} <= set(f) and isinstance(f["cited_lines"], list)
    with stored_document(client, res["id"]) as doc:
        first = doc["findings"][0]
        doc["findings"] = [{**first, "cited_lines": CITED, "series": SERIES,
                            "onset": {"time": "2026-03-02T10:40:00Z", "at_start": False,
                                      "words": "started about 10:40 UTC on 2 Mar, 40 min into the capture."}},
                           *doc["findings"][1:]]  # fmt: skip
    page = client.get(f"/diagnoses/{res['id']}").text
    (sec, *_) = re.findall(r'<section class="finding card".*?</section>', page, re.S)
    assert "Onset: started about 10:40 UTC on 2 Mar, 40 min into the capture." in sec
    for c in CITED:
        assert html.escape(c["file"]) in sec and f"line {c['line']}" in sec and html.escape(c["text"]) in sec
    assert "<b>" not in sec.split("Log lines", 1)[1].split("</ul>", 1)[0].replace("<br>", "")
    assert "disk.latencyDevDAvg" in sec and "699.5 ms at 2026-03-02 10:42:20 UTC" in sec


def test_a_healthy_diagnosis_shows_the_clusters_overview(client: TestClient, bundles: list[Path]) -> None:
    res = diagnosed(client, bundles[0])
    settings = client.app.state.settings  # type: ignore[attr-defined]
    with stored_document(client, res["id"]) as doc:
        doc["findings"] = []
        doc["components"] = [{**c, "verdict": "none"} for c in doc["components"]]
        doc["bundle"] = {**doc["bundle"], "sha256": "f" * 64}  # a diagnosis of its own: its own charts
        assert chart_store.draw(settings, doc, load_bundle(bundles[0])) == 1
    page = client.get(f"/diagnoses/{res['id']}").text
    assert "Healthy: no component at fault" in page and "No charts were stored" not in page
    (sec,) = re.findall(r'<section class="overview card" id="overview">.*?</section>', page, re.S)
    svgs = re.findall(r'<svg class="chart".*?</svg>', sec, re.S)
    assert len(svgs) >= 4 and any('data-channel="domclient.latencyAvgRead"' in s for s in svgs)
    assert any('data-channel="domclient.throughputWrite"' in s for s in svgs)
    png = re.search(r'href="(/diagnoses/[^"]+/charts/0\.png)"', sec)
    assert png is not None and client.get(png.group(1)).content[:4] == b"\x89PNG"
    with stored_document(client, res["id"]) as doc:
        doc["bundle"] = {**doc["bundle"], "sha256": "e" * 64}  # healthy, no overview stored (older): no note
    page = client.get(f"/diagnoses/{res['id']}").text
    assert 'id="overview"' not in page and "No charts were stored" not in page


UNUSUAL = {"flag": True, "score": 60.0, "threshold": 2.0, "reasons": [
    {"kind": "nic", "component": "nic:h1/vmnic1", "components": 8, "channels": ["speed_gbps"], "score": 60.0,
     "why": "speed_gbps 100 above the training range 1-25"}]}  # fmt: skip
DRIVERS = {"method": "integrated gradients (32 steps)", "members": 1, "gain": 3.0,
           "sources": [{"source": "disk.latencyDevDAvg", "share": 0.7}],
           "span": {"start": "2026-03-02T10:40:00Z", "end": "2026-03-02T11:00:00Z"}}  # fmt: skip


def test_the_page_flags_an_unusual_bundle_and_shows_what_drove_a_finding(
    client: TestClient, bundles: list[Path]
) -> None:
    res = diagnosed(client, bundles[0])
    assert "unusual" in res["diagnosis"] and all("drivers" in f for f in res["diagnosis"]["findings"])
    page = client.get(f"/diagnoses/{res['id']}").text
    assert 'id="unusual"' not in page and "What drove the verdict" not in page  # logreg: neither
    with stored_document(client, res["id"]) as doc:
        doc["unusual"] = UNUSUAL
        doc["findings"] = [{**doc["findings"][0], "drivers": DRIVERS}, *doc["findings"][1:]]
    page = client.get(f"/diagnoses/{res['id']}").text
    assert 'id="unusual"' in page and "speed_gbps 100 above the training range 1-25" in page
    assert page.index('id="unusual"') < page.index('id="verdict"')  # before the verdicts it casts doubt on
    (sec, *_) = re.findall(r'<section class="finding card".*?</section>', page, re.S)
    assert "What drove the verdict" in sec and "disk.latencyDevDAvg" in sec and "70 %" in sec
