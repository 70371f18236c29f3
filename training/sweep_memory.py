"""How many sweep trials this machine's memory holds at once, decided before the sweep starts (no Ray here).

The standard preset on a 24 GB machine once ran its two cnn_small trials at once, each with its own
copy of the 1,300 training bundles' arrays; six minutes in, Ray's out-of-memory killer ended one at 22.6
of 23.5 GB, both ran again one at a time, and the preset went past its hour. Now the sweep puts its
datasets in Ray's object store once and every trial maps them (training/tune.py), so a trial adds only
its working set (the worker's interpreter and torch, the network and the activations of its batches),
and the sweep runs as many trials at once as the memory left under Ray's kill line holds for the largest
batches the sweep can draw, at least one. A trial that outgrows the estimate still meets the sweep's
out-of-memory fallback (the trials left run again one at a time).
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from models.registry import create_model, search_space

# A trial's own memory beyond the shared arrays: a Ray worker with torch imported, plus the activations
# training keeps for its backward pass, which grow with the batch's largest bundles (a 32-host cluster's
# 480 disks) and the seeds trained side by side. Measured (benchmarks/bench_sweep_memory.py, README) on
# the standard preset's datasets, the largest of 1,100 training bundles 15.1 MB loaded: a trial of
# cnn_small's recipe (batches of 8, 3 seeds) peaked at 1.66 GiB of its own; one epoch on its 24 largest
# and 24 smallest bundles in one process took 0.99 GiB past the loaded arrays for cnn_small's recipe and
# 1.21 GiB for cnn_base's (wider and deeper: the activations are mostly the stem's), 3.6 times 3 x 8 x
# 15.1 MB. Width over stride counts too: in the standard preset's own sweep a cnn_small draw of batches of
# 16, width 48 and stride 2 peaked at 5.51 GiB, where the estimate at its own batch is 3.0 and at the
# sweep's largest batch, which the sweep is sized by, 5.45. The estimate is no bound on every draw (width
# 48 at stride 2 and batches of 32 would be 3 x more): sized for the largest of all, the standard preset
# would run one trial at a time on 24 GiB, where two ran with 4.9 GiB to spare.
WORKER_BYTES = 600 * 2**20
ACTIVATION_RATIO = 3.6

DEFAULT_KILL_SHARE = 0.95  # Ray's RAY_memory_usage_threshold: it kills a worker above this share of the total


def loaded_bytes(folder: Path) -> int:
    """The bytes a built dataset's arrays take once loaded: the uncompressed sizes of its .npz members,
    read from each zip's directory (nothing is decompressed). A folder that holds none: 0."""
    return sum(bundle_sizes(folder))


def largest_bundle_bytes(folder: Path) -> int:
    """The loaded size of the dataset's largest bundle (0 for none)."""
    return max(bundle_sizes(folder), default=0)


def bundle_sizes(folder: Path) -> list[int]:
    """Each bundle's loaded size, in file order (one read of the folder's zip directories)."""
    sizes = []
    for path in sorted(folder.glob("*.npz")):
        try:
            with zipfile.ZipFile(path) as z:
                sizes.append(sum(info.file_size for info in z.infolist()))
        except (OSError, zipfile.BadZipFile):
            continue  # unreadable here is unreadable to the trial too, which says so
    return sizes


def trial_bytes(largest: int, params: Mapping[str, Any]) -> int:
    """What one trial of a CNN with `params` (its batch_size and seeds) adds to the machine beside the
    shared datasets, whose largest bundle takes `largest` bytes loaded."""
    batch = int(params.get("batch_size", 8)) * int(params.get("seeds", 1)) * largest
    return WORKER_BYTES + int(ACTIVATION_RATIO * batch)


def memory_concurrency(slots: int, total: int, used: int, per_trial: int, reserve: int = 0,
                       kill_share: float = DEFAULT_KILL_SHARE) -> int:  # fmt: skip
    """How many trials to run at once: as many of `slots` (what the CPUs or GPUs allow) as fit between
    `used` bytes (now, the shared datasets included) plus `reserve` (what the run's other processes
    will still take while the sweep runs) and Ray's kill line at `kill_share` of `total`; at least one,
    which a sweep that does not fit needs anyway (the out-of-memory advice then says what to change)."""
    room = kill_share * total - used - reserve
    return max(1, min(slots, int(room // max(per_trial, 1))))


def largest_draw(model: str, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The family's recipe with the largest batch its sweep can draw (what a trial's memory grows with)."""
    params = create_model(model).get_params()
    kind, *values = search_space(model).get("batch_size", ("choice", [params.get("batch_size", 8)]))
    return params | {"batch_size": max(values[0] if kind == "choice" else values)} | dict(overrides)


def sweep_concurrency(model: str, overrides: Mapping[str, Any], reserve: int, shared: int, largest: int,
                      slots: int, total: int, used: int, kill_share: float) -> int:  # fmt: skip
    """How many trials of `model`'s sweep to run at once on a machine of `slots` CPU (or GPU share) slots
    and `total` bytes, `used` of them now: 0 when every slot fits, else the number that does, said on
    stderr. `shared`: the datasets' bytes, which go into the object store once (not yet counted as
    used); `largest`: the training set's largest bundle's; `reserve`: the run's other processes'."""
    trial = trial_bytes(largest, largest_draw(model, overrides))
    n = memory_concurrency(slots, total, used + shared, trial, reserve, kill_share)
    if n < slots:
        print(
            f"sweep {model}: {n} trial(s) at a time, not {slots}: {(total - used) / 2**30:.1f} of "
            f"{total / 2**30:.1f} GiB free, Ray's out-of-memory killer acts above {kill_share:.0%}; the datasets "
            f"take {shared / 2**30:.1f} GiB once, a trial ~{trial / 2**30:.1f} GiB beside them, "
            f"the run's other work {reserve / 2**30:.1f} GiB",
            file=sys.stderr,
        )
    return n if n < slots else 0


def release_freed() -> None:
    """Hand the heap's freed pages back to the system (glibc keeps them): once the datasets are in the
    object store, the 2.2 GB of arrays this process read for it (the standard preset's) would otherwise
    sit beside the store's copy."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
