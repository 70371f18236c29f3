"""The one interface every diagnoser implements, in the scikit-learn estimator style.

    model = create_model("cnn_base").fit(X, y)      # X: Sequence[BundleTensors], y: [{component id: label}]
    model.predict_proba(X)  # [{component id: (len(LABELS),) probabilities}], 0 where a label can't apply
    model.predict(X)        # [{component id: "none" | fault id}]
    model.save(path); Diagnoser.load(path)

Hyperparameters are the keyword arguments of `__init__` (so get_params/set_params/clone work);
everything learned lives in attributes ending with `_`.

On disk a model is a folder: `config.json` (model name, resolved hyperparameters, LABELS, the
pipeline's tensor SCHEMA_VERSION, the statics kept from learnt models (models.features.RULES_ONLY_STATIC)
and the model's small JSON state) and `state.safetensors` (every
array). Nothing is pickled, so loading a file never runs code from it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final, Self

import numpy as np
from safetensors.numpy import load_file, save_file

from models.estimator import Estimator, check_is_fitted
from models.features import RULES_ONLY_STATIC
from pipeline.tensors import SCHEMA_VERSION, BundleTensors
from vsandx.faults import COMPONENT_KINDS, LABELS, NONE, faults_for_kind

FORMAT: Final = "vsandx.model/1"
CONFIG_FILE: Final = "config.json"
STATE_FILE: Final = "state.safetensors"

# Per kind, the labels a component of that kind can carry, and where they sit in LABELS.
KIND_LABELS: Final[dict[str, tuple[str, ...]]] = {k: (NONE, *faults_for_kind(k)) for k in COMPONENT_KINDS}
KIND_LABEL_INDEX: Final[dict[str, np.ndarray]] = {
    k: np.array([LABELS.index(lb) for lb in v], dtype=np.int64) for k, v in KIND_LABELS.items()
}

Labels = Mapping[str, str]  # one bundle's truth: component id -> "none" | fault id
Proba = dict[str, np.ndarray]  # one bundle's scores: component id -> (len(LABELS),) float64


class SchemaMismatch(ValueError):
    """A saved model was trained on tensors of another pipeline schema version, or read other inputs of
    them than this code gives a learnt model."""


# RULES_ONLY_STATIC as a saved config records it. A model saved before the key existed read every static;
# served by this code it would see those statics as unobserved, so its config must match.
KEPT_FROM_LEARNT: Final[dict[str, list[str]]] = {k: sorted(v) for k, v in sorted(RULES_ONLY_STATIC.items())}


def kind_targets(bt: BundleTensors, y: Labels, kind: str) -> np.ndarray:
    """(n_components,) int64: each component's label as an index into KIND_LABELS[kind]; -1 = unlabelled."""
    allowed = KIND_LABELS[kind]
    out = np.full(len(bt.kinds[kind].ids), -1, dtype=np.int64)
    for i, cid in enumerate(bt.kinds[kind].ids):
        label = y.get(cid)
        if label is None:
            continue
        if label not in allowed:
            raise ValueError(f"{cid}: label {label!r} cannot apply to a {kind}; expected one of {allowed}")
        out[i] = allowed.index(label)
    return out


def expand_proba(kind: str, local: np.ndarray) -> np.ndarray:
    """(n, len(KIND_LABELS[kind])) -> (n, len(LABELS)) with zeros where a label can't apply."""
    full = np.zeros((local.shape[0], len(LABELS)), dtype=np.float64)
    full[:, KIND_LABEL_INDEX[kind]] = local
    return full


def check_Xy(X: Sequence[BundleTensors], y: Sequence[Labels] | None = None) -> None:
    if len(X) == 0:
        raise ValueError("no bundles")
    if y is not None and len(X) != len(y):
        raise ValueError(f"{len(X)} bundles but {len(y)} label sets")
    for bt in X:
        if bt.schema_version != SCHEMA_VERSION:
            raise SchemaMismatch(f"tensors of schema {bt.schema_version!r}; this code expects {SCHEMA_VERSION!r}")


