"""A registry to test against: small vsandx model folders, registered as versions on the embedded store."""

from __future__ import annotations

import json
from pathlib import Path

from training.tracking import Tracker


def saved_model(tmp: Path, marker: str) -> Path:
    """A model folder under `tmp` whose config names `marker`."""
    folder = tmp / f"model-{marker}"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"marker": marker}))
    (folder / "state.safetensors").write_bytes(marker.encode() * 10)
    return folder


def registered(tmp_path: Path, data: Path, markers: tuple[str, ...] = ("a", "b")) -> Tracker:
    """A registry under `data` with one version of vsandx-test per marker (1, 2, …), no alias set."""
    tr = Tracker(data)
    for marker in markers:
        with tr.run(f"trial-{marker}", {"marker": marker}) as run:
            run.log_model_folder(saved_model(tmp_path, marker))
        tr.register(run.id, "vsandx-test")
    return tr
