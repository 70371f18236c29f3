"""Where a verdict is computed: a bundle in, the diagnosis document of interface.md out (read, parse,
tensorise, predict, findings), with one loaded model.

`Predictor.load(uri)` takes a model folder (as written by Diagnoser.save), `models:/<name>@<alias>`
or `models:/<name>/<version>` from the registry, or nothing: the registry's champion. A model built
for another pipeline schema is refused (models.base raises SchemaMismatch).
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from diagnosis.coverage import coverage
from diagnosis.findings import findings
from models.base import Diagnoser, load_model
from models.calibration import CalibratedDiagnoser
from models.conformal import LabelSets
from pipeline.api import load_bundle
from pipeline.config import PipelineConfig
from pipeline.tensors import BundleTensors
from training.model_fetch import fetch_model
from training.model_files import NoModel
from vsandx.faults import LABELS
from vsandx.settings import Settings, get_settings

SCHEMA = "vsandx.diagnosis/1"
__all__ = ["SCHEMA", "NoModel", "Predictor", "limit_threads"]


CHUNK = 1 << 20  # bytes hashed at a time: an upload is never held whole


def _hash_stream(h: Any, read: Callable[[int], bytes]) -> None:
    while chunk := read(CHUNK):
        h.update(chunk)


def file_sha256(path: Path) -> str:
    """An archive's identity, read in chunks (the service knows it already: it stored the file by it)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        _hash_stream(h, fh.read)
    return h.hexdigest()


def _tree_sha256(folder: Path) -> str:
    """A directory upload's identity: its files' relative paths and contents, in order."""
    h = hashlib.sha256()
    for p in sorted(q for q in folder.rglob("*") if q.is_file()):
        h.update(p.relative_to(folder).as_posix().encode() + b"\0")
        with open(p, "rb") as fh:
            _hash_stream(h, fh.read)
    return h.hexdigest()


