"""MLflow, and only here: runs with their parameters, curves and artifacts; the model registry with
its `champion` alias. Embedded default: SQLite tracking store and an artifact folder under
VSANDX_DATA_DIR; any tracking server by URI (VSANDX_MLFLOW_TRACKING_URI).

Models are registered as plain artifact folders (JSON config + safetensors written by
models.base.Diagnoser.save), so loading a champion never unpickles anything. `fetch_model` is the one
way any caller gets a model folder: training, retraining, serving and the CLI.

MLflow itself is imported on first use (`_mlflow()`): it costs 1.5 s and ~100 MB, which a `vsandx
diagnose` whose champion is already cached never needs to pay.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pipeline.tensors import SCHEMA_VERSION

if TYPE_CHECKING:
    from mlflow import MlflowClient

CHAMPION = "champion"
MODEL_ARTIFACT = "model"
logging.getLogger("alembic").setLevel(logging.WARNING)


def _mlflow() -> ModuleType:
    # No progress bars on stderr: a CLI's stderr is for errors, a worker's log for events.
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    import mlflow

    return mlflow


def _mlflow_error() -> type[Exception]:
    from mlflow.exceptions import MlflowException

    return MlflowException


@dataclass(frozen=True)
class ModelRef:
    name: str
    version: str
    run_id: str
    source: str  # artifact URI of the model folder
    tags: dict[str, str]


class Run:
    """An active MLflow run; thin so that callers never touch mlflow."""

    def __init__(self, run_id: str) -> None:
        self.id = run_id

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        _mlflow().log_metrics({k: float(v) for k, v in metrics.items()}, step=step)

    def log_dict(self, doc: Mapping[str, Any] | list[Any], name: str) -> None:
        _mlflow().log_dict(doc if isinstance(doc, list) else dict(doc), name)  # any JSON

    def set_tags(self, tags: Mapping[str, str]) -> None:
        _mlflow().set_tags(dict(tags))

    def log_artifact(self, path: Path, folder: str | None = None) -> None:
        _mlflow().log_artifact(str(path), folder)

    def log_model_folder(self, folder: Path) -> None:
        _mlflow().log_artifacts(str(folder), MODEL_ARTIFACT)


class Tracker:
    def __init__(self, data_dir: Path, uri: str | None = None, experiment: str = "vsandx") -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.uri = uri or embedded_uri(data_dir)
        mlflow = _mlflow()
        mlflow.set_tracking_uri(self.uri)
        mlflow.set_registry_uri(self.uri)
        self.client: MlflowClient = mlflow.MlflowClient(self.uri, self.uri)
        exp = self.client.get_experiment_by_name(experiment)
        if exp is None:
            artifacts = (data_dir / "mlartifacts").resolve().as_uri() if uri is None else None
            self.experiment_id = self.client.create_experiment(experiment, artifact_location=artifacts)
        else:
            self.experiment_id = exp.experiment_id

    @contextmanager
    def run(
        self,
        name: str,
        params: Mapping[str, Any],
        config: Mapping[str, Any] | None = None,
        tags: Mapping[str, str] | None = None,
        nested: bool = False,
    ) -> Iterator[Run]:
        """A run that records its parameters, the resolved config and the pipeline schema version."""
        all_tags = {"pipeline_schema": SCHEMA_VERSION, **(tags or {})}
        mlflow = _mlflow()
        with mlflow.start_run(experiment_id=self.experiment_id, run_name=name, tags=all_tags, nested=nested) as r:
            mlflow.log_params({k: _param(v) for k, v in params.items()})
            mlflow.log_dict({"params": dict(params), "config": dict(config or {}),
                             "pipeline_schema": SCHEMA_VERSION}, "config.json")  # fmt: skip
            yield Run(r.info.run_id)

    def register(self, run_id: str, name: str, tags: Mapping[str, str] | None = None) -> ModelRef:
        """A new version of `name` from the run's model folder (no alias yet)."""
        try:
            self.client.create_registered_model(name)
        except _mlflow_error():  # it exists already
            pass
        source = f"{self.client.get_run(run_id).info.artifact_uri}/{MODEL_ARTIFACT}"
        all_tags = {"pipeline_schema": SCHEMA_VERSION, **(tags or {})}
        mv = self.client.create_model_version(name, source, run_id=run_id, tags=all_tags)
        return ModelRef(name, str(mv.version), run_id, source, dict(all_tags))

    def promote(self, ref: ModelRef, alias: str = CHAMPION) -> None:
        self.client.set_registered_model_alias(ref.name, alias, ref.version)

    def champion(self, name: str, alias: str = CHAMPION) -> ModelRef | None:
        try:
            mv = self.client.get_model_version_by_alias(name, alias)
        except _mlflow_error():
            return None
        return ModelRef(name, str(mv.version), mv.run_id or "", mv.source or "", dict(mv.tags))

    def version(self, name: str, version: str) -> ModelRef | None:
        try:
            mv = self.client.get_model_version(name, version)
        except _mlflow_error():
            return None
        return ModelRef(name, str(mv.version), mv.run_id or "", mv.source or "", dict(mv.tags))

    def run_json(self, run_id: str, name: str) -> Any:
        """A JSON artifact a run logged (Run.log_dict), or None when it has none."""
        try:
            return _mlflow().artifacts.load_dict(f"runs:/{run_id}/{name}")
        except (_mlflow_error(), OSError, ValueError):
            return None


