"""The registered model as MLflow sees it: the `loader_module` of its `python_function` flavour.

A registered version's artifact folder is an MLflow Model (training.tracking writes the `MLmodel` file,
its signature and an input example); the vsandx model folder (JSON config and safetensors, as
models.base.Diagnoser.save writes it) lies under `data/vsandx`. MLflow's own client loads it with
nothing pickled:

    import mlflow, pandas as pd
    model = mlflow.pyfunc.load_model("models:/vsandx-diagnoser@champion")
    docs = model.predict(pd.DataFrame({"path": ["bundle.tgz"]}))   # or {"content": [archive bytes]}

`predict` answers one diagnosis document (interface.md, `vsandx.diagnosis/1`) per row, exactly what
`vsandx diagnose --json` prints. This module never imports MLflow: MLflow imports it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from diagnosis.predictor import Predictor
from models.base import load_model
from pipeline.config import PipelineConfig

DATA_PATH = "vsandx"  # the model folder's name under the MLflow Model's data/ folder
COLUMNS = ("path", "content")  # the signature's two optional columns: a bundle path, or its bytes


class BadInput(ValueError):
    """A row that names no bundle, or names it in a form predict cannot read."""


def _cell(v: Any) -> Any:
    """None for what pandas writes into a missing optional column (None, NaN)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return v


def _rows(model_input: Any) -> Iterable[tuple[int, Any]]:
    """(row number, bundle) for a DataFrame with `path` and/or `content`, a list of rows or bundles,
    a {"path": [...]} / {"content": [...]} mapping, or one path or archive."""
    if hasattr(model_input, "to_dict") and hasattr(model_input, "columns"):  # a pandas DataFrame
        model_input = model_input.to_dict(orient="records")
    elif isinstance(model_input, Mapping):
        cols = {c: list(model_input[c]) for c in COLUMNS if c in model_input}
        n = max((len(v) for v in cols.values()), default=0)
        model_input = [{c: v[i] if i < len(v) else None for c, v in cols.items()} for i in range(n)]
    elif isinstance(model_input, str | bytes | Path):
        model_input = [model_input]
    for i, row in enumerate(model_input):
        if isinstance(row, Mapping):
            path, content = _cell(row.get("path")), _cell(row.get("content"))
            if (path is None) == (content is None):
                raise BadInput(f"row {i}: give exactly one of 'path' (a bundle path) or 'content' (its bytes)")
            row = path if path is not None else content
        if isinstance(row, bytearray | memoryview):
            row = bytes(row)
        if not isinstance(row, str | bytes | Path):
            raise BadInput(f"row {i}: a bundle is a path or the archive's bytes, not {type(row).__name__}")
        yield i, row


class PyfuncDiagnoser:
    """What `mlflow.pyfunc.load_model` hands back (wrapped in MLflow's PyFuncModel)."""

    def __init__(self, predictor: Predictor) -> None:
        self.predictor = predictor

    def predict(self, model_input: Any, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """One diagnosis document per row; a bundle the pipeline refuses raises its error (which names
        the bundle and the reason), as `vsandx diagnose` does."""
        docs = []
        for i, bundle in _rows(model_input):
            name = str(bundle) if not isinstance(bundle, bytes) else f"<row {i}>"
            docs.append(self.predictor.diagnose(bundle if isinstance(bundle, bytes) else Path(bundle), name))
        return docs


def _load_pyfunc(data_path: str) -> PyfuncDiagnoser:
    """MLflow's entry point: `data_path` is the vsandx model folder inside the downloaded MLflow Model.
    Bundles are read with the VSANDX_PIPELINE_* settings of the loading process, as the CLI reads them."""
    folder = Path(data_path)
    model = load_model(folder)
    # the registry's version is not in the folder: MLflow knows which one it loaded, the document says how
    return PyfuncDiagnoser(Predictor(model, model.name, "mlflow-pyfunc", PipelineConfig.from_settings()))
