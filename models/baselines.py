"""The classical baselines PerfPsychic compared its CNN with: SVM, logistic regression, MLP, multinomial NB.

Each is one scikit-learn classifier per component kind, over the engineered features of
models/features.py and that kind's valid labels (none + faults_for_kind). Class imbalance ("none" is
~98 % of components) is handled with sample weights (n / (k * count_c)) ** class_weight_power:
0 = unweighted, 1 = fully balanced. A kind whose training rows show a single label predicts that
label's one-hot (e.g. no disk fault in a small training set).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Self

import numpy as np
from sklearn.calibration import CalibratedClassifierCV
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import MultinomialNB
from sklearn.neural_network import MLPClassifier
from sklearn.svm import SVC

from models.base import KIND_LABELS, Diagnoser, Labels, Proba, check_Xy, expand_proba, kind_targets
from models.codec import decode, encode
from models.estimator import check_is_fitted
from models.features import stack_features
from models.registry import register_model
from models.scalers import ClippedScaler, QuantileBinner
from models.seedbag import SeedBag
from pipeline.tensors import BundleTensors
from vsandx.faults import COMPONENT_KINDS


def balanced_weights(y: np.ndarray, power: float) -> np.ndarray:
    """Per-row weights (n / (k * count[y])) ** power, normalised to mean 1."""
    classes, counts = np.unique(y, return_counts=True)
    per_class = (len(y) / (len(classes) * counts)) ** power
    w = per_class[np.searchsorted(classes, y)]
    return w / w.mean()


class FeatureBaseline(Diagnoser):
    """A scikit-learn classifier per component kind over engineered per-component features."""

    def __init__(self, class_weight_power: float = 0.5, random_state: int = 0) -> None:
        self.class_weight_power = class_weight_power
        self.random_state = random_state

    # What a family provides: the input transform and the classifier (both unfitted).
    def _make_transform(self) -> Any:
        return ClippedScaler(clip=5.0)

    def _make_classifier(self) -> Any:
        raise NotImplementedError

    def _fit_classifier(self, clf: Any, x: np.ndarray, y: np.ndarray, w: np.ndarray) -> Any:
        return clf.fit(x, y, sample_weight=w)

    def _features(self, X: Sequence[BundleTensors]) -> dict[str, np.ndarray]:
        """Per kind, one row per component, bundle by bundle in `ids` order."""
        return stack_features(list(X))[0]

    def fit(
        self,
        X: Sequence[BundleTensors],
        y: Sequence[Labels],
        eval_set: tuple[Sequence[BundleTensors], Sequence[Labels]] | None = None,
    ) -> Self:
        """One classifier per kind on the stacked per-component features (eval_set is not used)."""
        check_Xy(X, y)
        return self._fit_features(self._features(X), X, y)

    def _fit_features(self, feats: dict[str, np.ndarray], X: Sequence[BundleTensors], y: Sequence[Labels]) -> Self:
        """fit's work once the features of X are computed (`feats`: what _features(X) gives)."""
        self.transforms_: dict[str, Any] = {}
        self.classifiers_: dict[str, Any] = {}
        self.constant_: dict[str, np.ndarray] = {}  # kind -> local probabilities when no classifier
        self.n_features_: dict[str, int] = {k: int(f.shape[1]) for k, f in feats.items()}
        for kind in COMPONENT_KINDS:
            target = np.concatenate([kind_targets(bt, lab, kind) for bt, lab in zip(X, y, strict=True)])
            keep = target >= 0
            xk, yk = feats[kind][keep], target[keep]
            classes = np.unique(yk)
            if len(classes) < 2:
                const = np.zeros(len(KIND_LABELS[kind]))
                const[classes[0] if len(classes) else 0] = 1.0
                self.constant_[kind] = const
                continue
            transform = self._make_transform().fit(xk)
            w = balanced_weights(yk, self.class_weight_power)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                clf = self._fit_classifier(self._make_classifier(), transform.transform(xk), yk, w)
            self.transforms_[kind], self.classifiers_[kind] = transform, clf
        return self

    def predict_proba(self, X: Sequence[BundleTensors]) -> list[Proba]:
        check_is_fitted(self)
        check_Xy(X)
        feats = self._features(X)
        out: list[Proba] = [{} for _ in X]
        for kind in COMPONENT_KINDS:
            n = len(feats[kind])
            if n == 0:
                continue
            if kind in self.classifiers_:
                clf = self.classifiers_[kind]
                local = np.zeros((n, len(KIND_LABELS[kind])))
                local[:, clf.classes_] = clf.predict_proba(self.transforms_[kind].transform(feats[kind]))
                local /= local.sum(1, keepdims=True)
            else:
                local = np.tile(self.constant_[kind], (n, 1))
            full = expand_proba(kind, local)
            row = 0
            for b, bt in enumerate(X):
                ids = bt.kinds[kind].ids
                out[b].update(zip(ids, full[row : row + len(ids)], strict=True))
                row += len(ids)
        return out

    def _get_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        arrays: dict[str, np.ndarray] = {}
        meta = {
            "transforms": encode(self.transforms_, "transforms", arrays),
            "classifiers": encode(self.classifiers_, "classifiers", arrays),
            "constant": encode(self.constant_, "constant", arrays),
            "n_features": self.n_features_,
        }
        return meta, arrays

    def _set_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.transforms_ = decode(meta["transforms"], arrays)
        self.classifiers_ = decode(meta["classifiers"], arrays)
        self.constant_ = decode(meta["constant"], arrays)
        self.n_features_ = dict(meta["n_features"])


