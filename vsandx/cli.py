"""The one entry point, `vsandx`. Each subcommand imports its area lazily so `--help` is instant."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vsandx.settings import ServiceSettings


def _positive(text: str) -> int:
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def _count(text: str) -> int:
    n = int(text)
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {n}")
    return n


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


def _cmd_simulate(args: argparse.Namespace) -> int:
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


def _cmd_parse(args: argparse.Namespace) -> int:
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


def _cmd_diagnose(args: argparse.Namespace) -> int:
    import json

    from pipeline import BundleError, check_path

    try:
        check_path(args.bundle)  # a typo or a text file answers in milliseconds, not after the model loads
    except BundleError as e:
        print(f"vsandx diagnose: {e}", file=sys.stderr)
        return 1
    from service.predictor import NoModel, Predictor

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
    b = doc["bundle"]
    print(f"bundle    {args.bundle} (sha256 {b['sha256'][:12]}...)")
    print(f"hosts     {len(b['hosts'])}: {', '.join(b['hosts'])}")
    print(f"window    {b['start']} .. {b['end']}")
    print(f"model     {doc['model']['name']} version {doc['model']['version']}")
    if not doc["findings"]:
        print("verdict   healthy: no component at fault")
    for f in doc["findings"]:
        print(f"\n{f['fault']} on {f['component']}  (confidence {f['confidence']:.2f})")
        print(f"  {f['summary']}")
        for line in f["evidence"]:
            print(f"  - {line}")
        print(f"  what to do: {f['recommendation']}")
    t = doc["timing_ms"]
    print(f"\ntiming    read {t['read']:.1f} ms, parse {t['parse']:.1f} ms, predict {t['predict']:.1f} ms")
    return 0


def _cmd_evaluate(args: argparse.Namespace) -> int:
    import json

    from service.evaluate import evaluate_folder
    from service.predictor import NoModel, Predictor

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


def _cmd_train(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from training.run import TrainConfig, run_training
    from vsandx.settings import get_settings

    preset = "smoke" if args.smoke else "quick" if args.quick else "full"
    cfg = TrainConfig.preset(preset)
    changes = {
        k: v
        for k, v in {
            "lab": args.lab,
            "varied": args.varied,
            "val": args.val,
            "test": args.test,
            "samples": args.samples,
            "seed": args.seed,
        }.items()
        if v is not None
    }
    if args.families:
        changes["families"] = tuple(args.families.split(","))
    try:
        cfg = replace(cfg, **changes)
    except ValueError as e:  # TrainConfig refuses what cannot train (--lab 0 --varied 0)
        print(f"vsandx train: {e}", file=sys.stderr)
        return 2
    settings = get_settings()
    if args.if_missing:
        from training.tracking import NoModel, fetch_model

        try:
            champ = fetch_model(None, settings.data_dir, settings.mlflow_tracking_uri, settings.registered_model)
        except NoModel:
            pass
        else:
            print(f"champion  {settings.registered_model} version {champ.version} exists; not training")
            return 0
    done = run_training(cfg, settings, progress=not args.quiet)
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


class _Stopped(Exception):
    """SIGTERM/SIGINT reached `vsandx serve` (uvicorn re-raises it after its graceful shutdown)."""


def _stopped(signum: int, _frame: object) -> None:
    raise _Stopped(signum)


def _die_with_parent() -> None:
    """In a worker child of `vsandx serve`: SIGTERM when serve dies, even by SIGKILL (Linux)."""
    import contextlib
    import ctypes
    import signal

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _cmd_serve(args: argparse.Namespace) -> int:
    import os
    import signal

    import uvicorn

    from service.app import create_app
    from service.supervise import WorkerPool
    from vsandx.settings import get_service_settings

    settings = get_service_settings()
    n = settings.worker_processes if args.workers is None else args.workers
    n = (os.cpu_count() or 1) if n is None else n
    if n > 0 and not settings.broker_url and "embedded_workers" not in settings.model_fields_set:
        # the diagnoses run in worker processes: one per core, no GIL shared with the API
        settings = settings.model_copy(update={"embedded_workers": 0})
    signal.signal(signal.SIGTERM, _stopped)
    signal.signal(signal.SIGINT, _stopped)
    pool: WorkerPool | None = None
    try:
        app = create_app(settings)  # migrates the database before any worker starts
        if not settings.broker_url and n > 0:
            worker = [sys.executable, "-m", "vsandx.cli", "worker", "--concurrency", "1", "--log-level", args.log_level]
            pool = WorkerPool(worker, n, preexec=_die_with_parent)  # reaped and respawned when one dies
            pool.start()
        where = "embedded queue" if not settings.broker_url else f"Celery broker {settings.broker_url}"
        print(
            f"vsandx serving on http://{args.host}:{args.port}  (API docs /docs; {where}; data {settings.data_dir})",
            flush=True,
        )
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    except _Stopped:
        pass
    finally:
        if pool is not None:
            pool.stop(10)
    return 0


def _cmd_worker(args: argparse.Namespace) -> int:
    import logging

    from vsandx.settings import get_service_settings

    settings = get_service_settings()
    if args.ping:
        return _ping_workers(settings)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if settings.broker_url:
        from service.tasks import run_worker

        run_worker(settings, args.queues, args.concurrency or 1, args.pool, args.log_level.upper())
        return 0
    from service.worker import run_embedded_worker

    return run_embedded_worker(settings, args.concurrency or 1)


def _ping_workers(settings: ServiceSettings) -> int:
    """Exit 0 when a Celery worker of this host answers (a healthcheck); embedded: the database opens."""
    if settings.broker_url:
        from service.tasks import ping_local_workers

        alive = ping_local_workers(settings)
        print(", ".join(alive) or "no Celery worker of this host answered", file=sys.stderr)
        return 0 if alive else 1
    from sqlalchemy import text

    from service.db import database_for

    with database_for(settings.sqlalchemy_url).session() as db:
        db.execute(text("SELECT 1"))
    return 0


def _cmd_beat(args: argparse.Namespace) -> int:
    import logging

    from vsandx.settings import get_service_settings

    settings = get_service_settings()
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not settings.broker_url:
        print("vsandx beat: needs VSANDX_BROKER_URL (the embedded queue's API process does housekeeping)",
              file=sys.stderr)  # fmt: skip
        return 2
    from service.tasks import run_beat

    run_beat(settings, args.log_level.upper())
    return 0


MODEL_HELP = "model folder, models:/<name>@<alias> or models:/<name>/<version> (default: the registry's champion)"
LEVELS = ("critical", "error", "warning", "info", "debug")
TRAIN_PRESETS = """defaults, by preset (training.run.TrainConfig.preset):
  preset  --lab  --varied  --val  --test  --samples  --families                    --seed
  smoke      24        8      8      8          2  cnn_small                         0
  quick     200      200    100    200          4  cnn_small                         0
  full     5000     2000    600   1000         16  cnn_small,cnn_base,cnn_deep      0
