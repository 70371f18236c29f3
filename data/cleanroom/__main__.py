"""python -m data.cleanroom OUT_DIR -n N --seed S"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from data.cleanroom import write_cleanroom


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m data.cleanroom", description="write clean-room diagnosis bundles")
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("-n", type=int, default=10, help="number of bundles")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.n < 0:
        ap.error("-n must be >= 0")
    paths = write_cleanroom(args.out_dir, args.n, args.seed)
    print(f"wrote {len(paths)} bundles to {args.out_dir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
