"""Simulator bundles for the pipeline tests, chosen by what a test needs rather than by a pinned index.

`pick` walks a (profile, seed) stream of `data.simulate.generate.simulate_bundle` from a hint (the
index where a match was last found, so a run normally simulates one bundle) until a bundle has the
wanted properties; a simulator change that moves the match costs time, never the test's meaning.
The other helpers read members back from what the simulator wrote, so that tests derive their
expectations from the bundle rather than from numbers a hand-written fixture chose.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import re
from collections.abc import Callable, Iterable, Sequence

from data.simulate.generate import Bundle, simulate_bundle
from data.simulate.plan import Injected

Files = dict[str, bytes]
LABELS = "labels.json"
_TS = re.compile(rb"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)", re.M)


def pick(
    profile: str,
    seed: int,
    want: Callable[[Bundle], bool],
    *,
    start: int = 0,
    tries: int = 60,
    faults: Sequence[str] | None = None,
    causes: Sequence[str] | None = None,
) -> Bundle:
    """The first bundle of the (profile, seed) stream, from index `start` on, that `want` accepts."""
    for index in range(start, start + tries):
        b = simulate_bundle(profile, seed, index, faults=faults, causes=causes)
        if want(b):
            return b
    raise AssertionError(f"no {profile} bundle of seed {seed} in [{start}, {start + tries}) has the wanted shape")


def upload(files: Files) -> Files:
    """The bundle as a customer uploads it: without the simulator's ground truth."""
    return {p: d for p, d in files.items() if p != LABELS}


def fault(b: Bundle, name: str) -> Injected:
    return next(f for f in b.plan.faults if f.fault == name)


def host_top(files: Iterable[str], hostname: str) -> str | None:
    """The host support bundle folder of `hostname` (None when that host was not uploaded)."""
    return next((p.split("/", 1)[0] for p in files if p.startswith(f"esx-{hostname}-") and "/" in p), None)


def log_members(files: Files, top: str, name: str) -> list[str]:
    """`name`.log and its rotated copies (`name`.N.gz) in a host folder."""
    base = f"{top}/var/run/log/{name}."
    return sorted(p for p in files if p.startswith(base) and (p.endswith(".log") or p.endswith(".gz")))


def log_text(files: Files, top: str, name: str) -> str:
    """All of a host's `name` log (vmkernel, vmkwarning, vobd), rotations included."""
    out = []
    for p in log_members(files, top, name):
        data = files[p]
        out.append((gzip.decompress(data) if p.endswith(".gz") else data).decode())
    return "".join(out)


def first_log_time(files: Files, top: str, names: Sequence[str]) -> float:
    """Epoch seconds of the earliest line of the host's logs named `names`."""
    stamps = [
        m.group(1).decode()
        for n in names
        for p in log_members(files, top, n)
        for m in _TS.finditer(gzip.decompress(files[p]) if p.endswith(".gz") else files[p])
    ]
    first = min(stamps)
    return dt.datetime.fromisoformat(first).replace(tzinfo=dt.UTC).timestamp()


def iso(t: float) -> str:
    """A log timestamp (`2026-03-02T10:00:00.000Z`) of epoch seconds."""
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def dump_members(files: Files) -> list[str]:
    return sorted(p for p in files if "perf_stats_with_dump" in p)


_ENTITY = re.compile(
    rb"<VsanPerfEntityMetricCSV><entityRefId>([^<]*)</entityRefId><sampleInfo>([^<]*)</sampleInfo>(.*?)"
    rb"</VsanPerfEntityMetricCSV>"
)
_VALUE = re.compile(rb"<label>([^<]*)</label>.*?<values>([^<]*)</values>")


def dump_series(dump: bytes) -> dict[str, tuple[list[str], dict[str, list[str]]]]:
    """{entityRefId: (sample times, {label: printed values})} of a simulator-written perf dump."""
    out = {}
    for m in _ENTITY.finditer(dump):
        times = m.group(2).decode().split(",") if m.group(2) else []
        vals = {v.group(1).decode(): v.group(2).decode().split(",") for v in _VALUE.finditer(m.group(3))}
        out[m.group(1).decode()] = (times, vals)
    return out


def perf_as_json(files: Files) -> Files:
    """The bundle with each perf dump replaced by the same series in the dump's JSON form
    (bundle-format.md section 3, `perf.json` beside it). The simulator writes the XML dump only; the
    JSON form is a second rendering of the same content, which the pipeline and checker accept."""
    out = dict(files)
    for p in dump_members(files):
        data = out.pop(p)
        doc = [
            {
                "entityRefId": ref,
                "sampleInfo": ",".join(times),
                "value": [{"metricId": {"label": lb}, "values": ",".join(v)} for lb, v in vals.items()],
            }
            for ref, (times, vals) in dump_series(data).items()
        ]
        out[p.split("/", 1)[0] + "/perf.json"] = json.dumps(doc).encode()
    return out
