"""Retraining with engineer feedback: the promotion rule both ways (a deliberately bad candidate never
replaces the champion), the decision recorded in MLflow (run, tags, metrics, registered version) and in
the database, the champion's configs for the warm start, and feedback-labelled uploads tensorised by
the one pipeline path as another dataset source. Candidates here are trained elsewhere (no sweep);
tests/service/test_feedback_e2e.py runs the whole loop with a real sweep."""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import training.retrain
from data.simulate.generate import simulate_bundle
from data.simulate.runner import simulate_many
from diagnosis import evaluate
from models.base import load_model
from models.registry import create_model
from service.queue import retraining
from service.schemas import FeedbackIn
from service.store import bundle_store, diagnosis_store, feedback, job_store
from service.store.db import Database
from training.config import TrainConfig
from training.datasets import DatasetSpec, LabelledBundle, build, build_labelled, combine, load_dataset
from training.retrain import Scores, champion_configs, decide, mcnemar_worse, retrain, split_feedback
from training.tracking import Tracker
from vsandx.components import kind_of
from vsandx.faults import faults_for_kind
from vsandx.settings import ServiceSettings, Settings

CFG = TrainConfig.preset("smoke")  # field test set: 8 bundles (seed 3)


def _healthy_share() -> float:
    """Exact match of a model that calls everything healthy on CFG's field test set: the share of its
    bundles with no fault (read from the simulator's labels, as training/run.py's test spec draws them)."""
    labels = [simulate_bundle("field", CFG.seed * 10 + 3, i).plan.faults for i in range(CFG.test)]
    return sum(not f for f in labels) / CFG.test


HEALTHY_SHARE = _healthy_share()


def read_labels(path: Path) -> dict[str, str]:
    labels = evaluate.read_labels(path)  # the simulator's ground truth, as `vsandx evaluate` reads it
    assert labels is not None, path
    return labels


@dataclass
class Env:
    root: Path
    healthy: Path  # a model that calls every component healthy
    faulty: Path  # a deliberately bad one: every component at fault
    uploads: list[LabelledBundle]  # lab bundles with their true labels (what engineers would say)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Env:
    root = tmp_path_factory.mktemp("var")
    X, _ = load_dataset(build(DatasetSpec("lab", 2, seed=41), root, workers=1, progress=False))
    none = [{c: "none" for c in bt.component_ids} for bt in X]
    bad = [{c: faults_for_kind(kind_of(c))[0] for c in bt.component_ids} for bt in X]
    healthy = create_model("mnb").fit(X, none).save(root / "all-none")
    faulty = create_model("mnb").fit(X, bad).save(root / "all-fault")
    out = root / "uploads"
    simulate_many("lab", 3, out, seed=77, issue_rate=1.0, workers=1, progress=False)
    uploads = [
        LabelledBundle(hashlib.sha256(p.read_bytes()).hexdigest(), p, read_labels(p)) for p in sorted(out.glob("*.tgz"))
    ]
    return Env(root, healthy, faulty, uploads)


def register_champion(settings: Settings, folder: Path, winners: list[dict[str, Any]] | None = None) -> str:
    tracker = Tracker(settings.data_dir)
    with tracker.run("champion-by-hand", {"source": str(folder)}) as run:
        run.log_model_folder(folder)
        if winners is not None:
            run.log_dict(winners, "winners.json")
    ref = tracker.register(run.id, settings.registered_model)
    tracker.promote(ref)
    return run.id


def test_the_promotion_rule() -> None:
    champ, fb = Scores(0.50, 0.90, 8), Scores(0.5, 0.95, 4)
    assert not decide(Scores(0.6, 0.9, 8), champ, fb, fb).promote  # not better on feedback
    assert not decide(Scores(0.5, 0.9, 8), champ, Scores(0.5, 0.94, 4), fb).promote
    assert decide(Scores(0.5, 0.9, 8), champ, Scores(0.5, 0.96, 4), fb).promote  # same exact match, better accuracy
    assert decide(Scores(0.5, 0.8, 8), champ, Scores(0.75, 0.9, 4), fb).promote
    assert decide(Scores(0.5, 0.9, 8), champ, Scores(0, 0, 0), Scores(0, 0, 0)).promote  # no feedback: field decides
    no_fb = decide(Scores(0.49, 0.99, 8), champ, Scores(0, 0, 0), Scores(0, 0, 0))
    assert not no_fb.promote and "worse on the field test set" in no_fb.reason
    assert decide(Scores(0.0, 0.0, 8), None, Scores(0, 0, 4), None).promote  # nothing to replace


def _field(right: int, order: list[bool] | None = None, n: int = 200) -> Scores:
    hits = tuple(order) if order is not None else tuple(i < right for i in range(n))
    return Scores(sum(hits) / n, 0.99, n, hits)


