"""Datasets: simulated bundles (or uploads engineers labelled) run through the pipeline once, cached on
disk by a config hash.

A dataset is a folder `<data_dir>/datasets/<profile>-<key>/` with one `.npz` per bundle (tensors and
labels, see tensorstore) and `dataset.json`, the resolved spec with the pipeline schema version and
the simulator version. Any change to either, or to the pipeline config, gives a new key, so a stale
cache is never read. Bundles are simulated and tensorised in memory (never written as archives).
Uploads that engineers labelled (`build_labelled`, from service feedback) are read from the stored
upload by the same pipeline call; `combine` puts several sources (with weights) in one folder.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from data.simulate import SIMULATOR_VERSION, perturb
from data.simulate.archive import tar_bytes
from data.simulate.generate import simulate_bundle
from data.simulate.perturb import drop_hosts as partial_upload
from data.sources import BUNDLES, VERSIONS
from pipeline.api import load_bundle
from pipeline.config import PipelineConfig
from pipeline.tensors import SCHEMA_VERSION, BundleTensors
from training import tensorstore
from training.model_files import write_atomic

SCHEMA = "vsandx.dataset/1"


@dataclass(frozen=True)
class DatasetSpec:
    profile: str  # lab | field, or a source of data.sources (another author's generator: cleanroom | outsider)
    n: int
    seed: int
    issue_rate: float | None = None  # None: the profile's default
    # Share of bundles turned into partial uploads (some host folders left out, as in escalations):
    # a training-time augmentation, so that "this host's nicinfo/logs are missing" is not read as a fault.
    partial: float = 0.0
    # Cause filter (data.simulate.causes): draw faults only through `causes`, never through
    # `exclude_causes` ("fault:cause" or a cause name), e.g. to train with one cause held out and test on it.
    causes: tuple[str, ...] = ()
    exclude_causes: tuple[str, ...] = ()
    # A perturbation of data.simulate.perturb applied to every bundle after the partial-upload step
    # ("interval:3", "esxtop", "logs:7", "load:2", ...): test sets for the generalisation benchmark.
    perturb: str = ""

    def resolved(self, cfg: PipelineConfig) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            **asdict(self),
            "pipeline_schema": SCHEMA_VERSION,
            "simulator_version": SIMULATOR_VERSION,
            "pipeline_config": asdict(cfg),
        } | ({"source_version": VERSIONS[self.profile]} if self.profile in VERSIONS else {})

    def key(self, cfg: PipelineConfig) -> str:
        doc = json.dumps(self.resolved(cfg), sort_keys=True)
        return hashlib.sha256(doc.encode()).hexdigest()[:16]


def _make(index: int, spec: DatasetSpec, cfg: PipelineConfig, folder: Path) -> str:
    path = folder / f"{index:06d}.npz"
    if not path.exists():
        if spec.profile in BUNDLES:  # another author's generator: its own mix, no cause filter
            _, files, labels = BUNDLES[spec.profile](spec.seed, index)
        else:
            b = simulate_bundle(
                spec.profile,
                spec.seed,
                index,
                spec.issue_rate,
                causes=spec.causes or None,
                exclude_causes=spec.exclude_causes,
            )
            files, labels = b.files, b.labels
        rng = np.random.default_rng([spec.seed, index, 0x9A27])  # its own stream: the bundle stays as simulated
        if spec.partial > 0 and rng.random() < spec.partial:
            files = partial_upload(files, rng)
        files = perturb.apply(spec.perturb, files, np.random.default_rng([spec.seed, index, 0x5EED]))
        bt = load_bundle(tar_bytes(files), cfg)  # the pipeline never sees labels.json's meaning
        comps = labels["components"]
        assert isinstance(comps, dict)
        tensorstore.save(path, bt, comps)
    return path.name


def can_have_children() -> bool:
    """False in a daemonic process: multiprocessing refuses it children (a Celery prefork pool's child)."""
    return not mp.current_process().daemon


def build(
    spec: DatasetSpec, root: Path, cfg: PipelineConfig | None = None, workers: int = 0, progress: bool = True
) -> Path:
    """The dataset folder for `spec`, simulating and tensorising only the bundles not cached yet."""
    cfg = cfg or PipelineConfig()
    folder = root / "datasets" / f"{spec.profile}-{spec.key(cfg)}"
    manifest = folder / "dataset.json"
    if manifest.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    job = partial(_make, spec=spec, cfg=cfg, folder=folder)
    workers = workers or os.cpu_count() or 1
    t0 = time.perf_counter()
    with tqdm(total=spec.n, desc=f"dataset {spec.profile}", unit="bundle", disable=not progress) as bar:
        if workers <= 1 or spec.n < 4 or not can_have_children():
            for _ in map(job, range(spec.n)):
                bar.update()
        else:
            ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
            with ctx.Pool(workers) as pool:
                for _ in pool.imap_unordered(job, range(spec.n), chunksize=4):
                    bar.update()
    doc = {**spec.resolved(cfg), "seconds": round(time.perf_counter() - t0, 2)}
    write_atomic(manifest, json.dumps(doc, indent=1) + "\n")  # written last: its presence means complete
    return folder


@dataclass(frozen=True)
class LabelledBundle:
    """An uploaded bundle whose every component an engineer labelled (service feedback): the other
    source of datasets, beside the simulator. `labels` has labels.json's `components` shape."""

    sha256: str
    path: Path
    labels: Mapping[str, str]


def build_labelled(
    items: Sequence[LabelledBundle], root: Path, cfg: PipelineConfig | None = None, source: str = "feedback"
) -> Path:
    """The dataset folder of labelled uploads, each read by the one pipeline path (`load_bundle`) and
    stored like simulated ones; keyed by the bundles, their labels and the pipeline, so a changed label
    gives a new folder. A bundle given twice keeps its last labels."""
    cfg = cfg or PipelineConfig()
    latest = {it.sha256: it for it in items}
    doc = {
        "schema": SCHEMA,
        "source": source,
        "bundles": {sha: dict(sorted(latest[sha].labels.items())) for sha in sorted(latest)},
        "pipeline_schema": SCHEMA_VERSION,
        "pipeline_config": asdict(cfg),
    }
    key = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]
    folder = root / "datasets" / f"{source}-{key}"
    manifest = folder / "dataset.json"
    if manifest.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    for sha, it in sorted(latest.items()):
        path = folder / f"{sha[:20]}.npz"
        if not path.exists():
            tensorstore.save(path, load_bundle(it.path, cfg), it.labels)
    done = {**doc, "bundles": sorted(latest), "n": len(latest), "seconds": round(time.perf_counter() - t0, 2)}
    manifest.write_text(json.dumps(done, indent=1) + "\n")  # written last: its presence means complete
    return folder


