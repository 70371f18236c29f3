"""Each diagnosis under a memory ceiling and a wall-clock limit: the job is failed with the reason, and
a dedicated worker process ends itself (its supervisor starts another)."""

from __future__ import annotations

import subprocess
import sys
import time

from service.queue.watchdog import EXIT_STATUS, Watchdog


def _run_guarded(dog: Watchdog, work: float, grow_mb: int = 0) -> list[str]:
    got: list[str] = []
    with dog.guard("job test", got.append):
        hog = bytearray(grow_mb << 20)  # zero-filled: every page touched, so resident
        deadline = time.monotonic() + work
        while time.monotonic() < deadline and not got:
            time.sleep(0.02)
        del hog
    return got


def test_memory_ceiling_fails_the_job_with_the_reason() -> None:
    got = _run_guarded(Watchdog(64 << 20, 0, exit_on_breach=False, every=0.02), work=5.0, grow_mb=200)
    assert len(got) == 1 and got[0].startswith("memory limit exceeded") and "VSANDX_JOB_MEMORY_LIMIT_MB=64" in got[0]


def test_wall_clock_limit_fails_the_job_once() -> None:
    dog = Watchdog(0, 0.2, exit_on_breach=False, every=0.02)
    got = _run_guarded(dog, work=5.0)
    assert len(got) == 1 and got[0].startswith("time limit exceeded")
    assert _run_guarded(dog, work=0.05) == []  # the next job starts its own clock


def test_a_worker_process_ends_itself_after_recording_the_breach() -> None:
    probe = (
        "import time; from service.queue.watchdog import process_watchdog\n"
        "dog = process_watchdog(32 << 20, 0)\n"
        "with dog.guard('job x', lambda why: print('failed:', why, flush=True)):\n"
        "    hog = bytearray(256 << 20); time.sleep(30)\n"
        "print('not reached')\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == EXIT_STATUS and done.stdout.startswith("failed: memory limit exceeded"), done
    assert "not reached" not in done.stdout
