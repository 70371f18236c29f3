"""The one way any caller of ours gets a model folder (training, retraining, serving and the CLI):
`fetch_model` resolves a model URI and downloads each version once under <data_dir>/models.

Apart from tracking.py, the one module that imports MLflow: nothing here does. The registry is asked
through tracking.Tracker, and only when the memo of resolved aliases cannot answer (the embedded store
changed since), so a cached champion loads without MLflow.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from training.model_files import NoModel, model_folder, parse_model_uri, read_json, store_stamp, write_atomic
from training.tracking import CHAMPION, ModelRef, Tracker, download_once


@dataclass(frozen=True)
class ModelFolder:
    """A model ready to load: its folder, and what it is in the registry (ref None: a plain folder)."""

    folder: Path
    name: str
    version: str  # the registry's version, or file:<folder> for a plain folder
    ref: ModelRef | None


def fetch_model(uri: str | None, data_dir: Path, tracking_uri: str | None = None,
                default_name: str = "vsandx-diagnoser") -> ModelFolder:  # fmt: skip
    """The model folder `uri` names, downloaded at most once per version under
    <data_dir>/models/<name>/<version> (atomically: processes starting together never see half a folder).

    `uri`: a model folder; `models:/<name>@<alias>`; `models:/<name>/<version>`; None: the champion of
    `default_name`. Raises NoModel naming what is missing and how to get it. With the embedded store, an
    alias resolved before is not asked again while the store's files are unchanged, so a cached champion
    loads without MLflow; a store that does not exist yet is not created."""
    if uri and not uri.startswith("models:/"):
        folder = Path(uri).expanduser().resolve()
        if not (folder / "config.json").is_file():
            raise NoModel(f"{uri}: not a saved vsandx model folder (no config.json)")
        return ModelFolder(folder, folder.name, f"file:{folder}", None)
    name, alias, version = parse_model_uri(uri or f"models:/{default_name}@{CHAMPION}")
    ref, tracker = _resolve(data_dir, tracking_uri, name, alias, version)
    final = data_dir / "models" / name / ref.version
    got = download_once(ref.source, final, data_dir, tracking_uri, tracker)
    return ModelFolder(model_folder(got), name, ref.version, ref)


def _resolve(
    data_dir: Path, tracking_uri: str | None, name: str, alias: str | None, version: str | None
) -> tuple[ModelRef, Tracker | None]:
    """The registry entry, and the Tracker that asked for it (None when the memo answered)."""
    what = f"{name}@{alias}" if alias else f"{name} version {version}"
    how = "train one with `vsandx train --quick`, or give a model folder with --model"
    stamp = store_stamp(data_dir) if tracking_uri is None else None
    if tracking_uri is None and stamp is None:
        raise NoModel(f"no model registered as {what}: no registry yet under {data_dir}; {how}")
    memo = data_dir / "models" / "resolved.json"
    key = f"{name}@{alias}" if alias else f"{name}/{version}"
    if stamp is not None:
        hit = read_json(memo).get(key)
        if hit and hit.get("stamp") == stamp:
            return ModelRef(**hit["ref"]), None
    tracker = Tracker(data_dir, tracking_uri)
    ref = tracker.champion(name, alias) if alias else tracker.version(name, version or "")
    if ref is None:
        raise NoModel(f"no model registered as {what} in {tracker.uri}; {how}")
    if stamp is not None and store_stamp(data_dir) == stamp:  # nothing moved while we asked
        doc = read_json(memo) | {key: {"stamp": stamp, "ref": ref.__dict__}}
        write_atomic(memo, json.dumps(doc, indent=1))
    return ref, tracker