def combine(parts: Sequence[tuple[Path, int]], root: Path) -> Path:
    """One dataset folder holding the bundles of several (each `(folder, copies)`: a weight), linked,
    not copied, so that anything reading one folder (a sweep trial) trains on all of them."""
    names = [(p.name, n) for p, n in parts if n > 0]
    key = hashlib.sha256(json.dumps(names).encode()).hexdigest()[:16]
    folder = root / "datasets" / f"mix-{key}"
    if (folder / "dataset.json").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    for i, (part, copies) in enumerate(parts):
        for src in sorted(part.glob("*.npz")):
            for c in range(copies):
                dst = folder / f"{i:02d}-{c}-{src.name}"
                if not dst.exists():
                    try:
                        os.link(src, dst)
                    except OSError:  # another filesystem, or no hard links
                        shutil.copyfile(src, dst)
    doc = {"schema": SCHEMA, "source": "mix", "parts": [describe(p) | {"copies": n} for p, n in parts]}
    (folder / "dataset.json").write_text(json.dumps(doc, indent=1) + "\n")
    return folder


def iter_dataset(folder: Path, limit: int | None = None) -> Iterator[tuple[BundleTensors, dict[str, str]]]:
    if not (folder / "dataset.json").exists():
        raise FileNotFoundError(f"{folder}: not a built dataset (no dataset.json)")
    files = sorted(folder.glob("*.npz"))
    for path in files[:limit]:
        yield tensorstore.load(path)


def load_dataset(folder: Path, limit: int | None = None) -> tuple[list[BundleTensors], list[dict[str, str]]]:
    X: list[BundleTensors] = []
    y: list[dict[str, str]] = []
    for bt, labels in iter_dataset(folder, limit):
        X.append(bt)
        y.append(labels)
    return X, y


def bundle_count(folder: Path) -> int:
    return len(list(folder.glob("*.npz")))


def describe(folder: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((folder / "dataset.json").read_text())
    return doc


def faulty_share(y: Sequence[dict[str, str]]) -> float:
    """Share of bundles with at least one faulty component (the issue rate actually drawn)."""
    return sum(any(v != "none" for v in lab.values()) for lab in y) / max(1, len(y))
