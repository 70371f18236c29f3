"""Why a sweep ended with no trial to select, in words that say what to change (no Ray here)."""

from __future__ import annotations

from pathlib import Path


class SweepFailed(RuntimeError):
    """No trial of a sweep finished; the message says why and what to change."""


def _memory_gib() -> tuple[float, float] | None:
    """(total, available) GiB of this machine, from /proc/meminfo; None where there is none."""
    try:
        info = {line.split(":")[0]: int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()[:8]}
        return info["MemTotal"] / 2**20, info["MemAvailable"] / 2**20
    except (OSError, KeyError, IndexError, ValueError):
        return None


def out_of_memory_advice(model: str, detail: str, alone: bool) -> str:
    """Why a sweep none of whose trials survived Ray's out-of-memory killer failed (`detail`: what Ray
    said; `alone`: one trial at a time was tried too), and what to change."""
    mem = _memory_gib()
    where = f" This machine has {mem[0]:.1f} GiB, {mem[1]:.1f} GiB available now." if mem else ""
    return (
        f"Ray's out-of-memory killer ended every trial of the {model} sweep"
        f"{', one at a time too' if alone else ''} ({detail}).{where} "
        "A trial holds its training set and network beside this process's datasets: stop other trainings and "
        "memory-heavy processes on this machine (one `vsandx train` at a time), or train smaller: a smaller "
        "preset (--quick), fewer training bundles (--lab N --varied N) or fewer families (--families cnn_small)."
    )
