"""The offline subcommands: `vsandx simulate`, `parse`, `diagnose`, `evaluate` and `train`. Each imports
its area when it runs, so building the parser imports nothing heavy."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _cause_list(values: list[str] | None) -> list[str] | None:
    """--only-causes / --exclude-causes, repeatable and comma-separated, checked against the registry."""
    if not values:
        return None
    from data.simulate.causes import resolve

    names = [x.strip() for v in values for x in v.split(",") if x.strip()]
    try:
        resolve(names)
    except ValueError as e:
        raise SystemExit(f"vsandx simulate: {e}") from None
    return names


def simulate(args: argparse.Namespace) -> int:
    from data.simulate.runner import simulate_many, summarise
    from vsandx.settings import get_settings

    workers = args.workers if args.workers is not None else get_settings().sim_workers
    results = simulate_many(
        profile=args.profile,
        n=args.n,
        out=Path(args.out),
        seed=args.seed,
        fmt=args.format,
        workers=workers,
        issue_rate=args.issue_rate,
        progress=not args.quiet,
        causes=_cause_list(args.only_causes),
        exclude_causes=_cause_list(args.exclude_causes),
    )
    print(summarise(results, Path(args.out)))
    return 0


def parse(args: argparse.Namespace) -> int:
    import json

    from pipeline import BundleError, PipelineConfig, load_bundle

    try:
        bt = load_bundle(args.bundle, PipelineConfig.from_settings())
    except BundleError as e:
        print(f"vsandx parse: {e}", file=sys.stderr)
        return 1
    doc = bt.summary()
    if args.json:
        print(json.dumps(doc))
        return 0
    w = doc["window"]
    print(f"schema    {doc['schema']}")
    print(f"hosts     {len(doc['hosts'])}: {', '.join(doc['hosts'])}")
    print(f"bundles   {len(doc['host_bundles'])} host support bundles")
    print(f"window    {w['start']} .. {w['end']}  ({w['steps']} steps of {w['step_s']} s)")
    print(f"interval  {doc['interval_s']} s (perf service)")
    for kind, c in doc["components"].items():
        empty = f"; no data: {', '.join(c['channels_without_data'])}" if c["channels_without_data"] else ""
        print(f"{kind:<10}{c['count']:>4}  tensor {tuple(c['shape'])}{empty}")
    for m in doc["missing"]:
        print(f"missing   {m}")
    for m in doc["warnings"]:
        print(f"warning   {m}")
    t = doc["timing_ms"]
    print(f"timing    read+parse {t.get('read_parse', 0):.1f} ms, tensorize {t.get('tensorize', 0):.1f} ms")
    return 0


def diagnose(args: argparse.Namespace) -> int:
    import json

    from pipeline import BundleError, check_path

    try:
        check_path(args.bundle)  # a typo or a text file answers in milliseconds, not after the model loads
    except BundleError as e:
        print(f"vsandx diagnose: {e}", file=sys.stderr)
        return 1
    from diagnosis.predictor import NoModel, Predictor

    try:
        predictor = Predictor.load(args.model)
        doc = predictor.diagnose(args.bundle)
    except (BundleError, NoModel) as e:
        print(f"vsandx diagnose: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"vsandx diagnose: {args.bundle}: {e.strerror or e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(doc))
        return 0
    from diagnosis.digest import text_report

    # what a tracker comment says (findings with evidence, onset, what drove them, worst samples, cited
    # lines, review, an unusual bundle), then where it came from
    print(text_report(doc, None), end="")
    print(f"\nbundle    {args.bundle} (sha256 {doc['bundle']['sha256'][:12]}...)")
    t = doc["timing_ms"]
    print(f"\ntiming    read {t['read']:.1f} ms, parse {t['parse']:.1f} ms, predict {t['predict']:.1f} ms")
    return 0


def evaluate(args: argparse.Namespace) -> int:
    import json

    from diagnosis.evaluate import evaluate_folder
    from diagnosis.predictor import NoModel, Predictor

    folder = Path(args.dir)
    if not folder.is_dir():
        print(f"vsandx evaluate: {folder}: not a directory", file=sys.stderr)
        return 2
    try:
        doc = evaluate_folder(Predictor.load(args.model), folder, progress=not args.quiet)
    except NoModel as e:
        print(f"vsandx evaluate: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(doc))
        return 0
    print(f"bundles             {doc['bundles']}")
    print(f"exact match         {doc['exact_match']:.3f}")
    print(f"component accuracy  {doc['component_accuracy']:.3f}")
    for fault, m in doc["per_fault"].items():
        if m["support"]:
            print(f"  {fault:<22} P {m['precision']:.2f}  R {m['recall']:.2f}  F1 {m['f1']:.2f}  n={m['support']}")
        else:  # no bundle carries it: recall and F1 are undefined, and precision is 0 only if it was called
            p = f"{m['precision']:.2f}" if m.get("predicted") else "n/a "
            print(f"  {fault:<22} P {p}  R n/a   F1 n/a   n=0")
    print(f"latency             p50 {doc['latency_ms']['p50']:.0f} ms, p95 {doc['latency_ms']['p95']:.0f} ms")
    return 0


def train(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from training.config import TrainConfig
    from training.run import run_training
    from training.sweep_errors import SweepFailed
    from vsandx.settings import get_settings

    preset = "smoke" if args.smoke else "quick" if args.quick else "standard" if args.standard else "full"
    cfg = TrainConfig.preset(preset)
    changes = {
        k: v
        for k, v in {
            "lab": args.lab,
            "varied": args.varied,
            "focus_n": args.focus,
            "val": args.val,
            "test": args.test,
            "samples": args.samples,
            "seed": args.seed,
            "sweep_minutes": args.sweep_minutes,
            "run_minutes": args.run_minutes,
        }.items()
        if v is not None
    }
    if args.families:
        changes["families"] = tuple(args.families.split(","))
    if args.source:
        changes["sources"] = {**cfg.sources, **dict(args.source)}
    try:
        cfg = replace(cfg, **changes)
    except ValueError as e:  # TrainConfig refuses what cannot train (--lab 0 --varied 0)
        print(f"vsandx train: {e}", file=sys.stderr)
        return 2
    settings = get_settings()
    if args.if_missing:
        from models.base import SchemaMismatch, load_model
        from training.model_fetch import fetch_model
        from training.model_files import NoModel

        try:
            champ = fetch_model(None, settings.data_dir, settings.mlflow_tracking_uri, settings.registered_model)
            load_model(champ.folder)  # one trained on another pipeline schema cannot serve: train anew
        except NoModel:
            pass
        except SchemaMismatch as e:
            print(f"champion  {settings.registered_model} version {champ.version} cannot serve ({e}); training")
        else:
            print(f"champion  {settings.registered_model} version {champ.version} exists; not training")
            return 0
    try:
        done = run_training(cfg, settings, progress=not args.quiet)
    except SweepFailed as e:  # says why (Ray's out-of-memory killer, failing trials) and what to change
        print(f"vsandx train: {e}", file=sys.stderr)
        return 1
    print(f"report    {done.report}")
    print(
        f"model     registered as version {done.version}"
        + (" and promoted to champion" if done.champion else "; the champion stays (it is as good or better)")
    )
    print(f"{'model':<28}{'exact':>8}{'comp.':>8}{'healthy':>9}{'fit s':>8}{'pred ms':>9}")
    for sc in done.scores:
        print(
            f"{sc.name:<28}{sc.exact_match:>8.3f}{sc.component_accuracy:>8.3f}{sc.healthy_all_none:>9.3f}"
            f"{sc.fit_seconds:>8.0f}{sc.predict_ms_p50:>9.1f}"
        )
    return 0
