"""A memory ceiling and a wall-clock limit on each diagnosis, on every queue.

One thread per worker process watches the job that process runs (`Watchdog.guard`): its resident
memory above what the process held when the job started, and its time. On a breach the job is failed
with the reason first (so it is never retried: a bundle that blew a limit once will again), then a
dedicated worker process (`vsandx worker`, a Celery pool child) exits at once, which is the only way
to stop a runaway parse in Python; `vsandx serve` and Celery start a new one. A worker thread inside
the API process cannot be stopped without taking the API down, so there the job is failed and the
breach logged.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

log = logging.getLogger(__name__)
EXIT_STATUS = 70  # a worker that ended itself over a job's limits (EX_SOFTWARE)
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss_bytes() -> int:
    """This process's resident set, from /proc (0 where there is none)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


@dataclass
class _Job:
    label: str
    started: float
    rss0: int
    on_breach: Callable[[str], None]
    tripped: bool = False


class Watchdog:
    def __init__(self, memory_bytes: int, seconds: float, exit_on_breach: bool, every: float = 0.1) -> None:
        self.memory_bytes, self.seconds, self.exit_on_breach, self.every = memory_bytes, seconds, exit_on_breach, every
        self._jobs: dict[int, _Job] = {}  # by thread id: one job per worker thread
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @contextmanager
    def guard(self, label: str, on_breach: Callable[[str], None]) -> Iterator[None]:
        """Watch the block (one job) on this thread; `on_breach(reason)` fails the job."""
        self._ensure_thread()
        key = threading.get_ident()
        with self._lock:
            self._jobs[key] = _Job(label, time.monotonic(), rss_bytes(), on_breach)
        try:
            yield
        finally:
            with self._lock:
                self._jobs.pop(key, None)

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._watch, name="vsandx-watchdog", daemon=True)
                self._thread.start()

    def _watch(self) -> None:
        while True:
            time.sleep(self.every)
            now, rss = time.monotonic(), rss_bytes()
            with self._lock:
                jobs = [j for j in self._jobs.values() if not j.tripped]
            for job in jobs:
                grown, took = rss - job.rss0, now - job.started
                if self.memory_bytes and grown > self.memory_bytes:
                    reason = f"memory limit exceeded: {grown >> 20} MiB above the worker's {job.rss0 >> 20} MiB " \
                             f"(VSANDX_JOB_MEMORY_LIMIT_MB={self.memory_bytes >> 20})"  # fmt: skip
                elif self.seconds and took > self.seconds:
                    reason = f"time limit exceeded: {took:.0f} s (VSANDX_TASK_TIME_LIMIT_S={self.seconds:g})"
                else:
                    continue
                job.tripped = True
                self._breach(job, reason)

    def _breach(self, job: _Job, reason: str) -> None:
        log.error("%s: %s", job.label, reason)
        try:
            job.on_breach(reason)
        except Exception:  # the job keeps its lease and is failed when that runs out
            log.exception("%s: could not record the breach", job.label)
        if self.exit_on_breach:
            logging.shutdown()
            os._exit(EXIT_STATUS)


_shared: Watchdog | None = None


def process_watchdog(memory_bytes: int, seconds: float) -> Watchdog:
    """This process's watchdog. It exits the process on a breach unless the process serves the API
    (`allow_exit(False)`, called by service.app)."""
    global _shared
    if _shared is None:
        _shared = Watchdog(memory_bytes, seconds, exit_on_breach=_exit_allowed)
    _shared.memory_bytes, _shared.seconds = memory_bytes, seconds
    return _shared


_exit_allowed = True


def allow_exit(allowed: bool) -> None:
    """False in a process whose death would take more than one job with it (the API process)."""
    global _exit_allowed
    _exit_allowed = allowed
    if _shared is not None:
        _shared.exit_on_breach = allowed
