"""`vsandx evaluate DIR`: diagnose every labelled bundle in a folder and score it (interface.md)."""

from __future__ import annotations

import json
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from diagnosis.predictor import Predictor
from models.metrics import evaluation_report

SUFFIXES = (".tgz", ".tar.gz", ".tar", ".zip")


def labelled_bundles(folder: Path) -> Iterator[Path]:
    """Bundles (archives or directories) in `folder` that carry labels.json at their root."""
    for p in sorted(folder.iterdir()):
        if (p.is_dir() and (p / "labels.json").exists()) or (p.is_file() and p.name.endswith(SUFFIXES)):
            yield p


def read_labels(bundle: Path) -> dict[str, str] | None:
    """The ground truth of a simulated bundle (never shown to the pipeline)."""
    raw: bytes | None = None
    if bundle.is_dir():
        raw = (bundle / "labels.json").read_bytes()
    elif zipfile.is_zipfile(bundle):
        with zipfile.ZipFile(bundle) as zf:
            raw = zf.read("labels.json") if "labels.json" in zf.namelist() else None
    else:
        with tarfile.open(bundle) as tf:
            for ti in tf:
                if ti.isfile() and ti.name.lstrip("./") == "labels.json":
                    f = tf.extractfile(ti)
                    raw = f.read() if f else None
                    break
    if raw is None:
        return None
    comps = json.loads(raw)["components"]
    return {str(k): str(v) for k, v in comps.items()}


def evaluate_folder(predictor: Predictor, folder: Path, progress: bool = False) -> dict[str, Any]:
    """The evaluation document of interface.md; `progress`: a bar on stderr, bundle by bundle."""
    from tqdm import tqdm

    truths, preds, latencies = [], [], []
    bundles = list(labelled_bundles(folder))
    for bundle in tqdm(bundles, desc="evaluate", unit="bundle", disable=not progress, file=sys.stderr):
        labels = read_labels(bundle)
        if labels is None:
            continue
        doc = predictor.diagnose(bundle)
        verdict = {c["id"]: c["verdict"] for c in doc["components"]}
        truths.append(labels)
        preds.append({cid: verdict.get(cid, "none") for cid in labels})  # a component not found is a miss
        latencies.append(doc["timing_ms"]["total"])
    doc = evaluation_report(truths, preds, latencies)
    for fault, m in doc["per_fault"].items():  # how often it was called: tells "never called" from "all wrong"
        m["predicted"] = sum(v == fault for p in preds for v in p.values())
    return doc
