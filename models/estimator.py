"""scikit-learn's estimator contract without importing scikit-learn.

`import sklearn` (any submodule: its package imports scipy.stats and pandas) costs 2 s on a 2-core
machine, which a fresh `vsandx diagnose` with a CNN champion should never pay. The contract is duck
typed: `sklearn.base.clone`, `sklearn.utils.validation.check_is_fitted` and pipelines only ask for
`get_params` / `set_params`, a `fit` method and fitted attributes ending in `_`, so the diagnosers
implement those here and stay interchangeable with sklearn's own estimators. The baselines wrap
sklearn models inside and import it themselves.
"""

from __future__ import annotations

import inspect
from typing import Any, Self


class Estimator:
    """get_params / set_params as sklearn.base.BaseEstimator defines them: the hyperparameters are
    exactly the keyword arguments of `__init__`, stored under the same names."""

    @classmethod
    def _param_names(cls) -> list[str]:
        init = cls.__init__
        if init is object.__init__:
            return []
        params = inspect.signature(init).parameters.values()
        if any(p.kind == p.VAR_POSITIONAL for p in params):
            raise TypeError(f"{cls.__name__}: estimators take keyword hyperparameters only, not *args")
        return sorted(p.name for p in params if p.name != "self" and p.kind != p.VAR_KEYWORD)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self._param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out |= {f"{name}__{k}": v for k, v in value.get_params(deep=True).items()}
            out[name] = value
        return out

    def set_params(self, **params: Any) -> Self:
        valid = set(self._param_names())
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            name, _, sub = key.partition("__")
            if name not in valid:
                raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}; valid: {sorted(valid)}")
            if sub:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
        for name, sub_params in nested.items():
            getattr(self, name).set_params(**sub_params)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
        return f"{type(self).__name__}({args})"


def is_fitted(est: object) -> bool:
    """sklearn's rule: some public attribute ends with `_` (set by fit)."""
    return any(k.endswith("_") and not k.startswith("__") for k in vars(est))


def check_is_fitted(est: object) -> None:
    """Raise sklearn.exceptions.NotFittedError (imported only then) when `est` was never fitted."""
    if not is_fitted(est):
        from sklearn.exceptions import NotFittedError

        raise NotFittedError(
            f"This {type(est).__name__} instance is not fitted yet. Call 'fit' with appropriate arguments first."
        )