@register_model("svm", space={"C": ("loguniform", 0.1, 100.0), "class_weight_power": ("uniform", 0.0, 1.0)})
class SVMDiagnoser(FeatureBaseline):
    """RBF support vector machine per kind, Platt-calibrated (sigmoid on 3-fold decision values)."""

    default_name = "svm"

    def __init__(
        self, C: float = 3.0, gamma: str | float = "scale", class_weight_power: float = 0.5, random_state: int = 0
    ) -> None:
        super().__init__(class_weight_power, random_state)
        self.C = C
        self.gamma = gamma

    def _make_classifier(self) -> Any:
        svc = SVC(C=self.C, gamma=self.gamma, kernel="rbf", random_state=self.random_state)
        return CalibratedClassifierCV(svc, method="sigmoid", cv=3, ensemble=False)

    def _fit_classifier(self, clf: Any, x: np.ndarray, y: np.ndarray, w: np.ndarray) -> Any:
        # 3-fold calibration needs 3 rows of every label: repeat the rows of rarer labels.
        classes, counts = np.unique(y, return_counts=True)
        extra = [
            np.repeat(np.flatnonzero(y == c), -(-3 // n) - 1) for c, n in zip(classes, counts, strict=True) if n < 3
        ]
        if extra:
            idx = np.concatenate([np.arange(len(y)), *extra])
            x, y, w = x[idx], y[idx], w[idx]
        return clf.fit(x, y, sample_weight=w)


@register_model("logreg", space={"C": ("loguniform", 1e-3, 10.0), "class_weight_power": ("uniform", 0.0, 1.0)})
class LogRegDiagnoser(FeatureBaseline):
    """Multinomial logistic regression per kind (L2, lbfgs)."""

    default_name = "logreg"

    def __init__(
        self, C: float = 0.1, max_iter: int = 500, class_weight_power: float = 0.5, random_state: int = 0
    ) -> None:
        super().__init__(class_weight_power, random_state)
        self.C = C
        self.max_iter = max_iter

    def _make_classifier(self) -> Any:
        return LogisticRegression(C=self.C, max_iter=self.max_iter, random_state=self.random_state)


@register_model(
    "mlp",
    space={
        "hidden": ("choice", [32, 64, 128, 256]),
        "layers": ("int", 1, 3),
        "alpha": ("loguniform", 1e-5, 1e-1),
        "learning_rate_init": ("loguniform", 1e-4, 1e-2),
        "class_weight_power": ("uniform", 0.0, 1.0),
    },
)
class MLPDiagnoser(FeatureBaseline):
    """Multi-layer perceptron per kind (ReLU, Adam): `seeds` networks from random_state on, averaged
    (models.seedbag: one network's minimum moved its false calls on healthy disks 1-31 in 400 bundles)."""

    default_name = "mlp"

    def __init__(
        self,
        hidden: int = 64,
        layers: int = 1,
        alpha: float = 1e-3,
        learning_rate_init: float = 1e-3,
        max_iter: int = 200,
        class_weight_power: float = 0.5,
        random_state: int = 0,
        seeds: int = 5,
    ) -> None:
        super().__init__(class_weight_power, random_state)
        self.seeds = seeds
        self.hidden = hidden
        self.layers = layers
        self.alpha = alpha
        self.learning_rate_init = learning_rate_init
        self.max_iter = max_iter

    def _make_classifier(self) -> Any:
        net = MLPClassifier(
            hidden_layer_sizes=(self.hidden,) * self.layers,
            alpha=self.alpha,
            learning_rate_init=self.learning_rate_init,
            max_iter=self.max_iter,
            random_state=self.random_state,
        )
        return net if self.seeds == 1 else SeedBag(net, self.seeds, self.random_state)  # SeedBag refuses < 1

    def _set_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        super()._set_state(meta, arrays)
        # `seeds` says how many networks it holds: one saved before the parameter existed loads with its
        # default, 5, yet holds one. Every kind's classifier is one _make_classifier's, so one tells.
        held = next(iter(self.classifiers_.values()), None)
        if held is not None:
            self.seeds = len(held.estimators_) if isinstance(held, SeedBag) else 1


@register_model(
    "mnb",
    space={"alpha": ("loguniform", 1e-3, 10.0), "n_bins": ("int", 3, 16), "class_weight_power": ("uniform", 0.0, 1.0)},
)
class MNBDiagnoser(FeatureBaseline):
    """Multinomial naive Bayes per kind over quantile-binned (one-hot, non-negative) features."""

    default_name = "mnb"

    def __init__(
        self, alpha: float = 0.1, n_bins: int = 8, class_weight_power: float = 0.5, random_state: int = 0
    ) -> None:
        super().__init__(class_weight_power, random_state)
        self.alpha = alpha
        self.n_bins = n_bins

    def _make_transform(self) -> Any:
        return QuantileBinner(self.n_bins)

    def _make_classifier(self) -> Any:
        return MultinomialNB(alpha=self.alpha)
