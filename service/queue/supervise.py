"""The worker processes `vsandx serve` runs on the embedded queue: started, reaped, respawned, stopped.

A worker that dies (killed for memory, a crash, SIGKILL) is reaped at once, so it never lingers as a
zombie that looks alive to `kill(pid, 0)`; the job it held is taken over by the next worker's orphan
check (service.queue.diagnosis_jobs.recover_orphans) instead of waiting out its lease; and a new process takes its
place. One that keeps dying right after start is restarted after 1, 2, 4 … 30 s, not in a loop.
"""

from __future__ import annotations

import logging
import subprocess
import threading
import time
from collections.abc import Callable, Sequence

log = logging.getLogger(__name__)
MAX_BACKOFF_S = 30.0
STABLE_S = 10.0  # a process that lived this long resets its slot's back-off


class WorkerPool:
    def __init__(self, argv: Sequence[str], n: int, preexec: Callable[[], None] | None = None) -> None:
        self.argv, self.n, self.preexec = list(argv), n, preexec
        self._procs: list[subprocess.Popen[bytes] | None] = [None] * n
        self._started = [0.0] * n
        self._backoff = [0.0] * n
        self._due = [0.0] * n  # when a dead slot may start again
        self.restarts = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, every: float = 0.5) -> None:
        """Start the processes and a thread that checks them every `every` seconds."""
        self.check()
        self._thread = threading.Thread(target=self._loop, args=(every,), name="vsandx-supervisor", daemon=True)
        self._thread.start()

    def _loop(self, every: float) -> None:
        while not self._stop.wait(every):
            try:
                self.check()
            except Exception:  # keep supervising whatever one round hit (fork failing for memory, …)
                log.exception("worker supervision round failed")

    def check(self) -> None:
        """Reap every worker that exited and start one in its place once its back-off is over."""
        with self._lock:
            if self._stop.is_set():
                return
            now = time.monotonic()
            for i, p in enumerate(self._procs):
                if p is not None and p.poll() is not None:  # poll() reaps: no zombie left behind
                    lived = now - self._started[i]
                    self._backoff[i] = 0.0 if lived >= STABLE_S else min(max(2 * self._backoff[i], 1.0), MAX_BACKOFF_S)
                    self._due[i] = now + self._backoff[i]
                    log.warning("worker process %d exited with status %s after %.0f s; starting another in %.0f s",
                                p.pid, p.returncode, lived, self._backoff[i])  # fmt: skip
                    self._procs[i] = None
                if self._procs[i] is None and now >= self._due[i]:
                    self._procs[i] = subprocess.Popen(self.argv, preexec_fn=self.preexec)
                    self._started[i] = now
                    self.restarts += self._due[i] > 0
        return None

    def pids(self) -> list[int]:
        with self._lock:
            return [p.pid for p in self._procs if p is not None and p.poll() is None]

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM every worker (each finishes its current job), SIGKILL what is left after `timeout`."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        with self._lock:
            procs = [p for p in self._procs if p is not None]
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
