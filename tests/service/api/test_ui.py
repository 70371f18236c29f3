"""The server-rendered pages against the real application (embedded defaults, a small model): upload
form, list with filters and paging, detail with verdicts, findings and charts, pending and failed
states, the model page with its training report, and escaping of what uploads carry."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.api import pages
from service.app import create_app
from service.store import chart_store, job_store
from service.store.tables import Diagnosis, Job
from tests.attacks.bounds import bounded
from tests.service.kit import service_settings
from training.report import CurvePoint, ModelScore, Results, write_report
from vsandx.faults import FAULT_IDS, FAULTS


@pytest.fixture
def client(tmp_path: Path, model_dir: Path) -> Iterator[TestClient]:
    with TestClient(create_app(service_settings(tmp_path / "var", model_dir))) as c:
        yield c


def _upload(c: TestClient, path: Path, name: str | None = None, wait: bool = True) -> dict[str, Any]:
    r = c.post(
        f"/api/v1/diagnoses{'?wait=true' if wait else ''}", files={"bundle": (name or path.name, path.read_bytes())}
    )
    assert r.status_code in (201, 202), r.text
    got: dict[str, Any] = r.json()
    return got


def test_upload_page_and_assets(client: TestClient) -> None:
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    page = r.text
    for needle in ('id="upload"', 'name="bundle"', "<progress", 'src="/static/upload.js"', 'href="/static/style.css"'):
        assert needle in page
    assert "No model is served yet" not in page and 'id="api-key"' not in page
    assert re.search(r"up to \d[\d.]* (MB|KB|bytes)\)", page)  # the upload limit, as set
    assert not re.search(r"""(src|href)=["']https?://""", page)  # nothing fetched from elsewhere
    js = client.get("/static/upload.js")
    assert js.status_code == 200 and "upload.onprogress" in js.text and "status_url" in js.text
    assert client.get("/static/style.css").status_code == 200


def test_detail_shows_verdicts_findings_and_charts(client: TestClient, bundles: list[Path]) -> None:
    res = _upload(client, bundles[0])
    assert res["status"] == "done"
    doc = res["diagnosis"]
    assert doc["findings"], "the test needs a bundle the small model finds a fault in"
    r = client.get(f"/diagnoses/{res['id']}")
    assert r.status_code == 200
    page = r.text
    assert 'http-equiv="refresh"' not in page  # finished: no auto-refresh
    shown = dict(re.findall(r'data-component="([^"]+)">([^<]+)</span>', page))
    assert shown == {c["id"]: c["verdict"] for c in doc["components"]}  # every component's verdict
    for c in doc["components"]:
        assert f"{round(100 * c['confidence'])} %" in page
    more = re.search(r'<details class="more">\s*<summary>(\d+) more disks', page)  # 32 disks: most folded
    assert more is not None and int(more.group(1)) == 32 - pages.FOLD_ROWS // 2 - sum(
        c["kind"] == "disk" and c["verdict"] != "none" for c in doc["components"]
    )
    sections = re.findall(r'<section class="finding card".*?</section>', page, re.S)
    assert len(sections) == len(doc["findings"])
    for f, sec in zip(doc["findings"], sections, strict=True):
        assert f'data-fault="{f["fault"]}"' in sec and html.escape(FAULTS[f["fault"]].title) in sec
        assert html.escape(f["recommendation"]) in sec and html.escape(f["summary"]) in sec
        for e in f["evidence"]:
            assert html.escape(e) in sec
        svgs = re.findall(r'<svg class="chart".*?</svg>', sec, re.S)
        assert len(svgs) >= 2 and all("<title" in s and 'class="subject"' in s for s in svgs)
        png = re.search(r'href="(/diagnoses/[^"]+/charts/\d+\.png)"', sec)
        assert png is not None
        got = client.get(png.group(1))
        assert got.status_code == 200 and got.content[:4] == b"\x89PNG"
    assert client.get(f"/diagnoses/{res['id']}/charts/99.png").status_code == 404