def test_engineer_confirmed_evidence_wins_over_a_few_simulated_bundles() -> None:
    """The measured case: better on 16 held-back feedback bundles (0.9375 vs 0.875) and 0.930 vs 0.965 on
    the 200 simulated field bundles. Once the simulated set vetoed it; now it takes a significant loss."""
    better_fb, champ_fb = Scores(0.9375, 0.99, 16), Scores(0.875, 0.98, 16)
    champion = _field(193)  # 0.965
    # the candidate gets 7 fewer right: 10 lost and 3 won on the same bundles (one-sided p = 0.046)
    cand_hits = [i < 183 or 193 <= i < 196 for i in range(200)]  # 186 right = 0.930
    candidate = _field(0, cand_hits)
    assert candidate.exact_match == 0.93 and round(mcnemar_worse(candidate, champion), 3) == 0.046
    d = decide(candidate, champion, better_fb, champ_fb)
    assert d.promote and "not a significant loss" in d.reason and "16 engineer-confirmed bundles" in d.reason
    # a real collapse on the simulated set still keeps the champion, and says why
    collapsed = _field(150)
    d = decide(collapsed, champion, better_fb, champ_fb)
    assert not d.promote and "significantly worse" in d.reason and mcnemar_worse(collapsed, champion) < 0.001
    # worse on the feedback set: kept, whatever the simulated set says
    assert not decide(_field(200), champion, champ_fb, better_fb).promote


def test_mcnemar_counts_only_the_bundles_they_disagree_on() -> None:
    same = _field(150)
    assert mcnemar_worse(same, same) == 1.0
    one_lost = _field(0, [i < 149 for i in range(200)])
    assert mcnemar_worse(one_lost, same) == 0.5  # 1 lost of 1 discordant: P(X >= 1 | n = 1) = 1/2
    assert mcnemar_worse(Scores(0.5, 0.5, 8), same) == 1.0  # no per-bundle results: no evidence


def test_feedback_split_is_stable(env: Env) -> None:
    items = env.uploads
    assert split_feedback(items, 0.0) == (items, items, True)
    assert split_feedback([], 0.5) == ([], [], False)
    fake = [LabelledBundle(f"{i:x}" * 64, Path("x"), {}) for i in range(16)]
    train, judge, seen = split_feedback(fake, 0.25)
    assert not seen and judge and {it.sha256 for it in [*train, *judge]} == {it.sha256 for it in fake}
    assert all(int(it.sha256[:8], 16) < 0.25 * 16**8 for it in judge)
    assert split_feedback(fake[:8], 0.25)[1] == [it for it in judge if it in fake[:8]]  # by sha256, not position


def test_feedback_bundles_are_a_dataset_source(env: Env) -> None:
    folder = build_labelled(env.uploads, env.root)
    X, y = load_dataset(folder)
    as_text = partial(json.dumps, sort_keys=True)
    assert sorted(map(as_text, y)) == sorted(as_text(dict(u.labels)) for u in env.uploads)
    for bt, labels in zip(X, y, strict=True):
        assert set(bt.component_ids) == set(labels)  # the pipeline finds every labelled component
    assert build_labelled(list(reversed(env.uploads)), env.root) == folder  # cached, order-free
    first = env.uploads[0]
    cid = next(c for c, v in first.labels.items() if v == "none" and kind_of(c) == "disk")
    changed = LabelledBundle(first.sha256, first.path, {**first.labels, cid: "disk.latency"})
    other = build_labelled([changed, *env.uploads[1:]], env.root)
    assert other != folder and any(lab.get(cid) == "disk.latency" for lab in load_dataset(other)[1])
    lab = build(DatasetSpec("lab", 2, seed=41), env.root, workers=1, progress=False)
    mixed = combine([(lab, 1), (folder, 3)], env.root)
    Xm, ym = load_dataset(mixed)
    assert len(Xm) == 2 + 3 * len(env.uploads) and sum(labels == y[0] for labels in ym) >= 3


def test_champion_configs_for_the_warm_start(env: Env) -> None:
    settings = Settings(data_dir=env.root, registered_model="warm")
    winners = [{"model": "cnn_small", "lr": 0.01, "epochs": 15, "seed": 3, "issue_rate": 0.4}, {"model": "svm"}]
    register_champion(settings, env.healthy, winners)
    tracker = Tracker(env.root)
    champ = tracker.champion("warm")
    assert champion_configs(tracker, champ, None, CFG) == [{"model": "cnn_small", "lr": 0.01, "issue_rate": 0.4}]
    model = load_model(env.healthy)  # a champion whose run logged no winners: its own hyperparameters
    got = champion_configs(tracker, None, model, replace(CFG, families=("mnb",), overrides={}))
    assert got == [{"model": "mnb", **model.get_params(deep=False)}]


