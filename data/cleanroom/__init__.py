"""Clean-room second bundle generator: vSAN diagnosis bundles written from the shared spec alone.

It stands in for an outside producer of bundles, so it shares no code or modelling with `data/simulate`;
numpy and the standard library only. Changed once after its first measurement against the project's
models, where it contradicted faults.md: healthy benchmarks had run one thread per disk on 8-disk VMs
(the spec's under-driven cause, labelled healthy); they now hold 4-32 per disk, and under-driven
benchmarks carry the same counter jitter as every other (scenario.workload).
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from data.cleanroom.bundle import labels_json, make

__all__ = ["cleanroom_bundle", "write_cleanroom"]


def cleanroom_bundle(seed: int, index: int) -> tuple[str, dict[str, bytes], dict[str, object]]:
    """(name, files, labels): one bundle, deterministic in (seed, index). files maps paths inside the
    upload (host folders `esx-<hostname>-<YYYY-MM-DD--HH.MM>-<n>/...`, optional loose esxtop CSVs) to bytes;
    labels is the labels.json dict (schema vsandx.labels/1, profile "field", every component listed)."""
    return make(seed, index)


def write_cleanroom(out_dir: Path, n: int, seed: int) -> list[Path]:
    """Writes n bundles as .tgz archives (labels.json at the archive root) and returns their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        name, files, labels = cleanroom_bundle(seed, i)
        path = out_dir / f"{name}.tgz"
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tf:
            for member, data in sorted({**files, "labels.json": labels_json(labels)}.items()):
                info = tarfile.TarInfo(member)
                info.size = len(data)
                info.mtime = 0
                info.mode = 0o644
                tf.addfile(info, io.BytesIO(data))
        path.write_bytes(buf.getvalue())
        paths.append(path)
    return paths
