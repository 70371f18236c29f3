"""Helpers for the signature tests: look up a simulated bundle's metrics by canonical component."""

from __future__ import annotations

import functools
import re

import numpy as np

from data.simulate.generate import Bundle, simulate_bundle
from vsandx import components as cid


@functools.lru_cache(maxsize=256)
def bundle(profile: str, seed: int, index: int, faults: tuple[str, ...] | None = None) -> Bundle:
    return simulate_bundle(profile, seed, index, faults=faults)


def series(b: Bundle, etype: str, eid: str, label: str) -> np.ndarray:
    return np.asarray(b.metrics[etype][eid][label], dtype=float)


def split(b: Bundle, x: np.ndarray, onset: int) -> tuple[np.ndarray, np.ndarray]:
    """Samples before the onset and from a little after it (transients settle)."""
    settle = min(onset + 3, len(x) - 1)
    return x[:onset], x[settle:]


def host_index(b: Bundle, name: str) -> int:
    return next(i for i, h in enumerate(b.cluster.hosts) if h.name == name)


def device(b: Bundle, comp: str) -> tuple[int, int, object]:
    """(host index, disk-group index, Disk) of a disk component id."""
    host, dev = comp.split(":", 1)[1].split("/", 1)
    h = host_index(b, host)
    for g, (hh, grp) in enumerate(b.cluster.disk_groups):
        for d in (grp.cache, *grp.capacity):
            if hh == h and d.dev == dev:
                return h, g, d
    raise KeyError(comp)


def disk_entity(d: object) -> tuple[str, str]:
    tier = d.tier
    return ("cache-disk" if tier == "cache" else "capacity-disk"), d.uuid


def host_logs(b: Bundle, hostname: str) -> str:
    """All of a host's vmkernel/vmkwarning/vobd text in the bundle ('' if its host bundle is missing)."""
    import gzip

    out = []
    for path, data in b.files.items():
        if path.startswith(f"esx-{hostname}-") and "/var/run/log/" in path:
            out.append(gzip.decompress(data).decode() if path.endswith(".gz") else data.decode())
    return "\n".join(out)


def scsi_failures(text: str, dev: str) -> list[str]:
    """Lines of real SCSI trouble for a device: medium/hardware sense or host-side aborts/resets."""
    pat = re.compile(r'to dev "' + re.escape(dev) + r'" failed H:(0x[0-9a-f]+) D:(0x[0-9a-f]+) P:0x0(.*)')
    bad = []
    for line in text.splitlines():
        m = pat.search(line)
        if not m:
            continue
        h, d, rest = m.groups()
        if h in ("0x5", "0x8") or (d == "0x2" and re.search(r"Valid sense data: 0x[34] ", rest)):
            bad.append(line)
    return bad


def vsan_nics(b: Bundle) -> list[str]:
    return [cid.nic_id(h.name, h.nics[h.vsan_nic].name) for h in b.cluster.hosts]


def esxtop_columns(b: Bundle, hostname: str, obj: str, counter: str) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(column, epoch seconds, values) of every esxtop column `<obj>(...)\\<counter>` captured on that host.

    A capture belongs to the host whose folder holds it or whose short name its file carries."""
    import csv
    import datetime as dt

    short = hostname.split(".")[0]
    out = []
    for path, data in b.files.items():
        if not path.endswith(".csv"):
            continue
        if not (path.startswith(f"esx-{hostname}-") or path.startswith(f"esxtop/{short}-")):
            continue
        lines = data.decode().splitlines()
        start = next((i for i, line in enumerate(lines) if "(PDH-CSV 4.0)" in line), None)
        if start is None:  # another capture (vscsiStats), not esxtop
            continue
        rows = list(csv.reader(lines[start:]))
        header, body = rows[0], [r for r in rows[1:] if r]
        stamps = []
        for r in body:
            for fmt in ("%m/%d/%Y %H:%M:%S", "%m/%d/%Y %H:%M"):
                try:
                    stamps.append(dt.datetime.strptime(r[0], fmt).replace(tzinfo=dt.UTC).timestamp())
                    break
                except ValueError:
                    continue
        t = np.array(stamps)
        for j, col in enumerate(header):
            if f"\\{obj}(" in col and col.endswith("\\" + counter):
                out.append((col, t, np.array([float(r[j]) if r[j] else np.nan for r in body])))
    return out