class Diagnoser(Estimator):
    """Base class: per-component fault classification of whole bundles."""

    default_name: ClassVar[str] = ""  # registry name saved when `model_name` was never set
    model_name: str = ""  # set by create_model (not a hyperparameter: clone() keeps the class default)

    # -- what a subclass provides ------------------------------------------------------------------
    def fit(
        self,
        X: Sequence[BundleTensors],
        y: Sequence[Labels],
        eval_set: tuple[Sequence[BundleTensors], Sequence[Labels]] | None = None,
    ) -> Self:
        """Learn from bundles and their labels. `eval_set` is a validation set for models that stop
        early on one (the CNNs); the others ignore it."""
        raise NotImplementedError

    def predict_proba(self, X: Sequence[BundleTensors]) -> list[Proba]:
        raise NotImplementedError

    def _get_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Everything learned: (JSON-able metadata, named arrays)."""
        raise NotImplementedError

    def _set_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        raise NotImplementedError

    # -- shared behaviour --------------------------------------------------------------------------
    def predict(self, X: Sequence[BundleTensors]) -> list[dict[str, str]]:
        """The most probable label of every component (argmax of predict_proba)."""
        return [{cid: LABELS[int(np.argmax(p))] for cid, p in probs.items()} for probs in self.predict_proba(X)]

    def __sklearn_clone__(self) -> Self:
        """sklearn.clone: same hyperparameters, nothing fitted, and the registry name kept."""
        new = type(self)(**self.get_params(deep=False))
        new.model_name = self.model_name
        return new

    @property
    def name(self) -> str:
        return self.model_name or self.default_name or type(self).__name__

    def save(self, path: str | Path) -> Path:
        """Write the fitted model to the folder `path` (created; existing files replaced)."""
        check_is_fitted(self)
        meta, arrays = self._get_state()
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        save_file({k: np.ascontiguousarray(v) for k, v in arrays.items()}, str(folder / STATE_FILE))
        config = {
            "format": FORMAT,
            "model": self.name,
            "class": type(self).__name__,
            "params": self.get_params(deep=False),
            "labels": list(LABELS),
            "schema_version": SCHEMA_VERSION,
            "rules_only_static": KEPT_FROM_LEARNT,
            "state": meta,
        }
        (folder / CONFIG_FILE).write_text(json.dumps(config, indent=1, sort_keys=True) + "\n")
        return folder

    @classmethod
    def load(cls, path: str | Path) -> Diagnoser:
        """Read a folder written by `save`. Refuses other schema versions or label sets."""
        from models.registry import create_model  # the registry imports this module

        folder = Path(path)
        config = json.loads((folder / CONFIG_FILE).read_text())
        if config.get("format") != FORMAT:
            raise ValueError(f"{folder}: not a vsandx model (format {config.get('format')!r}, expected {FORMAT!r})")
        if config.get("schema_version") != SCHEMA_VERSION:
            raise SchemaMismatch(
                f"{folder}: model was trained on pipeline tensors {config.get('schema_version')!r} but this "
                f"pipeline produces {SCHEMA_VERSION!r}; retrain it on the current schema"
            )
        if (kept := config.get("rules_only_static", {})) != KEPT_FROM_LEARNT:
            raise SchemaMismatch(
                f"{folder}: model was trained keeping {kept or 'no statics'} from learnt models, but this code "
                f"keeps {KEPT_FROM_LEARNT} from them (models.features.RULES_ONLY_STATIC); retrain it on "
                "the current code"
            )
        if tuple(config.get("labels", ())) != LABELS:
            raise ValueError(f"{folder}: model labels {config.get('labels')} differ from vsandx.faults.LABELS")
        model = create_model(config["model"], **config["params"])
        if not isinstance(model, cls):
            raise TypeError(f"{folder}: holds a {type(model).__name__}, not a {cls.__name__}")
        model._set_state(config["state"], load_file(str(folder / STATE_FILE)))
        return model


def load_model(path: str | Path) -> Diagnoser:
    """Any saved diagnoser, whatever its family."""
    return Diagnoser.load(path)
