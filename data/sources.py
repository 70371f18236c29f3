"""The other bundle generators, each written from ../shared/spec alone by its own author and sharing no
code with data/simulate: the clean-room generator (data/cleanroom) and the outsider (data/outsider).

They stand in for the bundles of other producers. Each measures the models when they never trained on
it (benchmarks/bench_cleanroom.py), and one may train beside the simulator while the other measures
(leave-one-source-out, training.config's `sources`): the model then learns what two authors' readings
of the spec share, not what one of them chose.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from data.cleanroom import cleanroom_bundle, write_cleanroom
from data.outsider import outsider_bundle, write_outsider

# (seed, index) -> (name, files inside the upload, labels.json's dict)
Bundle = Callable[[int, int], tuple[str, dict[str, bytes], dict[str, object]]]
BUNDLES: dict[str, Bundle] = {"cleanroom": cleanroom_bundle, "outsider": outsider_bundle}
# Bump when a generator changes what a seed produces: cached datasets of its bundles key on it.
VERSIONS: dict[str, str] = {"cleanroom": "1", "outsider": "1"}
# (out_dir, n, seed) -> the .tgz archives written
WRITERS: dict[str, Callable[[Path, int, int], list[Path]]] = {"cleanroom": write_cleanroom, "outsider": write_outsider}
