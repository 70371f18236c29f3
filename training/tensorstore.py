"""BundleTensors <-> .npz on disk, without pickle: the dataset cache's file format.

One file per bundle: every array of every kind under `<kind>/<field>`, and one JSON document
(`meta`, a unicode array) with the scalars, component ids, labels and the schema version.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path

import numpy as np

from pipeline.tensors import SCHEMA_VERSION, BundleTensors, KindTensors
from training.model_files import write_atomic

_ARRAYS = ("values", "mask", "static", "static_mask", "host_index", "group_index")


class StaleTensors(ValueError):
    """A cached file written by another pipeline schema version."""


def dumps(bt: BundleTensors, labels: Mapping[str, str]) -> bytes:
    arrays = {f"{k}/{a}": getattr(kt, a) for k, kt in bt.kinds.items() for a in _ARRAYS}
    meta = {
        "schema_version": bt.schema_version,
        "hosts": list(bt.hosts),
        "host_bundles": list(bt.host_bundles),
        "start": bt.start,
        "step_s": bt.step_s,
        "T": bt.T,
        "native_interval_s": bt.native_interval_s,
        "missing": list(bt.missing),
        "warnings": list(bt.warnings),
        "ids": {k: list(kt.ids) for k, kt in bt.kinds.items()},
        "labels": dict(labels),
    }
    buf = io.BytesIO()
    np.savez_compressed(buf, meta=np.array(json.dumps(meta)), **arrays)
    return buf.getvalue()


def loads(data: bytes) -> tuple[BundleTensors, dict[str, str]]:
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        if meta["schema_version"] != SCHEMA_VERSION:
            raise StaleTensors(f"tensors of schema {meta['schema_version']}, this pipeline is {SCHEMA_VERSION}")
        kinds = {k: KindTensors(k, tuple(ids), *(z[f"{k}/{a}"] for a in _ARRAYS)) for k, ids in meta["ids"].items()}
    names = {f.name for f in fields(BundleTensors)}
    scalars = {k: v for k, v in meta.items() if k in names and k not in ("kinds",)}
    for k in ("hosts", "host_bundles", "missing", "warnings"):
        scalars[k] = tuple(scalars[k])
    return BundleTensors(kinds=kinds, **scalars), meta["labels"]


def save(path: Path, bt: BundleTensors, labels: Mapping[str, str]) -> None:
    write_atomic(path, dumps(bt, labels))


def load(path: Path) -> tuple[BundleTensors, dict[str, str]]:
    return loads(path.read_bytes())
