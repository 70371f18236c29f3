"""python -m data.outsider OUT_DIR -n N --seed S: write N outsider bundles as .tgz archives."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from data.outsider.bundle import write_outsider


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m data.outsider", description=__doc__)
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("-n", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    paths = write_outsider(a.out_dir, a.n, a.seed)
    print(f"wrote {len(paths)} bundles to {a.out_dir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
