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
    with bounded_tree("a worker killed", server.pid, ended={killed}):  # serve and its worker processes
        ...
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Iterator
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

    max_wall_s: float = MAX_WALL_S

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

    def check(self, what: str, max_rss: int = MAX_RSS_ABOVE_IDLE, max_wall_s: float | None = None) -> None:
        peak, wall, max_wall_s = self.peak_above_idle(), self.wall_s(), max_wall_s or self.max_wall_s
        who = "this process" if self.pid == "self" else f"process {self.pid}"
        assert peak < max_rss, f"{what}: peak RSS of {who} {peak / MiB:.0f} MiB above idle"
        assert wall < max_wall_s, f"{what}: {wall:.1f} s wall"


@contextmanager
def bounded(what: str, pid: Pid = "self", max_wall_s: float = MAX_WALL_S) -> Iterator[Watch]:
    """Run the block under issue 18's bounds on process `pid`: fails when its peak RSS went 600 MB or
    more above what it held at the start, or when the block took 20 s or more (`max_wall_s` for a block
    of many attacks in a row, each held to 20 s by its caller)."""
    w = Watch.start(pid)
    w.max_wall_s = max_wall_s
    yield w
    w.stop()
    print(f"{what}: {w.peak_above_idle() / MiB:+.0f} MiB, {w.wall_s():.2f} s wall")  # shown with pytest -s
    w.check(what)


def children(pid: int) -> list[int]:
    """The process's children, whichever of its threads started them (a supervisor thread respawns)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                found += [int(c) for c in fh.read().split()]
        except FileNotFoundError:
            continue
    return found


def _tree(root: int) -> dict[int, int]:
    """`root` and its descendants, parents first: {pid: parent pid} (root's parent: 0)."""
    found, todo = {root: 0}, [root]
    while todo:
        pid = todo.pop(0)
        for kid in children(pid):
            if kid not in found:
                found[kid] = pid
                todo.append(kid)
    return found


@contextmanager
def bounded_tree(
    what: str, root: int, ended: Collection[int] = (), max_wall_s: float = MAX_WALL_S
) -> Iterator[dict[int, Watch]]:
    """bounded() on a process and every descendant (`vsandx serve` and its worker processes, a Celery
    worker and its pool): each one alive at the start is held to the bounds from what it held then;
    one started during the block (a worker replacing a killed one, a new pool child) from the idle
    resident set of the process it was started from, with its peak since birth. A watched process that
    ends during the block fails the check unless it is in `ended` (the test killed it).
    `max_wall_s` is for a check that runs long on purpose (the 3-minute load), whose own requests are
    held to 20 s each."""
    t0 = time.monotonic()
    watches: dict[int, Watch] = {}
    for pid in _tree(root):
        try:
            watches[pid] = Watch.start(pid)
        except FileNotFoundError:
            continue
    yield watches
    now = _tree(root)
    for pid, parent in now.items():
        if pid not in watches:  # born during the block
            base = watches.get(parent) or watches[root]
            watches[pid] = Watch(pid, idle=base.idle, t0=t0)
    gone = {pid for pid in watches if pid not in now or _zombie(pid)}
    assert gone <= set(ended), f"{what}: processes {sorted(gone - set(ended))} ended during the block"
    for pid, w in watches.items():
        if pid not in gone:
            w.max_wall_s = max_wall_s
            w.stop()
            print(f"{what} (process {pid}): {w.peak_above_idle() / MiB:+.0f} MiB, {w.wall_s():.2f} s wall")
    for pid, w in watches.items():
        if pid not in gone:
            w.check(f"{what} (process {pid})")


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True
