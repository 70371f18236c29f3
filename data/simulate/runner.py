"""`vsandx simulate`: many bundles, in parallel across cores, deterministic per seed."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from tqdm import tqdm

from data.simulate.archive import write_bundle
from data.simulate.causes import ALL, CauseFilter
from data.simulate.generate import DEFAULT_ISSUE_RATE, PROFILES, simulate_bundle

SCHEMA = "vsandx.simulation/1"


def _one(
    index: int, profile: str, seed: int, issue_rate: float | None, out: Path, fmt: str, flt: CauseFilter = ALL
) -> dict[str, Any]:
    t0 = time.perf_counter()
    b = simulate_bundle(profile, seed, index, issue_rate, causes=flt)
    path = write_bundle(b.name, b.files, out, fmt)
    faults = b.labels["faults"]
    assert isinstance(faults, list)
    return {
        "name": b.name,
        "path": path.name,
        "faults": [f["fault"] for f in faults],
        "causes": [f"{f['fault']}:{f['cause']}" for f in faults],
        "components": len(b.labels["components"]),  # type: ignore[arg-type]
        "hosts": b.hosts,
        "hosts_present": b.hosts_present,
        "samples": b.samples,
        "interval": b.interval,
        "storage": b.storage,
        "workload": b.mix,
        "bytes": _size(path),
        "seconds": round(time.perf_counter() - t0, 4),
    }


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _run(job: partial[dict[str, Any]], n: int, workers: int) -> Iterator[dict[str, Any]]:
    if workers <= 1 or n < 4:
        yield from map(job, range(n))
        return
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    with ctx.Pool(workers) as pool:
        yield from pool.imap(job, range(n), chunksize=max(1, min(16, n // (workers * 8))))


def simulate_many(
    profile: str,
    n: int,
    out: Path,
    seed: int = 0,
    fmt: str = "tgz",
    workers: int = 0,
    issue_rate: float | None = None,
    progress: bool = True,
    causes: Sequence[str] | None = None,
    exclude_causes: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Write n bundles; `causes` / `exclude_causes` filter the causes faults are drawn through."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {PROFILES}")
    flt = CauseFilter.of(causes, exclude_causes)
    out.mkdir(parents=True, exist_ok=True)
    workers = workers or os.cpu_count() or 1
    job = partial(_one, profile=profile, seed=seed, issue_rate=issue_rate, out=out, fmt=fmt, flt=flt)
    t0 = time.perf_counter()
    results = []
    with tqdm(total=n, desc=f"simulate {profile}", unit="bundle", disable=not progress) as bar:
        for r in _run(job, n, workers):
            results.append(r)
            bar.update()
    config = {
        "schema": SCHEMA,
        "profile": profile,
        "n": n,
        "seed": seed,
        "format": fmt,
        "issue_rate": DEFAULT_ISSUE_RATE[profile] if issue_rate is None else issue_rate,
        "workers": workers,
        "causes": sorted(flt.only) if flt.only is not None else None,
        "exclude_causes": sorted(flt.exclude),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    manifest = out / f"simulation-{profile}-s{seed}.json"
    manifest.write_text(json.dumps({**config, "bundles": results}, indent=1) + "\n")
    return results


def summarise(results: list[dict[str, Any]], out: Path) -> str:
    faults = Counter(f for r in results for f in r["faults"])
    causes = Counter(c.split(":", 1)[1] for r in results for c in r.get("causes", []))
    n_faulty = sum(1 for r in results if r["faults"])
    storage = Counter(r["storage"] for r in results)
    lines = [
        f"wrote {len(results)} bundles to {out}",
        f"  with a fault: {n_faulty} ({100 * n_faulty / max(1, len(results)):.0f} %), "
        f"healthy: {len(results) - n_faulty}",
        "  faults: " + (", ".join(f"{k} {v}" for k, v in sorted(faults.items())) or "none"),
        "  causes: " + (", ".join(f"{k} {v}" for k, v in sorted(causes.items())) or "none"),
        "  storage: " + ", ".join(f"{k} {v}" for k, v in sorted(storage.items())),
        f"  hosts: {min(r['hosts'] for r in results)}-{max(r['hosts'] for r in results)}, "
        f"components per bundle: {min(r['components'] for r in results)}-{max(r['components'] for r in results)}",
        f"  size: {sum(r['bytes'] for r in results) / 1e6:.1f} MB",
    ]
    return "\n".join(lines)
