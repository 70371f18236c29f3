"""An ensemble of fitted diagnosers: the (weighted) average of their probabilities (the sweep's top-k
CNNs, and the expert rules beside them as a prior, training.run.served_ensemble).

An under-driven cluster stands only where the rest of the bundle reads healthy (`alone`, models.alone),
and not where vscsiStats counted three or more I/Os outstanding a virtual disk (`counted`, models.alone).

A kind may weigh the members differently (`kind_weights`): the expert rules generalise better than the
CNNs to under-driven clusters a held-out cause renders, not to every kind (README, "Where accuracy stands").

Built two ways: `EnsembleDiagnoser(members=[(name, params), ...]).fit(X, y)` trains every member, and
`EnsembleDiagnoser.of(fitted)` wraps models a sweep already trained. Saved like any diagnoser: each
member's JSON state and arrays live inside the ensemble's own config and safetensors file, keyed by
member index, so loading runs no code from the file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Self

import numpy as np

from models.alone import ALONE, alone, counted, threads_counted
from models.base import Diagnoser, Labels, Proba, check_Xy
from models.estimator import check_is_fitted
from models.features import hold_features
from models.registry import create_model, register_model
from pipeline.tensors import BundleTensors
from vsandx.components import kind_of


@register_model("ensemble", description="average of the probabilities of several fitted diagnosers")
class EnsembleDiagnoser(Diagnoser):
    default_name = "ensemble"

    def __init__(
        self,
        members: Sequence[tuple[str, dict[str, Any]]] = (),
        weights: Sequence[float] = (),
        kind_weights: Mapping[str, Sequence[float]] | None = None,
        alone: Sequence[str] = ALONE,
    ) -> None:
        self.members = members
        self.weights = weights  # one per member; empty: all equal
        self.kind_weights = kind_weights  # component kind -> one weight per member, replacing `weights` there
        self.alone = alone  # cluster faults that stand only where the rest reads healthy (models.alone)

    @classmethod
    def of(
        cls,
        fitted: Sequence[Diagnoser],
        weights: Sequence[float] = (),
        kind_weights: Mapping[str, Sequence[float]] | None = None,
        alone: Sequence[str] = ALONE,
    ) -> EnsembleDiagnoser:
        if not fitted:
            raise ValueError("an ensemble needs at least one fitted model")
        for m in fitted:
            check_is_fitted(m)
        by_kind = {k: [float(x) for x in w] for k, w in (kind_weights or {}).items()} or None
        ens = cls(
            [(m.name, m.get_params(deep=False)) for m in fitted], [float(w) for w in weights], by_kind, tuple(alone)
        )
        ens.model_name = "ensemble"
        ens.models_ = list(fitted)
        return ens

    def fit(
        self,
        X: Sequence[BundleTensors],
        y: Sequence[Labels],
        eval_set: tuple[Sequence[BundleTensors], Sequence[Labels]] | None = None,
    ) -> Self:
        check_Xy(X, y)
        if not self.members:
            raise ValueError("members is empty: name the models to train")
        self.models_ = [create_model(name, **params).fit(X, y, eval_set=eval_set) for name, params in self.members]
        return self

    def predict_proba(self, X: Sequence[BundleTensors]) -> list[Proba]:
        check_is_fitted(self)
        # every member reads each bundle's engineered rows and rule margins: kept for the whole list, not
        # the memo's last 16 bundles, which a list of more had evicted before the next member came to it
        # (the quick champion's four members computed the rules' evidence four times a bundle)
        with hold_features(len(X)):
            per_model = [m.predict_proba(X) for m in self.models_]
        w = self._checked(self.weights if len(self.weights) else [1.0] * len(self.models_))
        by_kind = {k: self._checked(v) for k, v in (self.kind_weights or {}).items()}
        out = []
        for b in range(len(X)):
            ids = per_model[0][b].keys()
            avg = {
                cid: np.average(
                    [pm[b][cid] for pm in per_model], axis=0, weights=by_kind.get(kind_of(cid), w) if by_kind else w
                )
                for cid in ids
            }
            out.append(counted(alone(avg, self.alone), threads_counted(X[b])))
        return out

    def _checked(self, weights: Sequence[float]) -> np.ndarray:
        w = np.asarray(weights, float)
        if w.shape != (len(self.models_),) or (w < 0).any() or w.sum() <= 0:
            raise ValueError(f"weights {list(weights)} do not fit {len(self.models_)} members")
        return w

    def _get_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        meta: dict[str, Any] = {"members": []}
        arrays: dict[str, np.ndarray] = {}
        for i, m in enumerate(self.models_):
            m_meta, m_arrays = m._get_state()
            meta["members"].append({"name": m.name, "params": m.get_params(deep=False), "state": m_meta})
            arrays.update({f"{i}/{k}": v for k, v in m_arrays.items()})
        return meta, arrays

    def _set_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        models = []
        for i, doc in enumerate(meta["members"]):
            m = create_model(doc["name"], **doc["params"])
            prefix = f"{i}/"
            m._set_state(doc["state"], {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)})
            models.append(m)
        self.models_ = models
