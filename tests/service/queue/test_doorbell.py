"""Loopback wake-ups between the embedded queue's processes: delivered by role, dead ones forgotten."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
from pathlib import Path

from service.queue.doorbell import Doorbell, process_alive
from tests.service.kit import until


def test_ring_reaches_every_process_of_a_role(tmp_path: Path) -> None:
    api, w1, w2 = Doorbell(tmp_path, "api"), Doorbell(tmp_path, "worker"), Doorbell(tmp_path, "worker")
    got: queue.Queue[tuple[str, str]] = queue.Queue()
    for name, bell in (("api", api), ("w1", w1), ("w2", w2)):
        bell.listen(lambda text, name=name: got.put((name, text)))  # type: ignore[misc]
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    stale = tmp_path / f"worker-{gone.pid}-9.port"
    stale.touch()
    try:
        assert api.count("worker") == 2 and w1.count("api") == 1
        api.ring("worker", "job-1")
        assert sorted(got.get(timeout=5) for _ in range(2)) == [("w1", "job-1"), ("w2", "job-1")]
        w2.ring("api", "job-1")
        assert got.get(timeout=5) == ("api", "job-1")
        assert got.empty() and not stale.exists()  # a dead process's file is removed
    finally:
        for bell in (api, w1, w2):
            bell.close()
    assert not list(tmp_path.iterdir())


def test_a_zombie_is_not_alive() -> None:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    assert process_alive(p.pid)
    os.kill(p.pid, signal.SIGKILL)
    until(lambda: not process_alive(p.pid), timeout=10)  # exited but not reaped: a zombie, still "killable"
    p.wait()
