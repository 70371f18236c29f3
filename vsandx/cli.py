"""The one entry point, `vsandx`. Each subcommand imports its area lazily so `--help` is instant."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path


def _positive(text: str) -> int:
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vsandx", description="vSAN performance diagnostics")
    sub = parser.add_subparsers(dest="command", required=True)

    sim = sub.add_parser("simulate", help="write labelled, fault-injected diagnosis bundles")
    sim.add_argument("--profile", choices=("lab", "field"), required=True)
    sim.add_argument("-n", type=_positive, required=True, help="number of bundles")
    sim.add_argument("--out", required=True, help="output directory")
    sim.add_argument("--seed", type=int, default=0)
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
    sim.add_argument("--workers", type=int, default=None, help="processes (default: one per core)")
    sim.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    sim.set_defaults(func=_cmd_simulate)

    prs = sub.add_parser("parse", help="read one bundle and print what the pipeline found")
    prs.add_argument("bundle", help=".tgz/.tar.gz/.tar/.zip or a directory")
    prs.add_argument("--json", action="store_true", help="one JSON document on stdout")
    prs.set_defaults(func=_cmd_parse)
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