def _diagnosed_with_feedback(database: Database, settings: ServiceSettings, uploads: list[LabelledBundle]) -> None:
    """Each upload stored, diagnosed all healthy, and corrected by an engineer to its true labels."""
    with database.session() as db:
        for up in uploads:
            spooled, sha, size = bundle_store.spool_upload(settings, io.BytesIO(up.path.read_bytes()), 1 << 30)
            bundle_store.keep_bundle(db, settings, spooled, sha, size, up.path.name)
            job = job_store.create_job(db, sha, up.path.name)
            assert job_store.claim_job(db, "w", 60, 3, job_id=job.id) is not None
            comps = [{"id": c, "kind": kind_of(c), "verdict": "none", "confidence": 0.9} for c in up.labels]
            doc = {"model": {"name": "m", "version": "1"}, "components": comps, "findings": []}
            job_store.complete_job(db, job.id, 1, diagnosis_store.record_diagnosis(db, sha, doc).id)
            fixes = {c: v for c, v in up.labels.items() if v != "none"}
            feedback.record_feedback(db, job.id, FeedbackIn(author="eng", labels=fixes))


def test_a_bad_candidate_never_replaces_the_champion(env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db_url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    settings = ServiceSettings(data_dir=env.root, database_url=db_url, sim_workers=2, registered_model="guarded",
                               retrain_preset="smoke", retrain_feedback_holdout=0.0)  # fmt: skip
    register_champion(settings, env.healthy)
    database = Database(settings.sqlalchemy_url)
    _diagnosed_with_feedback(database, settings, env.uploads)
    tracker = Tracker(env.root)
    original = training.retrain.retrain
    for n, (candidate, why) in enumerate(
        # engineer-confirmed bundles come first: the faulty candidate falls there, before any field veto
        [(env.faulty, "not better on the feedback set"), (env.healthy, "not better on the feedback set")],
        start=2,
    ):
        monkeypatch.setattr(training.retrain, "retrain", partial(original, candidate=load_model(candidate)))
        with database.session() as db:
            opened = retraining.open_retrain(db, settings, "demand", "test")
            assert opened is not None
        assert retraining.run_retrain(database, settings, opened.id) == "done"
        with database.session() as db:
            row = retraining.get_retrain(db, opened.id)
        assert row is not None and row.status == "done" and row.promoted is False, row
        assert why in (row.reason or "") and row.champion_version == "1" and row.candidate_version == str(n)
        assert row.metrics["champion_field_exact_match"] == HEALTHY_SHARE and row.metrics["feedback_bundles"] == 3
        champ = tracker.champion("guarded")
        assert champ is not None and champ.version == "1"  # the champion stays
        run = tracker.client.get_run(row.mlflow_run_id or "")
        assert run.data.tags["decision"] == "kept" and run.data.tags["vsandx.kind"] == "retrain"
        assert run.data.tags["retrain_id"] == str(opened.id) and why in run.data.tags["reason"]
        assert run.data.metrics["candidate_field_exact_match"] == row.metrics["candidate_field_exact_match"]
        assert run.data.params["judged_on_training_bundles"] == "true"
        version = tracker.client.get_model_version("guarded", str(n))  # registered all the same
        assert version.run_id == run.info.run_id and "test_exact_match" in version.tags
    assert row.metrics["candidate_field_exact_match"] == HEALTHY_SHARE  # the second candidate: a tie
    database.dispose()


def test_a_better_candidate_is_promoted(env: Env) -> None:
    settings = Settings(data_dir=env.root, sim_workers=2, registered_model="improved")
    register_champion(settings, env.faulty)
    done = retrain(settings, CFG, env.uploads, holdout=0.0, trigger="feedback", candidate=load_model(env.healthy))
    assert done.promoted and "better on the feedback set" in done.reason, done
    assert done.champion_version == "1" and done.candidate_version == "2"
    m = done.metrics
    assert m["candidate_field_exact_match"] == HEALTHY_SHARE and m["champion_field_exact_match"] == 0.0
    assert m["candidate_feedback_component_accuracy"] > m["champion_feedback_component_accuracy"]
    tracker = Tracker(env.root)
    champ = tracker.champion("improved")
    assert champ is not None and champ.version == "2"
    run = tracker.client.get_run(done.run_id)
    assert run.data.tags["decision"] == "promoted" and run.data.params["trigger"] == "feedback"
    assert tracker.run_json(done.run_id, "decision.json")["decision"] == "promoted"
    fresh = retrain(Settings(data_dir=env.root, registered_model="fresh"), CFG, [], candidate=load_model(env.faulty))
    assert fresh.promoted and "no champion" in fresh.reason and fresh.champion_version is None
