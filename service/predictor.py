"""The served model: loaded once, answers with the diagnosis document of interface.md.

`Predictor.load(uri)` takes a model folder (as written by Diagnoser.save), `models:/<name>@<alias>`
or `models:/<name>/<version>` from the registry, or nothing: the registry's champion. A model built
for another pipeline schema is refused (models.base raises SchemaMismatch).
"""

from __future__ import annotations

import hashlib
import io
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from models.base import Diagnoser, load_model
from pipeline.api import load_bundle
from pipeline.config import PipelineConfig
from pipeline.tensors import BundleTensors
from service.findings import findings
from vsandx.faults import LABELS
from vsandx.settings import Settings, get_settings

SCHEMA = "vsandx.diagnosis/1"


def _tree_sha256(folder: Path) -> str:
    """A directory upload's identity: its files' relative paths and contents, in order."""
    h = hashlib.sha256()
    for p in sorted(q for q in folder.rglob("*") if q.is_file()):
        h.update(p.relative_to(folder).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


class NoModel(LookupError):
    """No model at that URI, or no champion registered yet."""


def _iso(t: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


@dataclass
class Predictor:
    model: Diagnoser
    name: str
    version: str
    config: PipelineConfig

    @classmethod
    def load(cls, uri: str | None = None, settings: Settings | None = None) -> Predictor:
        s = settings or get_settings()
        cfg = PipelineConfig.from_settings()
        if uri and not uri.startswith("models:/"):
            folder = Path(uri)
            if not (folder / "config.json").exists():
                raise NoModel(f"{uri}: not a saved vsandx model folder (no config.json)")
            model = load_model(folder)
            return cls(model, model.name, f"file:{folder.resolve()}", cfg)
        from training.tracking import Tracker  # MLflow only when the registry is asked for

        tracker = Tracker(s.data_dir, s.mlflow_tracking_uri, s.mlflow_experiment)
        name, alias = s.registered_model, "champion"
        if uri:
            name, _, alias = uri.removeprefix("models:/").partition("@")
        ref = tracker.champion(name, alias or "champion") if alias or not uri else None
        if ref is None:
            raise NoModel(f"no model registered as {name}@{alias or 'champion'}; run `vsandx train` first")
        folder = tracker.download(ref, s.data_dir / "models" / name / ref.version)
        return cls(load_model(folder), name, ref.version, cfg)

    def diagnose(self, source: str | os.PathLike[str] | bytes | BinaryIO, name: str | None = None) -> dict[str, Any]:
        """Diagnose an upload (bytes, an open file, an archive path or a bundle directory); `name` is
        what error messages call it (the file name by default)."""
        t0 = time.perf_counter()
        upload: Path | io.BytesIO
        if isinstance(source, str | os.PathLike) and Path(source).is_dir():
            upload = Path(source)
            sha = _tree_sha256(upload)
        else:
            if isinstance(source, str | os.PathLike):
                data, name = Path(source).read_bytes(), name or str(source)
            else:
                data = source if isinstance(source, bytes) else source.read()
            sha = hashlib.sha256(data).hexdigest()
            upload = io.BytesIO(data)
            upload.name = name or "<upload>"  # errors quote it
        t1 = time.perf_counter()
        bt = load_bundle(upload, self.config)
        t2 = time.perf_counter()
        doc = self.document(bt, sha)
        t3 = time.perf_counter()
        doc["timing_ms"] = {
            "read": 1e3 * (t1 - t0),
            "parse": 1e3 * (t2 - t1),
            "predict": 1e3 * (t3 - t2),
            "total": 1e3 * (t3 - t0),
        }
        return doc

    def document(self, bt: BundleTensors, sha256: str) -> dict[str, Any]:
        (probs,) = self.model.predict_proba([bt])
        comps, verdicts = [], {}
        for kind, kt in bt.kinds.items():
            for cid in kt.ids:
                p = probs[cid]
                best = int(np.argmax(p))
                verdicts[cid] = (LABELS[best], float(p[best]))
                scores = {lab: round(float(v), 4) for lab, v in zip(LABELS, p, strict=True) if v > 0}
                comps.append(
                    {
                        "id": cid,
                        "kind": kind,
                        "verdict": LABELS[best],
                        "confidence": round(float(p[best]), 4),
                        "scores": scores,
                    }
                )
        return {
            "schema": SCHEMA,
            "bundle": {
                "sha256": sha256,
                "hosts": list(bt.hosts),
                "start": _iso(bt.start),
                "end": _iso(bt.start + bt.step_s * bt.T),
            },
            "components": comps,
            "findings": [f.to_dict() for f in findings(bt, verdicts)],
            "model": {"name": self.name, "version": self.version},
            "timing_ms": {},
        }