def embedded_uri(data_dir: Path) -> str:
    """The embedded tracking store: SQLite under the data folder."""
    return f"sqlite:///{(data_dir / 'mlflow.db').resolve()}"


def _param(v: Any) -> str:
    """MLflow params are strings of at most 6000 characters."""
    text = v if isinstance(v, str) else json.dumps(v, default=str)
    return text[:6000]


class NoModel(LookupError):
    """No model at that URI, or none registered under that name and alias or version."""


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
    name, alias, version = _parse_model_uri(uri or f"models:/{default_name}@{CHAMPION}")
    ref, tracker = _resolve(data_dir, tracking_uri, name, alias, version)
    final = data_dir / "models" / name / ref.version
    return ModelFolder(download_once(ref.source, final, data_dir, tracking_uri, tracker), name, ref.version, ref)


def _parse_model_uri(uri: str) -> tuple[str, str | None, str | None]:
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


def _resolve(
    data_dir: Path, tracking_uri: str | None, name: str, alias: str | None, version: str | None
) -> tuple[ModelRef, Tracker | None]:
    """The registry entry, and the Tracker that asked for it (None when the memo answered)."""
    what = f"{name}@{alias}" if alias else f"{name} version {version}"
    how = "train one with `vsandx train --quick`, or give a model folder with --model"
    stamp = _store_stamp(data_dir) if tracking_uri is None else None
    if tracking_uri is None and stamp is None:
        raise NoModel(f"no model registered as {what}: no registry yet under {data_dir}; {how}")
    memo = data_dir / "models" / "resolved.json"
    key = f"{name}@{alias}" if alias else f"{name}/{version}"
    if stamp is not None:
        hit = _read_json(memo).get(key)
        if hit and hit.get("stamp") == stamp:
            return ModelRef(**hit["ref"]), None
    tracker = Tracker(data_dir, tracking_uri)
    ref = tracker.champion(name, alias) if alias else tracker.version(name, version or "")
    if ref is None:
        raise NoModel(f"no model registered as {what} in {tracker.uri}; {how}")
    if stamp is not None and _store_stamp(data_dir) == stamp:  # nothing moved while we asked
        doc = _read_json(memo) | {key: {"stamp": stamp, "ref": ref.__dict__}}
        _write_atomic(memo, json.dumps(doc, indent=1))
    return ref, tracker


def _store_stamp(data_dir: Path) -> list[int] | None:
    """Size and mtime of the embedded SQLite store and its journals; None when there is no store."""
    db = data_dir / "mlflow.db"
    if not db.exists():
        return None
    out: list[int] = []
    for p in (db, db.with_name("mlflow.db-wal"), db.with_name("mlflow.db-journal")):
        st = p.stat() if p.exists() else None
        out += [st.st_size, st.st_mtime_ns] if st else [-1, -1]
    return out


def download_once(
    source: str, final: Path, data_dir: Path, tracking_uri: str | None = None, tracker: Tracker | None = None
) -> Path:
    """The artifact folder `source` (a model's, or runs:/<id>/report) under `final`, downloaded once:
    into a private folder, then renamed into place. Returns the folder holding the artifacts."""
    final = final.resolve()
    done = final / ".complete"
    if not done.exists():
        import shutil
        import tempfile

        final.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}-"))
        try:
            if tracker is None:  # points MLflow at the store `runs:/` URIs live in
                Tracker(data_dir, tracking_uri)
            got = Path(_mlflow().artifacts.download_artifacts(artifact_uri=source, dst_path=str(work))).resolve()
            (work / ".complete").write_text(str(got.relative_to(work)))
            if final.exists() and not done.exists():  # an unfinished download of older code: not trusted
                stale = final.with_name(f".{final.name}-stale-{os.getpid()}")
                os.rename(final, stale)
                shutil.rmtree(stale, ignore_errors=True)
            os.rename(work, final)
        except OSError:  # another process was first: its folder is complete (renames are atomic)
            shutil.rmtree(work, ignore_errors=True)
            if not done.exists():
                raise
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
    return final / done.read_text()


def _read_json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)
