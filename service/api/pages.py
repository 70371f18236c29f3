"""What each web page shows, as plain dictionaries: service.api.ui's routes hand them to the templates.

Nothing here knows about HTTP, and nothing here reads a bundle: a diagnosis's charts were drawn when it
was made and are read from service.store.chart_store.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from markupsafe import Markup
from pydantic import ValidationError
from sqlalchemy.orm import Session

from diagnosis.charts import OVERVIEW
from service.api.markdown_lite import render
from service.schemas import MAX_INT, DiagnosisResource, FeedbackIn, RetrainOut
from service.store import chart_store, diagnosis_store, feedback
from service.store.chart_store import StoredChart
from service.store.feedback import InvalidFeedback, allowed_labels
from vsandx.faults import COMPONENT_KINDS, FAULT_IDS, FAULTS
from vsandx.settings import ServiceSettings

PER_PAGE = 25
MAX_PAGE = MAX_INT // PER_PAGE  # the list's ?page= bound: its offset stays a 32-bit integer
FOLD_ROWS = 20  # a kind with more components shows its faulty and least certain ones, the rest folded
KIND_NAMES = {"cluster": "Cluster", "host": "Hosts", "nic": "NICs", "diskgroup": "Disk groups", "disk": "Disks"}


def stamp(t: object) -> str:
    """A UTC instant for people; anything missing (None, a template's undefined) is a dash."""
    if not t:
        return "—"
    if isinstance(t, str):
        try:
            t = datetime.fromisoformat(t.replace("Z", "+00:00"))
        except ValueError:
            return str(t)
    if not isinstance(t, datetime):
        return str(t)
    return t.strftime("%Y-%m-%d %H:%M:%S UTC")


def fault_title(fault: str) -> str:
    return FAULTS[fault].title if fault in FAULTS else ("healthy" if fault == "none" else fault)


def charts_of(res: DiagnosisResource, settings: ServiceSettings) -> tuple[list[StoredChart], str | None]:
    """The charts stored with a finished diagnosis (service.store.chart_store), or why there are none."""
    doc = res.diagnosis or {}
    key = chart_store.key_of(doc)
    stored = chart_store.load(settings, key) if key else None
    if stored is None:  # a healthy diagnosis without its overview chart (made before there was one): no note
        note = "No charts were stored with this diagnosis (charts are drawn when a diagnosis is made)."
        return [], note if doc.get("findings") else None
    return stored, None


def _number(v: object) -> str:
    """A worst sample's value to 4 significant digits (the document keeps 6 decimals); "?" if not a number."""
    try:
        return f"{float(v):.4g}"  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "?"


def _onset_text(f: Mapping[str, Any], chart: StoredChart | None) -> str | None:
    """The onset in words: the document's (`onset.words`), else the stored chart's (older documents)."""
    onset = f.get("onset")
    if isinstance(onset, Mapping) and onset.get("words"):
        return f"Onset: {onset['words']}"
    return chart.onset if chart else None


def detail(db: Session, settings: ServiceSettings, job_id: str) -> dict[str, Any] | None:
    res = diagnosis_store.get_diagnosis(db, job_id)
    if res is None:
        return None
    doc = res.diagnosis or {}
    charts, charts_note = charts_of(res, settings) if res.status == "done" else ([], None)
    by_key = {(c.component, c.fault): (k, c) for k, c in enumerate(charts)}
    findings = []
    for f in doc.get("findings", []):
        k, chart = by_key.get((f.get("component"), f.get("fault")), (None, None))
        findings.append(
            {
                **f,
                "title": fault_title(str(f.get("fault"))),
                "kind": str(f.get("component", "")).split(":", 1)[0],
                "svgs": [Markup(s) for s in chart.svgs] if chart else [],  # drawn by chart_render: escaped
                "png": f"/diagnoses/{res.id}/charts/{k}.png" if chart else None,
                "onset_text": _onset_text(f, chart),
                "cited_lines": [c for c in f.get("cited_lines") or [] if isinstance(c, Mapping)],
                "series": [
                    {**x, "shown": _number(x.get("value"))} for x in f.get("series") or [] if isinstance(x, Mapping)
                ],
            }
        )
    # a healthy bundle's one chart: the cluster's overview (diagnosis.charts.overview)
    overview = next(((k, c) for k, c in enumerate(charts) if c.fault == OVERVIEW and not findings), None)
    groups = []
    comps = doc.get("components", [])
    for kind in COMPONENT_KINDS:
        rows = [c for c in comps if c.get("kind") == kind]
        if not rows:
            continue
        # at fault first (most confident first), then the healthy verdicts the model is least sure of
        faulty = sorted((c for c in rows if c.get("verdict") != "none"), key=lambda c: -float(c.get("confidence", 0)))
        healthy = sorted((c for c in rows if c.get("verdict") == "none"), key=lambda c: float(c.get("confidence", 0)))
        keep = len(faulty) + (len(healthy) if len(rows) <= FOLD_ROWS else FOLD_ROWS // 2)
        ordered = faulty + healthy
        groups.append({"kind": kind, "name": KIND_NAMES.get(kind, kind), "rows": ordered[:keep],
                       "more": ordered[keep:], "faulty": len(faulty), "count": len(rows),
                       "lowest": min(float(c.get("confidence", 0)) for c in rows)})  # fmt: skip
    return {
        "res": res,
        "doc": doc,
        "bundle": doc.get("bundle", {}),
        # hosts with a support bundle / esxtop (documents made before it have none: nothing is shown)
        "coverage": doc.get("coverage") if isinstance(doc.get("coverage"), dict) else None,
        # "never seen this" (models.ood): rendered by templates/_unusual.html when flagged
        "unusual": doc.get("unusual") if isinstance(doc.get("unusual"), dict) else None,
        "findings": findings,
        "overview": {
            "svgs": [Markup(x) for x in overview[1].svgs],
            "png": f"/diagnoses/{res.id}/charts/{overview[0]}.png",
        }
        if overview
        else None,
        # components the model cannot settle on one label for (conformal sets): shown apart from findings
        "review": [r for r in doc.get("review") or [] if isinstance(r, dict)],
        "groups": groups,
        "charts_note": charts_note,
        "pending": res.status in ("queued", "running"),
        "feedback": feedback.feedback_for(db, job_id) or [],
        "choices": {k: allowed_labels(k) for k in COMPONENT_KINDS},
        "need_key": bool(settings.api_keys),
    }


def feedback_in(form: Mapping[str, str]) -> FeedbackIn:
    """The detail page's feedback form as the API's input: `label:<component id>` selects (empty =
    confirm the verdict), and a missed fault (`missed_component`, `missed_fault`). Raises
    InvalidFeedback, or pydantic's ValidationError (see `form_error`)."""
    labels = {k.removeprefix("label:"): v for k, v in form.items() if k.startswith("label:") and v}
    missed, fault = form.get("missed_component", ""), form.get("missed_fault", "")
    if missed and fault:
        if labels.get(missed, fault) != fault:
            raise InvalidFeedback(f'labels["{missed}"]', f"given {labels[missed]!r} and, as a missed fault, {fault!r}")
        labels[missed] = fault
    elif missed or fault:
        raise InvalidFeedback("missed fault", "pick both the component and the fault, or neither")
    return FeedbackIn(author=form.get("author", ""), labels=labels, comment=form.get("comment") or None)


def form_error(e: Exception) -> str:
    if isinstance(e, ValidationError):
        return "; ".join(f"{'.'.join(map(str, err['loc'])) or 'form'}: {err['msg']}" for err in e.errors())
    return str(e)


def chart_png(db: Session, settings: ServiceSettings, job_id: str, k: int) -> bytes | None:
    res = diagnosis_store.get_diagnosis(db, job_id)
    key = chart_store.key_of(res.diagnosis or {}) if res is not None and res.status == "done" else None
    return chart_store.png(settings, key, k) if key else None


def listing(db: Session, fault: str | None, status: str | None, page: int) -> dict[str, Any]:
    fault = fault if fault in FAULT_IDS else None
    status = status if status in ("queued", "running", "done", "failed") else None
    page = max(1, page)
    got = diagnosis_store.list_diagnoses(db, fault=fault, status=status, limit=PER_PAGE, offset=(page - 1) * PER_PAGE)
    pages = max(1, math.ceil(got.total / PER_PAGE))
    query = {k: v for k, v in (("fault", fault), ("status", status)) if v}

    def link(p: int) -> str:
        return "/diagnoses?" + urlencode({**query, "page": p})

    return {
        "items": got.items,
        "total": got.total,
        "fault": fault or "",
        "status": status or "",
        "faults": FAULT_IDS,
        "page": page,
        "pages": pages,
        "prev": link(page - 1) if page > 1 else None,
        "next": link(page + 1) if page < pages else None,
    }


def report_folder(info: dict[str, Any]) -> Path | None:
    folder = info.get("report")
    return Path(folder) if folder and Path(folder).is_dir() else None


def report_file(info: dict[str, Any], name: str) -> Path | None:
    """A PNG of the served model's training report: plain names inside its folder only."""
    folder = report_folder(info)
    if folder is None or "/" in name or "\\" in name or name.startswith(".") or not name.endswith(".png"):
        return None
    path = folder / name
    return path if path.is_file() else None


def model(info: dict[str, Any], retrains: list[RetrainOut] | None = None) -> dict[str, Any]:
    folder = report_folder(info)
    report = None
    if folder is not None and (md := folder / "report.md").is_file():

        def image(src: str) -> str | None:
            name = src.rsplit("/", 1)[-1]
            return f"/model/report/{name}" if report_file(info, name) is not None else None

        report = Markup(render(md.read_text(errors="replace"), image))
    written = None
    if not info.get("trained_at") and info.get("folder") and (cfg := Path(info["folder"]) / "config.json").is_file():
        written = datetime.fromtimestamp(cfg.stat().st_mtime, UTC)  # a model folder: when it was saved
    return {"info": info, "report": report, "ready": bool(info.get("ready")), "written": written,
            "retrains": retrains or []}  # fmt: skip


def upload_limit_words(n: int) -> str:
    """The upload limit as the form states it: "512 MB", "1.5 MB", "900 KB" (a limit under a MiB
    read "0 MB" when it was floored to whole MiB)."""
    if n >= 1 << 20:
        return f"{n / (1 << 20):.3g} MB"
    return f"{n / 1024:.3g} KB" if n >= 1024 else f"{n} bytes"


def upload(settings: ServiceSettings, info: dict[str, Any]) -> dict[str, Any]:
    return {
        "need_key": bool(settings.api_keys),
        "ready": bool(info.get("ready")),
        "model_error": info.get("error"),
        "max_size": upload_limit_words(settings.max_upload_bytes),
        "max_bytes": settings.max_upload_bytes,
    }
