"""Charts stored with a diagnosis: drawn once (SVG per panel, a PNG per chart) under the diagnosis's key,
read back in the findings' order, written all at once, never failing the diagnosis they belong to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from diagnosis.charts import Chart
from diagnosis.predictor import Predictor
from pipeline.config import PipelineConfig
from pipeline.tensors import BundleTensors
from service.app import create_app
from service.queue.webhook_jobs import WebhookWorker
from service.store import chart_store
from service.trackers import flow
from tests.conftest import pipeline_env
from tests.service.kit import hostile_chart, service_settings
from vsandx.settings import ServiceSettings

DOC: dict[str, Any] = {"bundle": {"sha256": "ab" * 32}, "model": {"name": "logreg", "version": "3"},
                       "findings": [{"component": "disk:x", "fault": "disk.latency"}]}  # fmt: skip


@pytest.fixture
def settings(tmp_path: Path) -> ServiceSettings:
    return service_settings(tmp_path / "var", None)


def test_keys() -> None:
    key = chart_store.key_of(DOC)
    assert key == chart_store.chart_key("ab" * 32, "logreg", "3") and key != chart_store.chart_key("ab" * 32, "x", "3")
    assert chart_store.key_of({"bundle": {}, "model": {"name": "m"}}) is None and chart_store.key_of({}) is None


def test_draw_store_and_read_back(settings: ServiceSettings, monkeypatch: pytest.MonkeyPatch) -> None:
    hostile = hostile_chart()
    many = [hostile] * (chart_store.MAX_CHARTS + 3)
    monkeypatch.setattr(chart_store, "charts_for", lambda bt, doc: many)
    assert chart_store.draw(settings, DOC, object()) == chart_store.MAX_CHARTS  # type: ignore[arg-type]
    key = chart_store.key_of(DOC)
    assert key is not None
    stored = chart_store.load(settings, key)
    assert stored is not None and len(stored) == chart_store.MAX_CHARTS
    first = stored[0]
    assert (first.component, first.fault) == (hostile.component, hostile.fault)
    assert (
        len(first.svgs) == len(hostile.panels) and 'id="c0-0-t"' in first.svgs[0] and 'id="c1-0-t"' in stored[1].svgs[0]
    )
    assert "<script" not in "".join(first.svgs) and first.onset.startswith("Onset: started about ")
    png = chart_store.png(settings, key, 0)
    assert png is not None and png[:4] == b"\x89PNG"
    assert chart_store.png(settings, key, chart_store.MAX_CHARTS) is None and chart_store.png(settings, key, -1) is None
    assert [p.name for p in chart_store.folder_of(settings, key).parent.iterdir()] == [key]  # no temporary left


def test_a_second_drawing_keeps_the_first(settings: ServiceSettings, monkeypatch: pytest.MonkeyPatch) -> None:
    one, two = hostile_chart(), hostile_chart()
    two.component = "disk:second"
    monkeypatch.setattr(chart_store, "charts_for", lambda bt, doc: [one])
    chart_store.draw(settings, DOC, object())  # type: ignore[arg-type]
    monkeypatch.setattr(chart_store, "charts_for", lambda bt, doc: [two])
    chart_store.draw(settings, DOC, object())  # type: ignore[arg-type]
    key = chart_store.key_of(DOC)
    assert key is not None
    stored = chart_store.load(settings, key)
    assert stored is not None and [c.component for c in stored] == [one.component]


def test_drawing_never_fails_the_diagnosis(settings: ServiceSettings, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(bt: object, doc: object) -> list[Chart]:
        raise ValueError("an odd bundle")

    monkeypatch.setattr(chart_store, "charts_for", broken)
    assert chart_store.draw(settings, DOC, object()) == 0  # type: ignore[arg-type]
    key = chart_store.key_of(DOC)
    assert key is not None and chart_store.load(settings, key) is None
    assert chart_store.draw(settings, {"findings": []}, object()) == 0  # type: ignore[arg-type]  # no key
    chart_store.folder_of(settings, key).mkdir(parents=True)
    (chart_store.folder_of(settings, key) / chart_store.MANIFEST).write_text("{not json")
    assert chart_store.load(settings, key) is None


def test_a_pipeline_setting_reaches_the_verdict_and_the_charts_alike(
    tmp_path: Path, model_dir: Path, bundles: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """VSANDX_PIPELINE_GRID_STEPS, resolved once by the service, is the grid of the parse the verdict is
    computed on, of the charts stored with it (that very parse, not a second one) and of a tracker
    report's chart drawn from the bundle's bytes."""
    steps = 64
    assert PipelineConfig().grid_steps != steps
    seen: dict[str, BundleTensors] = {}
    document, charts_for = Predictor.document, chart_store.charts_for

    def verdict(self: Predictor, bt: BundleTensors, sha256: str) -> dict[str, Any]:
        seen["verdict"] = bt
        return document(self, bt, sha256)

    def charts(bt: BundleTensors, doc: dict[str, Any]) -> list[Chart]:
        seen["charts"] = bt
        return charts_for(bt, doc)

    def tracker_chart(bt: BundleTensors, doc: object) -> list[Any]:
        seen["tracker"] = bt
        return []

    monkeypatch.setattr(Predictor, "document", verdict)
    monkeypatch.setattr(chart_store, "charts_for", charts)
    monkeypatch.setattr(flow, "report_charts", tracker_chart)
    with pipeline_env(monkeypatch, grid_steps=steps):
        settings = service_settings(tmp_path / "var", model_dir)
        with TestClient(create_app(settings)) as c:
            data = bundles[0].read_bytes()
            r = c.post("/api/v1/diagnoses?wait=true", files={"bundle": ("a.tgz", data)})
            assert r.status_code == 201, r.text
            doc = r.json()["diagnosis"]
            state: Any = c.app.state  # type: ignore[attr-defined]
            # a report for a diagnosis stored without charts: its charts are drawn from the stored bundle
            worker = WebhookWorker(state.database, settings, state.holder)
            worker.report_charts(bundles[0], {"findings": doc["findings"]})
    assert seen["verdict"] is seen["charts"] and steps == seen["verdict"].T
    assert steps == seen["tracker"].T
    key = chart_store.key_of(doc)
    assert key is not None and chart_store.load(settings, key)
