"""The sweep's outcomes without Ray: the family recipe as a search point, the trials ranked and recorded,
and a trial's error cut to the line that says what happened."""

from __future__ import annotations

import json
from pathlib import Path

from models.registry import search_space
from training.sweep_results import first_line, outcomes, registry_point, started_late


def test_registry_point_is_the_family_recipe() -> None:
    point = registry_point("cnn_deep", issue_rate=0.4)
    assert set(point) == set(search_space("cnn_deep")) - {"seed"} | {"issue_rate"}
    assert point["width"] == 64 and point["depth"] == 5 and point["event_dropout"] == 0.2
    assert point["issue_rate"] == 0.4


def test_outcomes_rank_the_trials_and_record_them(tmp_path: Path) -> None:
    (tmp_path / "t1").mkdir()
    (tmp_path / "t1" / "config.json").write_text("{}")  # t1 saved its model; t2 and t3 did not
    t1 = {"trial_id": "t1", "val_exact_match": 0.5, "final_exact_match": 0.8, "fit_seconds": 9}
    t1 |= {"final_macro_f1": float("nan"), "loss": 0.1}  # NaN and what is no score are left out
    rows = [
        # ASHA stopped t2 on the epoch that ran out of time: no final score, so not "out of time" either
        ({"lr": 2}, {"trial_id": "t2", "val_exact_match": 0.9, "out_of_time": 1.0, "epoch": 3}, [{"epoch": 3}]),
        ({"lr": 1}, t1, []),
        ({"lr": 3}, {"trial_id": "t3", "final_exact_match": 0.95, "out_of_time": 1.0}, []),
    ]
    got = outcomes("cnn_small", rows, tmp_path)
    # the final exact match ranks, the last validation score where there is none
    assert [o.config["lr"] for o in got] == [3, 2, 1]
    assert got[0].metrics == {"final_exact_match": 0.95, "out_of_time": 1.0}
    assert got[1].metrics == {"val_exact_match": 0.9} and got[1].history == [{"epoch": 3}]
    assert got[2].metrics == {"val_exact_match": 0.5, "final_exact_match": 0.8, "fit_seconds": 9.0}
    assert [o.folder for o in got] == [None, None, tmp_path / "t1"]
    assert all(o.model == "cnn_small" for o in got)
    written = json.loads((tmp_path / "sweep-cnn_small.json").read_text())
    assert [w["config"]["lr"] for w in written] == [3, 2, 1] and written[2]["folder"] == str(tmp_path / "t1")


def test_first_line_leaves_tunes_header_out() -> None:
    error = "Failure # 1 (occurred at 2026-12-01)\n\n  ray.exceptions.RayTaskError: boom\nmore\n"
    assert first_line(error) == "ray.exceptions.RayTaskError: boom"
    assert first_line(ValueError("")) == "ValueError"


def test_a_trial_that_starts_late_trains_only_where_its_sweep_saved_a_model(tmp_path: Path) -> None:
    """Past `start_by` a trial trains nothing where another trial of its sweep (Tune's experiment prefix of
    the trial id) saved a model; before it, without a deadline, or with no model of its own sweep saved
    (another family's does not count), it trains, so that every sweep keeps one."""
    (tmp_path / "c51c2_00000").mkdir()
    (tmp_path / "c51c2_00000" / "config.json").write_text("{}")  # another sweep's model
    (tmp_path / "c770c_00000").mkdir()  # this sweep's first trial, still training: no model yet
    assert not started_late("c770c_00001", tmp_path, 100.0, 101.0)
    (tmp_path / "c770c_00000" / "config.json").write_text("{}")
    assert started_late("c770c_00001", tmp_path, 100.0, 101.0)
    assert not started_late("c770c_00001", tmp_path, 100.0, 99.0)  # a quarter of the budget left, or more
    assert not started_late("c770c_00001", tmp_path, None, 101.0)  # no budget
    assert not started_late("00001", tmp_path, 100.0, 101.0)  # an id without an experiment prefix
