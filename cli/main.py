"""The one entry point, `vsandx`: the parser and `main`. The subcommands live in cli.offline and cli.online
and import their areas lazily, so `--help` is instant."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from cli import offline, online


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


def _source(text: str) -> tuple[str, int]:
    name, sep, n = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=N (e.g. cleanroom=100), got {text!r}")
    return name, _count(n)


MODEL_HELP = "model folder, models:/<name>@<alias> or models:/<name>/<version> (default: the registry's champion)"
LEVELS = ("critical", "error", "warning", "info", "debug")
TRAIN_PRESETS = """defaults, by preset (training.run.TrainConfig.preset):
  preset  --lab  --varied  --focus  --val  --test  --samples  --families                --seed  --sweep-minutes --source
  smoke      24        8        4      8      8          2  cnn_small                     0       0             -
  quick     200      200       40    100    200          2  cnn_small                     0       0             -
  standard  200      800      100    200    400          2  cnn_small,cnn_base            0      18             -
  full     5000     2000      250    600   1000         16  cnn_small,cnn_base,cnn_deep  0       0             -
(--focus: field bundles drawn only through the hot spot's causes; --sweep-minutes 0: no deadline;
--run-minutes: the whole run's budget, the sweeps sharing what the datasets leave of it less the minutes
kept for the ensemble, scoring and the learning curve (whose refits end 2 minutes before the budget):
the standard preset's 60, 16 of them kept; the others' 0, none)
without --quick, --standard or --smoke the full preset runs (days on a 2-core CPU)."""


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
    sim.set_defaults(func=offline.simulate)

    prs = sub.add_parser("parse", help="read one bundle and print what the pipeline found")
    prs.add_argument("bundle", help=".tgz/.tar.gz/.tar/.zip or a directory")
    prs.add_argument("--json", action="store_true", help="one JSON document on stdout")
    prs.set_defaults(func=offline.parse)
    diag = sub.add_parser("diagnose", help="diagnose one bundle with the served model")
    diag.add_argument("bundle", help=".tgz/.tar.gz/.tar/.zip or a directory")
    diag.add_argument("--json", action="store_true", help="print exactly one JSON document on stdout")
    diag.add_argument("--model", default=None, help=MODEL_HELP)
    diag.set_defaults(func=offline.diagnose)

    ev = sub.add_parser("evaluate", help="diagnose every labelled bundle in DIR and report accuracy")
    ev.add_argument("dir", help="folder of labelled bundles (as `vsandx simulate` writes them)")
    ev.add_argument("--json", action="store_true", help="print exactly one JSON document on stdout")
    ev.add_argument("--model", default=None, help=MODEL_HELP)
    ev.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    ev.set_defaults(func=offline.evaluate)
    tr = sub.add_parser(
        "train",
        help="build datasets, sweep CNNs, benchmark baselines, register the winner",
        epilog=TRAIN_PRESETS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    size = tr.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="2 trials of 3 networks, all baselines, the report")
    size.add_argument(
        "--standard", action="store_true", help="more field bundles, two families, 16 epochs, 3 networks a trial"
    )
    size.add_argument("--smoke", action="store_true", help="tiny end-to-end run (CI)")
    tr.add_argument("--lab", type=_count, help="lab training bundles (0 = varied only)")
    tr.add_argument("--varied", type=_count, help="field-profile training bundles (domain randomisation; 0 = lab only)")
    tr.add_argument(
        "--focus",
        type=_count,
        help="field-profile training bundles drawn only through the hot spot's causes, a fault the field's "
        "hardware makes rare (it needs all-flash with deduplication)",
    )
    tr.add_argument(
        "--source",
        action="append",
        type=_source,
        metavar="NAME=N",
        help="N training bundles from another author's generator (data.sources: cleanroom, outsider); repeatable",
    )
    tr.add_argument("--val", type=_positive, help="field validation bundles (selection)")
    tr.add_argument("--test", type=_positive, help="field test bundles (never used for a decision)")
    tr.add_argument("--samples", type=_positive, help="sweep trials per CNN family")
    tr.add_argument("--families", help="comma-separated CNN families (see models.registry)")
    tr.add_argument("--seed", type=int, help="seed of the datasets and the sweep (default: the preset's)")
    tr.add_argument(
        "--sweep-minutes",
        type=float,
        help="each family's sweep stops its trials' training at this many minutes, keeping their best epoch",
    )
    tr.add_argument(
        "--run-minutes",
        type=float,
        help="the whole run's minutes: the sweeps' deadlines shrink to what the datasets leave of them, and "
        "the learning curve's refits end 2 minutes before it",
    )
    tr.add_argument("--if-missing", action="store_true", help="only train when no champion is registered")
    tr.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    tr.set_defaults(func=offline.train)

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
    srv.set_defaults(func=online.serve)
    wk = sub.add_parser("worker", help="a background worker: Celery when VSANDX_BROKER_URL is set, else embedded")
    wk.add_argument("--queues", default="diagnoses,training", help="Celery queues to consume (comma-separated)")
    wk.add_argument("--concurrency", type=_positive, default=None, help="processes (Celery) or threads (embedded)")
    wk.add_argument("--pool", default="prefork", choices=("prefork", "solo", "threads"), help="Celery pool")
    wk.add_argument("--log-level", default="info", choices=LEVELS, help="log level")
    wk.add_argument("--ping", action="store_true", help="exit 0 when a worker of this host answers (healthcheck)")
    wk.set_defaults(func=online.worker)
    bt = sub.add_parser("beat", help="the Celery scheduler of periodic housekeeping (one per deployment)")
    bt.add_argument("--log-level", default="info", choices=LEVELS, help="log level")
    bt.set_defaults(func=online.beat)
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
