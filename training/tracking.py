"""MLflow, and only here: runs with their parameters, curves and artifacts; the model registry with
its `champion` alias. Embedded default: SQLite tracking store and an artifact folder under
VSANDX_DATA_DIR; any tracking server by URI (VSANDX_MLFLOW_TRACKING_URI).

A registered version is an MLflow Model: a `python_function` flavour whose loader module is
diagnosis.pyfunc (nothing pickled), with a signature, an input example and a model card; the vsandx
model folder it loads (JSON config + safetensors written by models.base.Diagnoser.save) lies under
`data/vsandx`. So `mlflow.pyfunc.load_model("models:/vsandx-diagnoser@champion")` diagnoses bundles,
and `fetch_model` (training/model_fetch.py), the one way any caller of ours gets a model folder
(training, retraining, serving and the CLI), finds the same folder inside it (or a plain folder, as
versions before this were).

MLflow itself is imported on first use (`_mlflow()`): it costs 1.5 s and ~100 MB, which a `vsandx
diagnose` whose champion is already cached never needs to pay.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pipeline.tensors import SCHEMA_VERSION
from training.model_files import MODEL_DATA
from training.provenance import flat_params, git_tags, requirements

if TYPE_CHECKING:
    from mlflow import MlflowClient

CHAMPION = "champion"
MODEL_ARTIFACT = "model"
LOADER_MODULE = "diagnosis.pyfunc"
MODEL_CARD = "model_card.md"
MAX_PARAMS = 100  # per MLflow log_batch call
REGISTERED_DESCRIPTION = (
    "vsandx diagnoser: reads a vSAN/ESXi support bundle and names the faulty component (disk, disk "
    "group, NIC, host, cluster) and the fault, per the project's faults.md. Load with MLflow alone: "
    "mlflow.pyfunc.load_model('models:/<name>@champion').predict(pandas.DataFrame({'path': [bundle]})) "
    "returns one vsandx.diagnosis/1 document per bundle. Each version carries a model card (model_card.md)."
)
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

    def log_model_folder(self, folder: Path, card: str | None = None) -> None:
        """The model folder as an MLflow Model (pyfunc flavour, signature, input example) with its
        model card, logged under `model/` of this run."""
        import tempfile

        with tempfile.TemporaryDirectory(prefix="vsandx-mlmodel-") as tmp:
            path = Path(tmp) / MODEL_ARTIFACT
            save_pyfunc(folder, path)
            if card is not None:
                (path / MODEL_CARD).write_text(card)
            _mlflow().log_artifacts(str(path), MODEL_ARTIFACT)


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
        all_tags = {"pipeline_schema": SCHEMA_VERSION, **git_tags(), **(tags or {})}
        mlflow = _mlflow()
        with mlflow.start_run(experiment_id=self.experiment_id, run_name=name, tags=all_tags, nested=nested) as r:
            flat = list(flat_params(params).items())
            for i in range(0, len(flat), MAX_PARAMS):
                mlflow.log_params(dict(flat[i : i + MAX_PARAMS]))
            mlflow.log_dict({"params": dict(params), "config": dict(config or {}),
                             "pipeline_schema": SCHEMA_VERSION}, "config.json")  # fmt: skip
            yield Run(r.info.run_id)

    def register(
        self, run_id: str, name: str, tags: Mapping[str, str] | None = None, description: str | None = None
    ) -> ModelRef:
        """A new version of `name` from the run's model folder (no alias yet), with `description`."""
        try:
            self.client.create_registered_model(name, description=REGISTERED_DESCRIPTION)
        except _mlflow_error():  # it exists already
            if not self.client.get_registered_model(name).description:
                self.client.update_registered_model(name, description=REGISTERED_DESCRIPTION)
        source = f"{self.client.get_run(run_id).info.artifact_uri}/{MODEL_ARTIFACT}"
        all_tags = {"pipeline_schema": SCHEMA_VERSION, **(tags or {})}
        mv = self.client.create_model_version(name, source, run_id=run_id, tags=all_tags, description=description)
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


def save_pyfunc(folder: Path, path: Path) -> Path:
    """An MLflow Model at `path` around the vsandx model folder `folder` (copied to data/vsandx):
    the pyfunc flavour loads it through diagnosis.pyfunc, no pickle; input: a DataFrame with a `path`
    (string) or `content` (bytes) column per bundle; output: one diagnosis document per row."""
    import pandas as pd
    from mlflow.models.signature import ModelSignature
    from mlflow.types.schema import AnyType, ColSpec, Schema

    signature = ModelSignature(
        inputs=Schema([ColSpec("string", "path", required=False), ColSpec("binary", "content", required=False)]),
        outputs=Schema([ColSpec(AnyType(), "diagnosis")]),
    )
    import tempfile

    with tempfile.TemporaryDirectory(prefix="vsandx-stage-") as stage:
        # save_model copies the data folder under its own name: staged as `vsandx`, it lands at MODEL_DATA
        named = Path(stage) / MODEL_DATA.name
        named.symlink_to(folder.resolve(), target_is_directory=True)
        _mlflow().pyfunc.save_model(
            str(path),
            loader_module=LOADER_MODULE,
            data_path=str(named),
            signature=signature,
            input_example=pd.DataFrame({"path": ["/path/to/vsan-support-bundle.tgz"]}),
            pip_requirements=requirements(),
        )
    return path


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
