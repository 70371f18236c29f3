"""How many trials the memory holds: the datasets' loaded size read from their zips, and the arithmetic."""

from __future__ import annotations

from pathlib import Path

from training.datasets import DatasetSpec, build, load_dataset
from training.sweep_memory import (
    WORKER_BYTES,
    largest_bundle_bytes,
    largest_draw,
    loaded_bytes,
    memory_concurrency,
    trial_bytes,
)

GIB = 2**30


def test_loaded_bytes_is_what_the_arrays_take_once_loaded(tmp_path: Path) -> None:
    folder = build(DatasetSpec("lab", 3, seed=41), tmp_path, workers=1, progress=False)
    X, _ = load_dataset(folder)
    arrays = sum(a.nbytes for bt in X for kt in bt.kinds.values() for a in (kt.values, kt.mask, kt.static,
                 kt.static_mask, kt.host_index, kt.group_index))  # fmt: skip
    got = loaded_bytes(folder)
    # the .npy members: the arrays, each member's header (128 bytes or so) and the JSON meta document
    assert arrays < got < arrays + 0.05 * arrays
    (folder / "broken.npz").write_bytes(b"not a zip")  # the trial that reads it says so; not counted here
    assert loaded_bytes(folder) == got
    assert loaded_bytes(tmp_path / "empty") == 0


def test_memory_concurrency_fits_trials_under_the_kill_line() -> None:
    line = 0.95 * 16 * GIB
    assert memory_concurrency(4, 16 * GIB, int(line - 2.5 * GIB), GIB) == 2
    assert memory_concurrency(2, 16 * GIB, int(line - 8 * GIB), GIB) == 2  # no more than the CPUs
    assert memory_concurrency(4, 16 * GIB, int(line - 2.5 * GIB), GIB, reserve=GIB) == 1
    assert memory_concurrency(4, 16 * GIB, 16 * GIB, GIB) == 1  # over the line already: one, which says why
    assert memory_concurrency(4, 16 * GIB, int(0.5 * 16 * GIB - 2.5 * GIB), GIB, kill_share=0.5) == 2


def test_a_trial_adds_its_worker_and_activations_that_grow_with_its_batches() -> None:
    recipe = {"batch_size": 8, "seeds": 3, "width": 32, "depth": 2}  # cnn_small's, with the standard preset's seeds
    assert trial_bytes(0, recipe) == WORKER_BYTES
    # the measured trial of that recipe: 1.66 GiB of its own, the largest of 1,100 bundles 15.1 MB loaded
    assert 1.66 < trial_bytes(15_124_282, recipe) / GIB < 1.66 * 1.2
    act = trial_bytes(GIB // 100, recipe) - WORKER_BYTES
    assert trial_bytes(GIB // 100, recipe | {"batch_size": 32}) - WORKER_BYTES == 4 * act
    assert largest_bundle_bytes(Path("/nonexistent")) == 0


def test_the_sweep_is_sized_for_the_largest_batch_it_can_draw() -> None:
    assert largest_draw("cnn_small", {})["batch_size"] == 32  # the space's largest, not the recipe's 8
    assert largest_draw("cnn_base", {"batch_size": 4, "seeds": 3}) | {} == largest_draw("cnn_base", {}) | {
        "batch_size": 4,
        "seeds": 3,
    }  # what the preset fixes is what every trial runs
