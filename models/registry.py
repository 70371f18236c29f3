"""A timm-like model registry: every diagnoser is registered by name with its defaults and search space.

    @register_model("cnn_base", defaults={...}, space={"lr": ("loguniform", 1e-4, 1e-2), ...})
    class ...

    create_model("cnn_base", epochs=10)   # defaults overridden by keyword
    list_models("cnn_*")                  # fnmatch over names, sorted

The search space is plain data so that training/ (the only place that imports Ray) can turn it into a
Ray Tune space without models/ knowing Ray exists. Each entry is one of

    ("uniform", low, high)      ("loguniform", low, high)
    ("int", low, high)          ("choice", [a, b, ...])

Registration happens when the defining module is imported; `list_models` imports every built-in family,
`create_model(name)` only the module of `name` (BUILTIN_FAMILIES), so `import models.registry` stays cheap
and loading a CNN imports neither scikit-learn nor sktime.
"""

from __future__ import annotations

import fnmatch
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # models.base loads a saved model through create_model; only the type is needed here
    from models.base import Diagnoser

SearchSpace = dict[str, tuple[Any, ...]]
SPACE_KINDS = ("uniform", "loguniform", "int", "choice")
# Modules whose import registers the built-in families (sklearn baselines, MiniRocket, torch CNNs,
# expert rules).
BUILTIN_MODULES = (
    "models.baselines",
    "models.rocket",
    "models.cnn",
    "models.ensemble",
    "models.rules",
    "models.calibration",
)
# Where each built-in family is registered, so that loading one model imports its module alone: a CNN
# champion never pays for scikit-learn or sktime (seconds of a fresh `vsandx diagnose`). A test checks
# this map against what the modules register.
BUILTIN_FAMILIES: dict[str, str] = {
    **dict.fromkeys(("svm", "logreg", "mlp", "mnb"), "models.baselines"),
    "minirocket": "models.rocket",
    **dict.fromkeys(("cnn_small", "cnn_base", "cnn_deep"), "models.cnn"),
    "ensemble": "models.ensemble",
    "rules": "models.rules",
    "calibrated": "models.calibration",
}

D = TypeVar("D", bound="type[Diagnoser]")


@dataclass(frozen=True)
class ModelEntry:
    name: str
    cls: type[Diagnoser]
    defaults: dict[str, Any] = field(default_factory=dict)
    space: SearchSpace = field(default_factory=dict)
    description: str = ""

    def config(self, **overrides: Any) -> dict[str, Any]:
        """Resolved hyperparameters: defaults, then overrides (unknown names are an error)."""
        unknown = set(overrides) - set(self.cls().get_params())
        if unknown:
            raise TypeError(f"{self.name}: unknown hyperparameters {sorted(unknown)}")
        return {**self.defaults, **overrides}


_REGISTRY: dict[str, ModelEntry] = {}
_loaded = False


def _check_space(name: str, space: Mapping[str, tuple[Any, ...]]) -> None:
    for key, spec in space.items():
        if not spec or spec[0] not in SPACE_KINDS:
            raise ValueError(f"{name}: search space {key!r} must start with one of {SPACE_KINDS}, got {spec!r}")
        if spec[0] == "choice":
            if len(spec) != 2 or not list(spec[1]):
                raise ValueError(f"{name}: {key!r} choice needs a non-empty list")
        elif len(spec) != 3 or not spec[1] <= spec[2]:
            raise ValueError(f"{name}: {key!r} needs (kind, low, high) with low <= high")


def register_model(
    name: str,
    defaults: Mapping[str, Any] | None = None,
    space: Mapping[str, tuple[Any, ...]] | None = None,
    description: str = "",
) -> Callable[[D], D]:
    """Class decorator: register `cls` under `name`. A class may be registered under several names
    (variants = the same class with other defaults); stack the decorator."""

    def wrap(cls: D) -> D:
        if name in _REGISTRY and _REGISTRY[name].cls is not cls:
            raise ValueError(f"model {name!r} is already registered by {_REGISTRY[name].cls.__qualname__}")
        params = cls().get_params()
        unknown = set(defaults or {}) - set(params) | set(space or {}) - set(params)
        if unknown:
            raise ValueError(f"{name}: defaults/space name unknown hyperparameters {sorted(unknown)}")
        _check_space(name, space or {})
        doc = description or next(iter((cls.__doc__ or "").strip().splitlines()), "")
        _REGISTRY[name] = ModelEntry(name, cls, dict(defaults or {}), dict(space or {}), doc)
        return cls

    return wrap


def _ensure_builtins() -> None:
    global _loaded
    if not _loaded:
        for module in BUILTIN_MODULES:
            importlib.import_module(module)
        _loaded = True


def list_models(pattern: str = "*") -> list[str]:
    """Registered names matching the fnmatch `pattern`, sorted."""
    _ensure_builtins()
    return sorted(n for n in _REGISTRY if fnmatch.fnmatchcase(n, pattern))


def model_entry(name: str) -> ModelEntry:
    if name not in _REGISTRY:
        if name in BUILTIN_FAMILIES:
            importlib.import_module(BUILTIN_FAMILIES[name])
        else:
            _ensure_builtins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; registered: {', '.join(sorted(_REGISTRY))}") from None


def create_model(name: str, **overrides: Any) -> Diagnoser:
    """A new, unfitted diagnoser: the entry's defaults overridden by `overrides`."""
    entry = model_entry(name)
    model = entry.cls(**entry.config(**overrides))
    model.model_name = name
    return model


def default_config(name: str) -> dict[str, Any]:
    """Every hyperparameter of `name` as create_model would resolve it (defaults included)."""
    return create_model(name).get_params()


def search_space(name: str) -> SearchSpace:
    return dict(model_entry(name).space)
