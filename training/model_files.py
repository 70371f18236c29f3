"""The registry's local side, with no MLflow import: model URIs, the downloaded model folders under
<data_dir>/models and the memo of resolved aliases (so a cached champion loads without MLflow)."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

MODEL_DATA = Path("data") / "vsandx"  # the vsandx folder inside an MLflow Model (diagnosis.pyfunc.DATA_PATH)


class NoModel(LookupError):
    """No model at that URI, or none registered under that name and alias or version."""


def model_folder(got: Path) -> Path:
    """The vsandx model folder in a downloaded model artifact: inside an MLflow Model, or the artifact
    itself (versions registered before they were MLflow Models)."""
    inner = got / MODEL_DATA
    return inner if (got / "MLmodel").is_file() and (inner / "config.json").is_file() else got


def parse_model_uri(uri: str) -> tuple[str, str | None, str | None]:
    rest = uri.removeprefix("models:/")
    name, at, alias = rest.partition("@")
    if at:
        if not name or not alias:
            raise NoModel(f"{uri}: expected models:/<name>@<alias>")
        return name, alias, None
    name, slash, version = rest.rpartition("/")
    if not slash or not name or not version.isdigit():
        raise NoModel(f"{uri}: expected models:/<name>@<alias> or models:/<name>/<version>")
    return name, None, version


def store_stamp(data_dir: Path) -> list[int] | None:
    """Size and mtime of the embedded SQLite store and its journals; None when there is no store."""
    db = data_dir / "mlflow.db"
    if not db.exists():
        return None
    out: list[int] = []
    for p in (db, db.with_name("mlflow.db-wal"), db.with_name("mlflow.db-journal")):
        st = p.stat() if p.exists() else None
        out += [st.st_size, st.st_mtime_ns] if st else [-1, -1]
    return out


def read_json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write `data` under `path` so that a reader sees the whole file or none (a crash never leaves a
    half-written file under the final name). The temporary name is the writer's own (pid and a random
    part): two writers of one file (a benchmark and a script building the same cached dataset) never
    rename each other's temporary away; the last complete write wins."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
    try:
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