def test_pages_never_parse_a_bundle(client: TestClient, bundles: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The charts were drawn by the worker when the diagnosis was made: a page view reads them, it
    neither parses the stored bundle nor runs matplotlib (a bomb's page cost the API 4.4 GB and 143 s)."""
    res = _upload(client, bundles[0])
    assert res["status"] == "done" and res["diagnosis"]["findings"]

    def refuse(*a: object, **k: object) -> None:
        raise AssertionError("the API process parsed a bundle or drew a chart")

    import diagnosis.predictor
    import pipeline.api

    for target in (pipeline.api, diagnosis.predictor):
        monkeypatch.setattr(target, "load_bundle", refuse)
    for name in ("chart_png", "chart_svgs", "charts_for"):
        monkeypatch.setattr(chart_store, name, refuse)
    with bounded("opening a diagnosis page and its chart"):
        page = client.get(f"/diagnoses/{res['id']}").text
        assert page.count('<svg class="chart"') >= 2 and "No charts were stored" not in page
        png = client.get(f"/diagnoses/{res['id']}/charts/0.png")
        assert png.status_code == 200 and png.content[:4] == b"\x89PNG"
    key = chart_store.key_of(res["diagnosis"])
    assert key is not None and (chart_store.folder_of(client.app.state.settings, key) / "0.png").is_file()  # type: ignore[attr-defined]


def test_a_diagnosis_without_stored_charts_says_so(client: TestClient, bundles: list[Path]) -> None:
    res = _upload(client, bundles[0])
    key = chart_store.key_of(res["diagnosis"])
    assert key is not None
    import shutil

    shutil.rmtree(chart_store.folder_of(client.app.state.settings, key))  # type: ignore[attr-defined]
    page = client.get(f"/diagnoses/{res['id']}")
    assert page.status_code == 200 and "No charts were stored with this diagnosis" in page.text
    assert '<svg class="chart"' not in page.text
    assert client.get(f"/diagnoses/{res['id']}/charts/0.png").status_code == 404


@contextmanager
def stored_document(client: TestClient, job_id: str) -> Iterator[dict[str, Any]]:
    """The stored diagnosis document of job `job_id`, written back as the block leaves it."""
    with client.app.state.database.session() as db:  # type: ignore[attr-defined]
        job = db.get(Job, job_id)
        assert job is not None and job.diagnosis_id is not None
        row = db.get(Diagnosis, job.diagnosis_id)
        assert row is not None
        doc = dict(row.document)
        yield doc
        row.document = doc
        db.commit()


HOSTILE = ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "esx$a^{$", "{{ 7 * 7 }}"]


def test_hostile_names_in_a_diagnosis_are_text(client: TestClient, bundles: list[Path]) -> None:
    """Component ids and finding texts come from the bundle: HTML-escaped everywhere on the page."""
    res = _upload(client, bundles[0])
    with stored_document(client, res["id"]) as doc:
        doc["components"] = [{**c, "id": f"{c['kind']}:{HOSTILE[k % 4]}{k}"} for k, c in enumerate(doc["components"])]
        doc["findings"] = [{**f, "component": f"disk:{HOSTILE[0]}", "summary": HOSTILE[1],
                            "evidence": HOSTILE, "recommendation": HOSTILE[2]} for f in doc["findings"]]  # fmt: skip
    with bounded("a diagnosis page of hostile names"):
        page = client.get(f"/diagnoses/{res['id']}")
    assert page.status_code == 200
    assert "<script>alert" not in page.text and "<img src=x" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text and "&lt;img src=x onerror=alert(1)&gt;" in page.text
    assert "esx$a^{$" in page.text and "{{ 7 * 7 }}" in page.text


def test_components_to_review_are_shown_apart_from_findings(client: TestClient, bundles: list[Path]) -> None:
    """A document's `review` (conformal sets of more than one label) gets its own section, with each
    component's candidates and scores, and a tag on its row; a document without it shows none."""
    res = _upload(client, bundles[0])
    assert 'id="review"' not in client.get(f"/diagnoses/{res['id']}").text  # this model has no conformal data
    with stored_document(client, res["id"]) as doc:
        c = doc["components"][0]
        doc["components"] = [{**c, "review": True, "candidates": ["none", "<b>x</b>"]}, *doc["components"][1:]]
        two = [{"label": "none", "score": 0.5}, {"label": "<b>x</b>", "score": 0.45}]
        doc["review"] = [{"component": c["id"], "kind": c["kind"], "verdict": c["verdict"], "confidence": 0.5,
                          "reason": "several labels fit", "candidates": two}]  # fmt: skip
    page = client.get(f"/diagnoses/{res['id']}").text
    section = re.search(r'<section class="review card" id="review">.*?</section>', page, re.S)
    assert section is not None and "Needs review: 1 component" in section.group(0)
    assert f'<tr data-component="{html.escape(c["id"])}">' in section.group(0)
    assert re.search(r'healthy">none</span> 50 %', section.group(0))
    assert "&lt;b&gt;x&lt;/b&gt;</span> 45 %" in section.group(0) and "<b>x</b>" not in page
    assert page.index('id="review"') < page.index('class="components"')
    assert page.count('class="review-tag"') == 1
    assert len(re.findall(r'<section class="finding card"', page)) == len(doc["findings"])  # findings as before


def test_feedback_form_refuses_forged_posts(client: TestClient, bundles: list[Path]) -> None:
    """A cross-origin form POST (the API is open by default) and one without the page's token: 403, and
    nothing stored; the same form with the token from the page is stored."""
    res = _upload(client, bundles[0])
    page = client.get(f"/diagnoses/{res['id']}").text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert token is not None
    form = {"author": "mallory", "comment": "forged"}
    url = f"/diagnoses/{res['id']}/feedback"
    with bounded("forged feedback form posts"):
        evil = client.post(url, data=form | {"csrf_token": token.group(1)}, headers={"origin": "https://evil.example"})
        assert evil.status_code == 403
        assert client.post(url, data=form).status_code == 403  # no token (another site cannot read it)
        client.cookies.clear()  # a token without its cookie (another site cannot set it)
        assert client.post(url, data=form | {"csrf_token": token.group(1)}).status_code == 403
        assert client.get(f"{res['status_url']}/feedback").json()["items"] == []
        assert client.post("/model/retrains", data={"csrf_token": token.group(1)}).status_code == 403
    page = client.get(f"/diagnoses/{res['id']}").text  # a new cookie and token
    fresh = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert fresh is not None
    ok = client.post(url, data=form | {"csrf_token": fresh.group(1)}, headers={"origin": "http://testserver"},
                     follow_redirects=False)  # fmt: skip
    assert ok.status_code == 303 and len(client.get(f"{res['status_url']}/feedback").json()["items"]) == 1


def test_list_page_bounds(client: TestClient) -> None:
    with bounded("huge page numbers"):
        assert client.get(f"/diagnoses?page={2**62}").status_code == 422  # was 500: too large for SQLite
        assert client.get(f"/diagnoses?page={pages.MAX_PAGE}").status_code == 200
        assert client.get("/diagnoses?page=0").status_code == 422
        assert client.get(f"/diagnoses/x/charts/{2**63}.png").status_code == 422
        assert client.get(f"/diagnoses/x?feedback={2**63}").status_code == 422


def test_list_filters_and_paging(client: TestClient, bundles: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    done = [_upload(client, b) for b in bundles]
    page = client.get("/diagnoses").text
    assert all(f'href="/diagnoses/{d["id"]}"' in page for d in done) and f"{len(done)} diagnoses" in page
    fault = done[0]["faults"][0]
    filtered = client.get(f"/diagnoses?fault={fault}").text
    assert f'<option value="{fault}" selected>' in filtered
    for d in done:
        assert (f'href="/diagnoses/{d["id"]}"' in filtered) == (fault in d["faults"])
    none = client.get("/diagnoses?status=failed").text
    assert "No diagnosis matches these filters" in none and 'href="/diagnoses/' + done[0]["id"] not in none
    assert client.get("/diagnoses?fault=not.a.fault").status_code == 200  # ignored, not an error
    monkeypatch.setattr(pages, "PER_PAGE", 1)
    first, second = client.get("/diagnoses").text, client.get("/diagnoses?page=2").text
    assert "page 1 of 2" in first and 'rel="next"' in first and 'rel="prev"' not in first
    assert f'href="/diagnoses/{done[-1]["id"]}"' in first  # newest first
    assert f'href="/diagnoses/{done[0]["id"]}"' in second and 'rel="prev"' in second


def test_pending_and_failed_pages(tmp_path: Path, model_dir: Path, bundles: list[Path]) -> None:
    settings = service_settings(tmp_path / "var", model_dir, embedded_workers=0, worker_processes=0)
    with TestClient(create_app(settings)) as c:
        queued = _upload(c, bundles[0], wait=False)
        page = c.get(f"/diagnoses/{queued['id']}").text
        assert 'http-equiv="refresh"' in page and 'id="pending"' in page and "queued" in page
        with c.app.state.database.session() as db:  # type: ignore[attr-defined]
            job = job_store.claim_job(db, "test", 60, 3, queued["id"])
            assert job is not None
            job_store.fail_job(db, job.id, job.attempts, "no performance data in <upload>")
        page = c.get(f"/diagnoses/{queued['id']}").text
        assert 'http-equiv="refresh"' not in page and 'id="error"' in page
        assert "no performance data in &lt;upload&gt;" in page and "<upload>" not in page
        missing = c.get("/diagnoses/no-such-id")
        assert missing.status_code == 404 and "No diagnosis no-such-id" in missing.text


def test_uploaded_names_are_escaped(client: TestClient, bundles: list[Path]) -> None:
    with bounded("an upload named with HTML, and its pages"):
        res = _upload(client, bundles[1], name='<img src=x onerror="alert(1)">.tgz')
        shown = [client.get(url).text for url in ("/diagnoses", f"/diagnoses/{res['id']}")]
    for page in shown:
        assert "<img src=x" not in page and "&lt;img src=x" in page


def test_no_model_yet(tmp_path: Path) -> None:
    with TestClient(create_app(service_settings(tmp_path / "var", None))) as c:
        up = c.get("/").text
        assert 'id="no-model"' in up and "vsandx train --quick" in up
        model = c.get("/model").text
        assert "No model yet" in model and "vsandx train --quick" in model


def test_api_key_field_when_keys_are_configured(tmp_path: Path, model_dir: Path) -> None:
    with TestClient(create_app(service_settings(tmp_path / "var", model_dir, api_keys=["s3cret"]))) as c:
        page = c.get("/").text
        assert 'id="api-key"' in page and "s3cret" not in page


def _report(folder: Path) -> Path:
    per_fault = {f: {"recall": 0.9, "precision": 0.8, "support": 5} for f in FAULT_IDS}
    scores = [ModelScore("cnn-ensemble", "cnn-ensemble", 0.91, 0.99, 0.8, per_fault, 60.0, 4.2)]
    curve = [CurvePoint(0.5, 100, 0.8, 30.0), CurvePoint(1.0, 200, 0.9, 60.0)]
    res = Results(
        {"train": "200 lab bundles", "val": "50 field bundles", "test": "50 field bundles"}, scores, [], curve
    )
    return write_report(res, folder).parent


def test_model_page_with_training_report(client: TestClient, model_dir: Path, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    page = client.get("/model").text
    assert "logreg" in page and f"file:{model_dir.resolve()}" in page and "No training report" in page
    assert "(model folder saved)" in page  # a model folder: when it was written
    report = _report(tmp_path / "report")
    (report.parent / "secret.png").write_bytes(b"\x89PNG not in the report folder")
    holder = client.app.state.holder  # type: ignore[attr-defined]
    info = {**holder.current_model_info(), "report": str(report), "trained_at": "2026-03-02T10:00:00+00:00",
            "version": "7", "run_id": "abc123", "tags": {"test_exact_match": "0.910000"}}  # fmt: skip
    monkeypatch.setattr(holder, "current_model_info", lambda: info)
    page = client.get("/model").text
    assert "2026-03-02 10:00:00 UTC" in page and "abc123" in page and "91 %" in page
    assert "<table" in page and "cnn-ensemble" in page and "91.0 %" in page  # the Markdown, rendered
    imgs = re.findall(r'<img src="([^"]+)"', page)
    assert "/model/report/comparison.png" in imgs and "/model/report/learning_curve.png" in imgs
    for src in imgs:
        got = client.get(src)
        assert got.status_code == 200 and got.content[:4] == b"\x89PNG"
    assert client.get("/model/report/..%2Fsecret.png").status_code == 404
    assert client.get("/model/report/report.md").status_code == 404


def test_report_markdown_is_escaped_and_images_stay_in_the_folder() -> None:
    from service.api.markdown_lite import render

    md = "# Title <b>\n\nSome `code` and **bold** <script>x</script>\n\n- one\n- two\n\n![a](ok.png) ![b](http://evil/x.png)\n"
    out = render(md, lambda src: f"/model/report/{src}" if src == "ok.png" else None)
    assert "<h2>Title &lt;b&gt;</h2>" in out and "<code>code</code>" in out and "<strong>bold</strong>" in out
    assert "<script>" not in out and "&lt;script&gt;" in out and "<li>two</li>" in out
    assert '<img src="/model/report/ok.png" alt="a"' in out and "evil" not in out
