"""The training configuration's presets: what each promises, and the configurations refused."""

from __future__ import annotations

import pytest

from models.registry import model_entry
from training.config import TrainConfig


def test_presets_grow_from_smoke_to_full() -> None:
    smoke, quick, standard, full = (TrainConfig.preset(n) for n in ("smoke", "quick", "standard", "full"))
    sizes = [c.lab + c.varied for c in (smoke, quick, standard, full)]
    assert sizes == sorted(sizes) and len(set(sizes)) == 4
    # the standard preset leans on varied field bundles (the leave-one-cause-out figure favours them)
    assert standard.varied > standard.lab and standard.families == ("cnn_small", "cnn_base")
    assert quick.test >= 200 and standard.test >= quick.test  # enough test bundles to measure on
    # the standard's hour: its sweeps' deadlines leave the datasets, baselines and scoring 20 minutes
    assert 0 < standard.sweep_minutes * len(standard.families) <= 40
    for c in (smoke, quick, standard, full):
        assert c.priors == ("rules",) and c.calibration == "temperature"


def test_every_presets_fixed_hyperparameters_resolve_for_its_families() -> None:
    """What a newcomer's `make run` meets first (the quick preset): a misspelt override would fail only
    minutes into the sweep. The quick and standard trials average three networks each (seeds=3)."""
    for name in ("smoke", "quick", "standard", "full"):
        c = TrainConfig.preset(name)
        for family in c.families:
            assert model_entry(family).config(**c.overrides), (name, family)
    quick, standard = TrainConfig.preset("quick"), TrainConfig.preset("standard")
    assert quick.overrides["seeds"] == standard.overrides["seeds"] == 3 and quick.samples == 2


def test_refused_configurations() -> None:
    with pytest.raises(ValueError, match="unknown preset"):
        TrainConfig.preset("huge")
    with pytest.raises(ValueError, match="no training bundles"):
        TrainConfig(lab=0, varied=0)
    with pytest.raises(ValueError, match="sweep_minutes must be at least 0"):
        TrainConfig(sweep_minutes=-1)
    with pytest.raises(ValueError, match="unknown bundle source nope"):
        TrainConfig(sources={"nope": 10})
    TrainConfig(lab=0, varied=0, sources={"outsider": 10})  # another author's bundles alone train too


def test_the_served_weights_by_member_and_kind() -> None:
    """Two CNNs share 1; the rules weigh prior_weight but their kind's weight on a named kind; the mlp
    votes on disks only."""
    default, by_kind = TrainConfig().served_weights(2)
    assert default == [0.5, 0.5, 1.0, 0.0]  # cnn, cnn, rules, mlp
    assert by_kind == {
        "cluster": [0.5, 0.5, 1.5, 0.0],
        "disk": [0.5, 0.5, 1.0, 1.0],
        "diskgroup": [0.5, 0.5, 2.0, 0.0],
        "host": [0.5, 0.5, 1.0, 0.0],
        "nic": [0.5, 0.5, 1.0, 0.0],
    }
    alone = TrainConfig(kind_members={}, priors=()).served_weights(1)  # the CNNs alone: 1 everywhere
    assert alone == ([1.0], {kind: [1.0] for kind in ("cluster", "diskgroup", "host", "nic")})