def _iso(t: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def limit_threads(n: int) -> None:
    """n intra-op threads for the model (torch). One bundle's forward pass takes milliseconds; more
    threads only spin against the workers and whatever else shares the cores (a fresh `vsandx diagnose`
    on a busy 2-core machine spent 10 s in torch's thread pool and 0.3 s with one thread)."""
    import sys

    torch = sys.modules.get("torch")  # loaded by the CNN models; the baselines never need it
    if torch is not None and n > 0 and torch.get_num_threads() != n:
        torch.set_num_threads(n)


def _ranked(p: np.ndarray, s: np.ndarray) -> list[int]:
    """The label indices of set `s`, most probable first."""
    return [int(i) for i in np.argsort(-p, kind="stable") if s[i]]


def _review_entry(comp: dict[str, Any], p: np.ndarray, s: np.ndarray) -> dict[str, Any] | None:
    """A component's entry in the document's review list; None when its set is its verdict alone (a set
    is never empty: models.conformal.label_sets)."""
    ranked = _ranked(p, s)
    if len(ranked) <= 1:
        return None
    return {"component": comp["id"], "kind": comp["kind"], "verdict": comp["verdict"],
            "confidence": comp["confidence"], "reason": "several labels fit",
            "candidates": [{"label": LABELS[i], "score": round(float(p[i]), 4)} for i in ranked]}  # fmt: skip


MAX_DRIVEN = 3  # findings whose drivers are computed, most confident first (~0.03 s each per CNN member)
MAX_NOTES, MAX_NOTE_CHARS = 50, 400  # reading notes kept in a diagnosis (their text comes from the bundle)


@dataclass
class Predictor:
    model: Diagnoser
    name: str
    version: str
    config: PipelineConfig
    # coverage of the conformal sets (models.conformal) behind "needs review"; VSANDX_REVIEW_COVERAGE
    coverage: float = field(default_factory=lambda: get_settings().review_coverage)
    # integrated-gradient path points behind each finding's `drivers` (VSANDX_ATTRIBUTION_STEPS; 0: none)
    attribution_steps: int = field(default_factory=lambda: get_settings().attribution_steps)

    @classmethod
    def load(
        cls, uri: str | None = None, settings: Settings | None = None, config: PipelineConfig | None = None
    ) -> Predictor:
        """The model `uri` names (training.model_fetch.fetch_model), or the registry's champion; it reads
        bundles with `config` (default: resolved from the VSANDX_PIPELINE_* settings, once, here)."""
        s = settings or get_settings()
        got = fetch_model(uri, s.data_dir, s.mlflow_tracking_uri, s.registered_model)
        model = load_model(got.folder)
        limit_threads(s.model_threads)
        cfg = config or PipelineConfig.from_settings()
        return cls(model, model.name if got.ref is None else got.name, got.version, cfg, s.review_coverage)

    def diagnose(self, source: str | os.PathLike[str] | bytes | BinaryIO, name: str | None = None) -> dict[str, Any]:
        """Diagnose an upload (bytes, an open file, an archive path or a bundle directory); `name` is
        what error messages call it (the file name by default). A path is hashed and read in chunks."""
        t0 = time.perf_counter()
        if isinstance(source, str | os.PathLike):
            path = Path(source)
            sha = _tree_sha256(path) if path.is_dir() else file_sha256(path)
            doc, _ = self._diagnose(path, sha, name or str(source), t0)
            return doc
        if not isinstance(source, bytes):
            source = source.read()  # an open file: callers hand small ones (tests, evaluate)
        doc, _ = self._diagnose(source, hashlib.sha256(source).hexdigest(), name or "<upload>", t0)
        return doc

    def diagnose_stored(
        self, path: str | os.PathLike[str], sha256: str, name: str | None = None
    ) -> tuple[dict[str, Any], BundleTensors]:
        """`diagnose` of a stored upload, which travels as (path, sha256): the archive (or bundle
        directory) is streamed from disk by the pipeline's reader, never read whole nor hashed again.
        Hands back the parsed bundle as well, so that what is drawn from it (the charts) needs no
        second read."""
        return self._diagnose(Path(path), sha256, name or str(path), time.perf_counter())

    def _diagnose(
        self, source: Path | bytes, sha256: str, name: str, t0: float
    ) -> tuple[dict[str, Any], BundleTensors]:
        t1 = time.perf_counter()
        bt = load_bundle(source, self.config, name)
        t2 = time.perf_counter()
        doc = self.document(bt, sha256)
        t3 = time.perf_counter()
        doc["timing_ms"] = {"read": 1e3 * (t1 - t0), "parse": 1e3 * (t2 - t1), "predict": 1e3 * (t3 - t2),
                            "total": 1e3 * (t3 - t0)}  # fmt: skip
        return doc, bt

    def _sets(self, bt: BundleTensors, probs: dict[str, np.ndarray]) -> LabelSets | None:
        """Each component's conformal set, or None for a model without conformal data."""
        if not isinstance(self.model, CalibratedDiagnoser) or not self.model.conformal_:
            return None
        return self.model.prediction_sets([bt], [probs], self.coverage)[0]

    def _drivers(self, bt: BundleTensors, found: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each finding's `drivers` (diagnosis.drivers: what its CNN members' verdict rests on, the most
        confident MAX_DRIVEN findings), null for the rest and for a model without CNNs."""
        # A model without CNNs never imports models.cnn (models.registry loads a family's module on use),
        # so neither torch nor Captum is loaded for it here.
        steps = self.attribution_steps if "models.cnn" in sys.modules else 0
        for f in found:
            f["drivers"] = None
        if steps > 0:
            from diagnosis.drivers import drivers

            for f in found[:MAX_DRIVEN]:
                f["drivers"] = drivers(self.model, bt, f["component"], f["fault"], steps)
        return found

    def _unusual(self, bt: BundleTensors) -> dict[str, Any] | None:
        """The out-of-distribution check's verdict (models.ood), or None for a model without one."""
        ood = self.model.ood_ if isinstance(self.model, CalibratedDiagnoser) else None
        return None if ood is None else ood.explain(bt)

    def document(self, bt: BundleTensors, sha256: str) -> dict[str, Any]:
        """The diagnosis document; with a model that has conformal data, each component also says
        whether it needs review (`review`) and which labels its set at `coverage` keeps (`candidates`,
        most probable first), and `review` lists those components with their candidates' scores. With
        a model that has an out-of-distribution check, `unusual` says whether the bundle lies outside
        what it was trained on, and why (None: a model without the check)."""
        (probs,) = self.model.predict_proba([bt])
        sets = self._sets(bt, probs)
        comps, verdicts, review = [], {}, []
        for kind, kt in bt.kinds.items():
            for cid in kt.ids:
                p = probs[cid]
                best = int(np.argmax(p))
                verdicts[cid] = (LABELS[best], float(p[best]))
                scores = {lab: round(float(v), 4) for lab, v in zip(LABELS, p, strict=True) if v > 0}
                comp: dict[str, Any] = {"id": cid, "kind": kind, "verdict": LABELS[best],
                                        "confidence": round(float(p[best]), 4), "scores": scores}  # fmt: skip
                if sets is not None and cid in sets:
                    entry = _review_entry(comp, p, sets[cid])
                    comp["review"], comp["candidates"] = entry is not None, [LABELS[i] for i in _ranked(p, sets[cid])]
                    if entry is not None:
                        review.append(entry)
                comps.append(comp)
        return {
            "schema": SCHEMA,
            "bundle": {
                "sha256": sha256,
                "hosts": list(bt.hosts),
                "start": _iso(bt.start),
                "end": _iso(bt.start + bt.step_s * bt.T),
                # what the reading cut, skipped or could not read: the verdict rests on the rest
                "warnings": [w[:MAX_NOTE_CHARS] for w in bt.warnings[:MAX_NOTES]],
                "missing": list(bt.missing)[:MAX_NOTES],
            },
            # hosts of the cluster with a support bundle, esxtop, logs (and those without); additive
            "coverage": coverage(bt),
            "components": comps,
            "findings": self._drivers(bt, [f.to_dict() for f in findings(bt, verdicts)]),
            # components whose conformal set holds several labels, least sure first ([]: none, or a
            # model without conformal data); a reader of vsandx.diagnosis/1 may ignore it
            "review": sorted(review, key=lambda r: r["confidence"]),
            # "never seen this": {"flag", "score", "threshold", "reasons": [{"kind", "component",
            # "components", "channels", "score", "why"}]} (models.ood), null for a model without it; additive
            "unusual": self._unusual(bt),
            "model": {"name": self.name, "version": self.version},
            "timing_ms": {},
        }
