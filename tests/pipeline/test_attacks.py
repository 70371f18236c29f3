"""The attack corpus of issue 18 (tests/attacks/corpus.py), each case in its own `vsandx parse`
process: the outcome, the peak RSS above an idle process, and the time it took.

Each child is reaped with os.wait4, whose rusage is that child's own: its peak RSS (ru_maxrss) and
the CPU it used. Issue 18's bounds (tests/attacks/bounds.py): peak RSS under 600 MB above an idle
process, wall time under 20 s; the CPU seconds (the parser's own work, whatever the neighbours do on a
shared machine) are held to 20 s as well.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.attacks.bounds import MAX_RSS_ABOVE_IDLE, MAX_WALL_S
from tests.attacks.corpus import CASES, SLOW, Case

REPO = Path(__file__).resolve().parents[2]
RUNNER = REPO / "tests" / "attacks" / "runner.py"
MAX_CPU_S = 20.0
AS_LIMIT = 3 << 30  # a regression must fail this test, not the machine


@dataclass
class Run:
    rc: int
    stdout: str
    stderr: str
    rss: int  # bytes
    cpu_s: float
    wall_s: float


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def run_parse(args: list[str], env: dict[str, str] | None = None) -> Run:
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t = time.monotonic()
        p = subprocess.Popen(
            [sys.executable, str(RUNNER), *args], stdout=out, stderr=err, env=full_env, cwd=REPO, preexec_fn=_limit
        )
        try:
            _pid, status, ru = os.wait4(p.pid, 0)
        finally:
            p.returncode = 0  # reaped here; keep Popen from waiting on it again
        wall = time.monotonic() - t
        out.seek(0)
        err.seek(0)
        return Run(
            os.waitstatus_to_exitcode(status),
            out.read(),
            err.read(),
            ru.ru_maxrss * 1024,
            ru.ru_utime + ru.ru_stime,
            wall,
        )


@pytest.fixture(scope="module")
def idle_rss() -> int:
    r = run_parse(["--idle"])
    assert r.rc == 0, r.stderr
    return r.rss


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("attacks")


def _check(case: Case, r: Run, idle: int) -> None:
    msg = [ln for ln in r.stderr.splitlines() if ln and not ln.startswith("VMHWM_KIB")]
    if case.outcome == "reject":
        assert r.rc == 1, f"{case.name}: exit {r.rc}, stderr {r.stderr[-2000:]}"
        assert msg and msg[-1].startswith("vsandx parse: "), msg
        assert case.expect in msg[-1], msg[-1]
        assert case.where and case.where in msg[-1], msg[-1]
    else:
        assert r.rc == 0, f"{case.name}: exit {r.rc}, stderr {r.stderr[-2000:]}"
        doc = json.loads(r.stdout)
        assert doc["components"]["disk"]["count"] > 0
        if case.outcome == "warn":
            assert any(case.expect in w for w in doc["warnings"]), doc["warnings"]
    above = r.rss - idle
    assert above < MAX_RSS_ABOVE_IDLE, f"{case.name}: peak RSS {above / 2**20:.0f} MiB above idle"
    assert r.cpu_s < MAX_CPU_S, f"{case.name}: {r.cpu_s:.1f} s of CPU"
    assert r.wall_s < MAX_WALL_S, f"{case.name}: {r.wall_s:.1f} s wall"


_PARAMS = [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in CASES]


@pytest.mark.parametrize("name", _PARAMS)
def test_attack(name: str, corpus_dir: Path, idle_rss: int) -> None:
    case = CASES[name](corpus_dir)
    try:
        assert case.path.stat().st_size < 8 * 1024 * 1024  # small on disk: the corpus stays cheap
        r = run_parse([str(case.path)], case.env)
        print(f"{name}: rc {r.rc}, +{(r.rss - idle_rss) / 2**20:.0f} MiB, {r.cpu_s:.1f} s CPU, {r.wall_s:.1f} s wall")
        _check(case, r, idle_rss)
    finally:
        case.path.unlink(missing_ok=True)
