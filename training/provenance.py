"""What every run and registered model records about where it came from, with no MLflow import:
flat parameters, the git commit, the requirements its loader needs."""

from __future__ import annotations

import functools
import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def param_text(v: Any) -> str:
    """MLflow params are strings of at most 6000 characters."""
    text = v if isinstance(v, str) else json.dumps(v, default=str)
    return text[:6000]


def flat_params(params: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested mappings as dotted keys (`lab.n`, `pipeline_config.grid_steps`), so that each value is a
    param of its own that MLflow can search and compare; lists and scalars as their text."""
    out: dict[str, str] = {}
    for k, v in params.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out |= flat_params(v, f"{key}.")
        else:
            out[key] = param_text(v)
    return out


@functools.cache
def git_tags() -> dict[str, str]:
    """`mlflow.source.git.commit` of the checkout this code runs from (MLflow finds it only for a
    script inside the repository, not for the `vsandx` entry point); {} outside a git checkout. Asked
    once per process: every trial and baseline run carries it."""

    root = Path(__file__).resolve().parents[1]
    try:
        got = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return {}
    commit = got.stdout.strip()
    return {"mlflow.source.git.commit": commit} if got.returncode == 0 and len(commit) == 40 else {}


def requirements() -> list[str]:
    """What the loader needs installed: this project's own requirements (the vsandx package itself is
    not on an index; install it from its repository beside them)."""
    from importlib import metadata

    try:
        reqs = metadata.requires("vsandx") or []
    except metadata.PackageNotFoundError:
        return []
    return [r for r in reqs if "extra ==" not in r]
