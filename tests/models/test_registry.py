from __future__ import annotations

import pytest

from models.base import Diagnoser
from models.registry import SPACE_KINDS, create_model, default_config, list_models, register_model, search_space

EXPECTED = {"svm", "logreg", "mlp", "mnb", "cnn_small", "cnn_base", "cnn_deep"}


def test_builtins_registered() -> None:
    assert set(list_models()) >= EXPECTED
    assert list_models() == sorted(list_models())


def test_pattern_is_fnmatch() -> None:
    assert list_models("cnn_*") == ["cnn_base", "cnn_deep", "cnn_small"]
    assert list_models("nothing*") == []


def test_create_model_applies_defaults_and_overrides() -> None:
    small, deep = create_model("cnn_small"), create_model("cnn_deep", epochs=3)
    assert small.get_params()["width"] == 32
    assert deep.get_params()["depth"] == 5 and deep.get_params()["epochs"] == 3
    assert deep.name == "cnn_deep"
    assert isinstance(small, Diagnoser)


def test_unknown_names_are_errors() -> None:
    with pytest.raises(KeyError, match="unknown model"):
        create_model("nope")
    with pytest.raises(TypeError, match="unknown hyperparameters"):
        create_model("svm", not_a_param=1)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_search_space_is_well_formed(name: str) -> None:
    space, params = search_space(name), default_config(name)
    assert space, f"{name} has no search space"
    for key, spec in space.items():
        assert key in params
        assert spec[0] in SPACE_KINDS
        if spec[0] == "choice":
            assert len(spec[1]) >= 1
        else:
            assert spec[1] <= spec[2]


def test_register_rejects_unknown_hyperparameters_and_duplicates() -> None:
    with pytest.raises(ValueError, match="unknown hyperparameters"):

        @register_model("bad_defaults", defaults={"zzz": 1})
        class Bad(Diagnoser):
            pass

    with pytest.raises(ValueError, match="already registered"):

        @register_model("svm")
        class Other(Diagnoser):
            pass

    with pytest.raises(ValueError, match="search space"):

        @register_model("bad_space", space={"x": ("gaussian", 0, 1)})
        class BadSpace(Diagnoser):
            def __init__(self, x: float = 0.0) -> None:
                self.x = x


def test_builtin_family_map_matches_registration() -> None:
    from models.registry import BUILTIN_FAMILIES, BUILTIN_MODULES, model_entry

    names = list_models()
    assert set(names) == set(BUILTIN_FAMILIES) and set(BUILTIN_FAMILIES.values()) <= set(BUILTIN_MODULES)
    for name in names:
        assert model_entry(name).cls.__module__ == BUILTIN_FAMILIES[name], name


def test_loading_a_cnn_imports_neither_sklearn_nor_sktime() -> None:
    import subprocess
    import sys

    probe = (
        "import sys; from models.registry import create_model; create_model('cnn_small'); create_model('ensemble');"
        "print(sorted(m for m in ('sklearn', 'sktime', 'scipy', 'pandas') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stdout
