"""MLflow, and only here: runs with their parameters, curves and artifacts; the model registry with
its `champion` alias. Embedded default: SQLite tracking store and an artifact folder under
VSANDX_DATA_DIR; any tracking server by URI (VSANDX_MLFLOW_TRACKING_URI).

Models are registered as plain artifact folders (JSON config + safetensors written by
models.base.Diagnoser.save), so loading a champion never unpickles anything.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mlflow
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException

from pipeline.tensors import SCHEMA_VERSION

CHAMPION = "champion"
MODEL_ARTIFACT = "model"
logging.getLogger("alembic").setLevel(logging.WARNING)


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
        mlflow.log_metrics({k: float(v) for k, v in metrics.items()}, step=step)

    def log_dict(self, doc: Mapping[str, Any] | list[Any], name: str) -> None:
        mlflow.log_dict(doc if isinstance(doc, list) else dict(doc), name)  # type: ignore[arg-type]  # any JSON

    def set_tags(self, tags: Mapping[str, str]) -> None:
        mlflow.set_tags(dict(tags))

    def log_artifact(self, path: Path, folder: str | None = None) -> None:
        mlflow.log_artifact(str(path), folder)

    def log_model_folder(self, folder: Path) -> None:
        mlflow.log_artifacts(str(folder), MODEL_ARTIFACT)


class Tracker:
    def __init__(self, data_dir: Path, uri: str | None = None, experiment: str = "vsandx") -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.uri = uri or f"sqlite:///{(data_dir / 'mlflow.db').resolve()}"
        mlflow.set_tracking_uri(self.uri)
        mlflow.set_registry_uri(self.uri)
        self.client = MlflowClient(self.uri, self.uri)
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
        with mlflow.start_run(experiment_id=self.experiment_id, run_name=name, tags=all_tags, nested=nested) as r:
            mlflow.log_params({k: _param(v) for k, v in params.items()})
            mlflow.log_dict({"params": dict(params), "config": dict(config or {}),
                             "pipeline_schema": SCHEMA_VERSION}, "config.json")  # fmt: skip
            yield Run(r.info.run_id)

    def register(self, run_id: str, name: str, tags: Mapping[str, str] | None = None) -> ModelRef:
        """A new version of `name` from the run's model folder (no alias yet)."""
        with suppress(MlflowException):  # it exists already
            self.client.create_registered_model(name)
        source = f"{self.client.get_run(run_id).info.artifact_uri}/{MODEL_ARTIFACT}"
        all_tags = {"pipeline_schema": SCHEMA_VERSION, **(tags or {})}
        mv = self.client.create_model_version(name, source, run_id=run_id, tags=all_tags)
        return ModelRef(name, str(mv.version), run_id, source, dict(all_tags))

    def promote(self, ref: ModelRef, alias: str = CHAMPION) -> None:
        self.client.set_registered_model_alias(ref.name, alias, ref.version)

    def champion(self, name: str, alias: str = CHAMPION) -> ModelRef | None:
        try:
            mv = self.client.get_model_version_by_alias(name, alias)
        except MlflowException:
            return None
        return ModelRef(name, str(mv.version), mv.run_id or "", mv.source or "", dict(mv.tags))

    def run_json(self, run_id: str, name: str) -> Any:
        """A JSON artifact a run logged (Run.log_dict), or None when it has none."""
        try:
            return mlflow.artifacts.load_dict(f"runs:/{run_id}/{name}")
        except (MlflowException, OSError, ValueError):
            return None

    def download(self, ref: ModelRef, dst: Path) -> Path:
        dst.mkdir(parents=True, exist_ok=True)
        return Path(mlflow.artifacts.download_artifacts(artifact_uri=ref.source, dst_path=str(dst)))


def _param(v: Any) -> str:
    """MLflow params are strings of at most 6000 characters."""
    text = v if isinstance(v, str) else json.dumps(v, default=str)
    return text[:6000]
