"""Issue 18's bounds on every attack, and how the tests measure them in a live process: the peak resident
set under 600 MB above the idle process, and the wall time under 20 s.

A process's peak is its VmHWM in /proc/PID/status. Writing "5" to /proc/PID/clear_refs resets it to the
current resident set (Linux >= 4.0), so the peak read after the reset is the attack's own and the
resident set at the reset is the idle process's. PID may be "self": an in-process TestClient runs the
API in the test's own process, so the API's growth is this process's.

    with bounded("GET /diagnoses?page=2**62"):          # this process (an in-process TestClient)
        ...
    with bounded("400 MB JSON body", server.pid) as w:  # a `vsandx serve` process
        ...
    print(w.peak_above_idle(), w.wall_s())
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

MAX_RSS_ABOVE_IDLE = 600 * 1024 * 1024
MAX_WALL_S = 20.0
MiB = 2**20
_TICK = os.sysconf("SC_CLK_TCK")

Pid = int | Literal["self"]


def proc_status(pid: Pid, key: str) -> int:
    """A size field of /proc/PID/status (VmRSS, VmHWM, ...) in bytes."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no {key} for process {pid}")


def cpu_s(pid: Pid) -> float:
    """CPU seconds the process has used (utime + stime, fields 14 and 15 of stat(5))."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def reset_peak(pid: Pid) -> None:
    with open(f"/proc/{pid}/clear_refs", "w") as fh:
        fh.write("5")  # VmHWM := VmRSS


@dataclass
class Watch:
    """One process watched from `start` (its resident set then is idle) until `stop` (or now)."""

    pid: Pid
    idle: int = 0
    cpu0: float = 0.0
    t0: float = field(default_factory=time.monotonic)
    end: tuple[int, float, float] | None = None  # (VmHWM, CPU s, clock) at `stop`

    @classmethod
    def start(cls, pid: Pid = "self") -> Watch:
        reset_peak(pid)
        return cls(pid, proc_status(pid, "VmRSS"), cpu_s(pid))

    def _now(self) -> tuple[int, float, float]:
        return self.end or (proc_status(self.pid, "VmHWM"), cpu_s(self.pid), time.monotonic())

    def stop(self) -> Watch:
        self.end = self._now()
        return self

    def peak_above_idle(self) -> int:
        return self._now()[0] - self.idle

    def cpu_s(self) -> float:
        return self._now()[1] - self.cpu0

    def wall_s(self) -> float:
        return self._now()[2] - self.t0

    def check(self, what: str, max_rss: int = MAX_RSS_ABOVE_IDLE, max_wall_s: float = MAX_WALL_S) -> None:
        peak, wall = self.peak_above_idle(), self.wall_s()
        who = "this process" if self.pid == "self" else f"process {self.pid}"
        assert peak < max_rss, f"{what}: peak RSS of {who} {peak / MiB:.0f} MiB above idle"
        assert wall < max_wall_s, f"{what}: {wall:.1f} s wall"


@contextmanager
def bounded(what: str, pid: Pid = "self") -> Iterator[Watch]:
    """Run the block under issue 18's bounds on process `pid`: fails when its peak RSS went 600 MB or
    more above what it held at the start, or when the block took 20 s or more."""
    w = Watch.start(pid)
    yield w
    w.stop()
    print(f"{what}: +{w.peak_above_idle() / MiB:.0f} MiB, {w.wall_s():.2f} s wall")  # shown with pytest -s
    w.check(what)