without --quick or --smoke the full preset runs (days on a 2-core CPU)."""


class _Fmt(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's help ends with its default (none shown for flags and required arguments)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, False, argparse.SUPPRESS) or action.required:
            return action.help
        return super()._get_help_string(action)


class _SubParser(argparse.ArgumentParser):
    def __init__(self, *args: object, **kw: object) -> None:
        kw.setdefault("formatter_class", _Fmt)
        super().__init__(*args, **kw)  # type: ignore[arg-type]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("vsandx")
    except PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vsandx", description="vSAN performance diagnostics", formatter_class=_Fmt)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_SubParser)

    sim = sub.add_parser("simulate", help="write labelled, fault-injected diagnosis bundles")
    sim.add_argument("--profile", choices=("lab", "field"), required=True,
                     help="lab: PerfPsychic's fixed 4-host test bed; field: varied customer clusters")  # fmt: skip
    sim.add_argument("-n", type=_positive, required=True, help="number of bundles")
    sim.add_argument("--out", required=True, help="output directory (created)")
    sim.add_argument("--seed", type=int, default=0, help="the same seed writes byte-identical bundles")
    sim.add_argument(
        "--format",
        choices=("tgz", "dir", "zip"),
        default="tgz",
        help="tgz (default), a plain directory, or a vCenter-style zip of host .tgz files",
    )
    sim.add_argument(
        "--issue-rate",
        type=float,
        default=None,
        help="share of bundles with at least one fault (lab default 0.5, field 0.78)",
    )
    sim.add_argument(
        "--only-causes",
        action="append",
        metavar="CAUSES",
        help="draw faults only through these causes: fault:cause or a cause name, comma-separated "
        "(README, Fault causes); faults with none of them are not drawn",
    )
    sim.add_argument(
        "--exclude-causes",
        action="append",
        metavar="CAUSES",
        help="never draw these causes (another cause of the fault is drawn, or another fault)",
    )
    sim.add_argument("--workers", type=int, default=None, help="processes (default: one per core)")
    sim.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    sim.set_defaults(func=_cmd_simulate)

    prs = sub.add_parser("parse", help="read one bundle and print what the pipeline found")
    prs.add_argument("bundle", help=".tgz/.tar.gz/.tar/.zip or a directory")
    prs.add_argument("--json", action="store_true", help="one JSON document on stdout")
    prs.set_defaults(func=_cmd_parse)
    diag = sub.add_parser("diagnose", help="diagnose one bundle with the served model")
    diag.add_argument("bundle", help=".tgz/.tar.gz/.tar/.zip or a directory")
    diag.add_argument("--json", action="store_true", help="print exactly one JSON document on stdout")
    diag.add_argument("--model", default=None, help=MODEL_HELP)
    diag.set_defaults(func=_cmd_diagnose)

    ev = sub.add_parser("evaluate", help="diagnose every labelled bundle in DIR and report accuracy")
    ev.add_argument("dir", help="folder of labelled bundles (as `vsandx simulate` writes them)")
    ev.add_argument("--json", action="store_true", help="print exactly one JSON document on stdout")
    ev.add_argument("--model", default=None, help=MODEL_HELP)
    ev.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    ev.set_defaults(func=_cmd_evaluate)
    tr = sub.add_parser(
        "train",
        help="build datasets, sweep CNNs, benchmark baselines, register the winner",
        epilog=TRAIN_PRESETS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    size = tr.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="small sweep, all baselines, the report (minutes)")
    size.add_argument("--smoke", action="store_true", help="tiny end-to-end run (CI)")
    tr.add_argument("--lab", type=_count, help="lab training bundles (0 = varied only)")
    tr.add_argument("--varied", type=_count, help="field-profile training bundles (domain randomisation; 0 = lab only)")
    tr.add_argument("--val", type=_positive, help="field validation bundles (selection)")
    tr.add_argument("--test", type=_positive, help="field test bundles (never used for a decision)")
    tr.add_argument("--samples", type=_positive, help="sweep trials per CNN family")
    tr.add_argument("--families", help="comma-separated CNN families (see models.registry)")
    tr.add_argument("--seed", type=int, help="seed of the datasets and the sweep (default: the preset's)")
    tr.add_argument("--if-missing", action="store_true", help="only train when no champion is registered")
    tr.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    tr.set_defaults(func=_cmd_train)

    srv = sub.add_parser("serve", help="the web service: API, UI and (embedded default) its workers")
    srv.add_argument("--host", default="127.0.0.1", help="address to listen on")
    srv.add_argument("--port", type=int, default=8000, help="port to listen on")
    srv.add_argument(
        "--workers",
        type=int,
        default=None,
        help="embedded queue: worker processes to start (default VSANDX_WORKER_PROCESSES, else one per core)",
    )
    srv.add_argument("--log-level", default="info", choices=LEVELS, help="log level")
    srv.set_defaults(func=_cmd_serve)
    wk = sub.add_parser("worker", help="a background worker: Celery when VSANDX_BROKER_URL is set, else embedded")
    wk.add_argument("--queues", default="diagnoses,training", help="Celery queues to consume (comma-separated)")
    wk.add_argument("--concurrency", type=_positive, default=None, help="processes (Celery) or threads (embedded)")
    wk.add_argument("--pool", default="prefork", choices=("prefork", "solo", "threads"), help="Celery pool")
    wk.add_argument("--log-level", default="info", choices=LEVELS, help="log level")
    wk.add_argument("--ping", action="store_true", help="exit 0 when a worker of this host answers (healthcheck)")
    wk.set_defaults(func=_cmd_worker)
    bt = sub.add_parser("beat", help="the Celery scheduler of periodic housekeeping (one per deployment)")
    bt.add_argument("--log-level", default="info", choices=LEVELS, help="log level")
    bt.set_defaults(func=_cmd_beat)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    if getattr(args, "issue_rate", None) is not None and not 0.0 <= args.issue_rate <= 1.0:
        parser.error("--issue-rate must be between 0 and 1")
    return func(args)


if __name__ == "__main__":
    sys.exit(main())
