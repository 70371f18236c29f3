"""`vsandx serve`'s worker processes: a dead one is reaped at once and replaced; one that keeps dying
is restarted with a back-off; stop ends them all."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from service.doorbell import process_alive
from service.supervise import WorkerPool
from tests.service.kit import until

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


def test_a_killed_worker_is_reaped_and_replaced() -> None:
    pool = WorkerPool(SLEEPER, 2)
    pool.start(every=0.1)
    try:
        first = pool.pids()
        assert len(first) == 2
        os.kill(first[0], signal.SIGKILL)
        until(lambda: first[0] not in pool.pids() and len(pool.pids()) == 2, timeout=20)
        assert not Path(f"/proc/{first[0]}").exists()  # reaped: no zombie left for kill(pid, 0) to find
        assert first[1] in pool.pids()  # the other one untouched
    finally:
        pool.stop(5)
    assert not any(process_alive(p) for p in first[1:])


def test_a_worker_that_keeps_dying_backs_off() -> None:
    pool = WorkerPool([sys.executable, "-c", "raise SystemExit(3)"], 1)
    pool.start(every=0.05)
    try:
        time.sleep(4.0)  # with back-offs of 1, 2, 4 s: at most 3 restarts, not dozens
        assert 1 <= pool.restarts <= 3, pool.restarts
    finally:
        pool.stop(5)
