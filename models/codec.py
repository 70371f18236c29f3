"""Fitted scikit-learn estimators <-> (JSON, named arrays), without pickle.

`encode` walks an estimator's attributes: numpy arrays go to the arrays dict (saved as safetensors),
scalars, strings, lists, tuples and str-keyed dicts become JSON, nested objects recurse. Objects of
any class outside ALLOWED (an optimizer's state, a RandomState) are left out: prediction never needs
them. `decode` rebuilds only classes of ALLOWED, so a tampered file cannot name arbitrary code.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
from sklearn.calibration import CalibratedClassifierCV, _CalibratedClassifier, _SigmoidCalibration
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import MultinomialNB
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import LabelBinarizer, StandardScaler
from sklearn.svm import SVC

from models.scalers import ClippedScaler, QuantileBinner
from models.seedbag import SeedBag

ALLOWED: Final[dict[str, type]] = {
    c.__name__: c
    for c in (
        SVC,
        CalibratedClassifierCV,
        _CalibratedClassifier,
        _SigmoidCalibration,
        LogisticRegression,
        MLPClassifier,
        SeedBag,
        MultinomialNB,
        LabelBinarizer,
        StandardScaler,
        QuantileBinner,
        ClippedScaler,
    )
}
_SKIP: Final = object()


def encode(obj: Any, key: str, arrays: dict[str, np.ndarray]) -> Any:
    """JSON-able description of `obj`; its arrays are added to `arrays` under names starting with `key`."""
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in "biuf":
            raise TypeError(f"{key}: cannot store an array of dtype {obj.dtype}")
        arrays[key] = obj
        return {"__array__": key}
    if isinstance(obj, list | tuple):
        items = [encode(v, f"{key}.{i}", arrays) for i, v in enumerate(obj)]
        items = [v for v in items if v is not _SKIP]
        return items if isinstance(obj, list) else {"__tuple__": items}
    if isinstance(obj, dict):
        if not all(isinstance(k, str) for k in obj):
            raise TypeError(f"{key}: only str-keyed dicts can be stored")
        out = {k: encode(v, f"{key}.{k}", arrays) for k, v in obj.items()}
        return {"__dict__": {k: v for k, v in out.items() if v is not _SKIP}}
    if isinstance(obj, type) and obj.__name__ in ALLOWED:
        return {"__class__": obj.__name__}
    name = type(obj).__name__
    if ALLOWED.get(name) is type(obj):
        attrs = {k: encode(v, f"{key}.{k}", arrays) for k, v in vars(obj).items()}
        return {"__object__": name, "attrs": {k: v for k, v in attrs.items() if v is not _SKIP}}
    return _SKIP


def decode(doc: Any, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(doc, list):
        return [decode(v, arrays) for v in doc]
    if not isinstance(doc, dict):
        return doc
    if "__array__" in doc:
        return arrays[doc["__array__"]]
    if "__tuple__" in doc:
        return tuple(decode(v, arrays) for v in doc["__tuple__"])
    if "__dict__" in doc:
        return {k: decode(v, arrays) for k, v in doc["__dict__"].items()}
    if "__class__" in doc:
        return _allowed(doc["__class__"])
    if "__object__" in doc:
        cls: Any = _allowed(doc["__object__"])
        obj = cls.__new__(cls)
        obj.__dict__.update({k: decode(v, arrays) for k, v in doc["attrs"].items()})
        return obj
    raise ValueError(f"unrecognised encoded value {sorted(doc)}")


def _allowed(name: str) -> type:
    if name not in ALLOWED:
        raise ValueError(f"refusing to rebuild class {name!r}: not one of {sorted(ALLOWED)}")
    return ALLOWED[name]
