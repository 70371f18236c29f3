"""Run `vsandx parse BUNDLE --json` in this process and report its peak RSS (VmHWM) on stderr.

`python tests/attacks/runner.py --idle` reports the peak of a process that only imported the
pipeline: the baseline the attack tests measure against.
"""

from __future__ import annotations

import sys


def vm_hwm_kib() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def main(argv: list[str]) -> int:
    import pipeline  # noqa: F401  # what every run pays: the baseline includes it
    from cli.main import main as cli

    rc = 0
    try:
        if argv[:1] != ["--idle"]:
            rc = cli(["parse", argv[0], "--json"])
    finally:
        sys.stdout.flush()
        print(f"VMHWM_KIB {vm_hwm_kib()}", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
