"""A diagnosis's charts, drawn once when the diagnosis is made — by the worker, from the very parse the
diagnosis came from (service.queue.diagnosis_jobs) — and stored under <data_dir>/charts/<key[:2]>/<key>/:
`charts.json` (per chart: component, fault, title, the onset in words and each panel's inline SVG) and
`<k>.png` (the same chart for the UI's download link and the emailed report). The web UI only reads them:
no request makes the API process parse a bundle or run matplotlib.

The key is the diagnosis's identity (bundle sha256, model name, model version). A folder is written
under a temporary name and renamed into place, so readers see every chart of a diagnosis or none. Charts
outlive the upload's retention (they are small, and show what the diagnosis was made from). At most
MAX_CHARTS charts are drawn, for the first findings of the document.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from diagnosis.chart_png import chart_png
from diagnosis.chart_render import chart_svgs
from diagnosis.charts import Chart, charts_for
from diagnosis.digest import ReportChart, clean
from diagnosis.onset import describe
from pipeline.tensors import BundleTensors
from vsandx.settings import ServiceSettings

log = logging.getLogger(__name__)
MAX_CHARTS: Final = 12  # a diagnosis with more findings gets charts for its first ones
MANIFEST: Final = "charts.json"


@dataclass(frozen=True)
class StoredChart:
    component: str
    fault: str
    title: str
    onset: str  # the onset in words (onset_text)
    svgs: tuple[str, ...]  # one standalone <svg> per panel, everything from the bundle escaped


def chart_key(sha256: str, model_name: str, model_version: str) -> str:
    return hashlib.sha256(f"{sha256}\0{model_name}\0{model_version}".encode()).hexdigest()[:40]


def key_of(doc: Mapping[str, Any]) -> str | None:
    """The key of a diagnosis document (its bundle's sha256 and its model), None when it lacks them."""
    bundle, model = doc.get("bundle") or {}, doc.get("model") or {}
    if not bundle.get("sha256") or not model.get("name"):
        return None
    return chart_key(str(bundle["sha256"]), str(model["name"]), str(model.get("version", "")))


def folder_of(settings: ServiceSettings, key: str) -> Path:
    return settings.data_dir / "charts" / key[:2] / key


def onset_text(chart: Chart) -> str:
    """The onset in words (diagnosis.onset.describe), as the page and the emailed report say it."""
    return describe(chart.onset, chart.start, chart.step_s)


def draw(settings: ServiceSettings, doc: Mapping[str, Any], bt: BundleTensors) -> int:
    """Draw and store the charts of a diagnosis made from `bt`; how many. Never raises: a chart that
    cannot be drawn must not fail the diagnosis (the page then says there are none)."""
    key = key_of(doc)
    if key is None:
        return 0
    try:
        charts = charts_for(bt, dict(doc))[:MAX_CHARTS]
        stored = [StoredChart(c.component, c.fault, clean(c.title), onset_text(c), tuple(chart_svgs(c, f"c{k}")))
                  for k, c in enumerate(charts)]  # fmt: skip
        _write(folder_of(settings, key), stored, [chart_png(c) for c in charts])
    except Exception:  # a bug in drawing one odd bundle: log it, keep the diagnosis
        log.exception("charts of diagnosis %s could not be drawn", key)
        return 0
    return len(charts)


def _write(final: Path, charts: list[StoredChart], pngs: list[bytes]) -> None:
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}-"))
    try:
        for k, png in enumerate(pngs):
            (work / f"{k}.png").write_bytes(png)
        (work / MANIFEST).write_text(json.dumps([asdict(c) for c in charts]))
        os.rename(work, final)  # atomic; a folder already there (the same diagnosis, drawn twice) stays
    except OSError:
        if not final.is_dir():
            raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


def load(settings: ServiceSettings, key: str) -> list[StoredChart] | None:
    """The stored charts, in the order of the document's findings; None when none were ever stored."""
    path = folder_of(settings, key) / MANIFEST
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        log.warning("stored charts %s are unreadable", path)
        return None
    return [StoredChart(str(c["component"]), str(c["fault"]), str(c["title"]), str(c["onset"]),
                        tuple(str(s) for s in c["svgs"])) for c in raw]  # fmt: skip


def png(settings: ServiceSettings, key: str, k: int) -> bytes | None:
    """Chart k's PNG, None when there is no such chart."""
    if not 0 <= k < MAX_CHARTS:
        return None
    try:
        return (folder_of(settings, key) / f"{k}.png").read_bytes()
    except OSError:
        return None


def report_charts(settings: ServiceSettings, key: str, with_png: int) -> list[ReportChart]:
    """The stored charts as an emailed report takes them (service.trackers.report_mail), in the findings'
    order, the PNGs of the first `with_png` read; [] when none were stored."""
    stored = load(settings, key) or []
    return [ReportChart(c.component, c.fault, c.title, c.onset, png(settings, key, k) if k < with_png else None)
            for k, c in enumerate(stored)]  # fmt: skip
