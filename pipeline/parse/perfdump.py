"""vSAN performance service dump: the SOAP text form (one XML document per line) and its JSON form."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from pipeline.config import PipelineConfig
from pipeline.errors import LimitExceeded
from pipeline.parse.numbers import parse_series

HEAD: Final = "--------------SOAP stats dump--------------"
MAX_NAME_CHARS: Final = 512  # entity ids and metric labels are kept as keys: bounded
SEP_PREFIX: Final = "--------------"


@dataclass
class PerfEntity:
    ref: str  # entityRefId, "<type>:<id>"
    etype: str
    eid: str
    times: np.ndarray  # (n_samples,) int64 epoch seconds, UTC, sample start
    metrics: dict[str, np.ndarray] = field(default_factory=dict)  # label -> (n_samples,) float64, nan=missing
    interval: int | None = None  # metricsCollectInterval, when given


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


class _Times:
    """sampleInfo strings repeat across every entity of a dump: parse each distinct one once."""

    def __init__(self) -> None:
        self._cache: dict[str, np.ndarray | None] = {}

    def __call__(self, text: str) -> np.ndarray | None:
        got = self._cache.get(text, False)
        if got is not False:
            return got  # type: ignore[return-value]
        try:
            parts = [p.strip() for p in text.split(",")]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a "Z" suffix: numpy parses it as UTC but warns
                arr: np.ndarray | None = np.array(parts, dtype="datetime64[s]").astype(np.int64)
        except (ValueError, OverflowError, TypeError):
            arr = None
        if arr is not None and len(arr) > 1 and np.any(np.diff(arr) <= 0):
            arr = None  # not strictly increasing: unusable as a time axis
        if len(self._cache) < 64 and len(text) < 1 << 20:  # keys are held: at most 64 MiB of them
            self._cache[text] = arr
        return arr


def parse_values(text: str, n: int) -> np.ndarray | None:
    """Comma-separated numbers; `None`/empty are missing. None when not n well-formed fields."""
    try:
        arr = np.fromstring(text, sep=",")  # C fast path, raises on anything odd
        if len(arr) != n:
            raise ValueError
    except ValueError:
        parts = text.split(",")
        if len(parts) != n:
            return None
        out = np.empty(n)
        for i, p in enumerate(parts):
            p = p.strip()
            if p in ("", "None", "null"):
                out[i] = np.nan
                continue
            try:
                out[i] = float(p)
            except ValueError:
                return None
        arr = out
    arr[~np.isfinite(arr)] = np.nan
    return arr


class PerfParser:
    """Accumulates entities from any number of dumps; `entities` is keyed by entityRefId."""

    def __init__(self, config: PipelineConfig | None = None) -> None:
        self.cfg = config or PipelineConfig()
        self.entities: dict[str, PerfEntity] = {}
        self.warnings: list[str] = []
        self._times = _Times()
        self.bad_values = 0
        self.n_values = 0  # samples x metrics kept, against max_perf_values
        self._records = 0

    def warn(self, msg: str) -> None:
        if len(self.warnings) < 50:
            self.warnings.append(msg)

    _warn = warn

    @property
    def records(self) -> int:
        return self._records

    def add(self, ref: str, sample_info: str, values: Iterable[tuple[str, str, int | None]], where: str) -> None:
        etype, sep, eid = ref.partition(":")
        if len(ref) > MAX_NAME_CHARS:
            self._warn(f"{where}: entity id {ref[:80]!r}… longer than {MAX_NAME_CHARS} characters")
            return
        if not sep or not etype or not eid:
            self._warn(f"{where}: entity id {ref[:80]!r} is not <type>:<id>")
            return
        cfg = self.cfg
        # a timestamp is 19 characters: a longer sampleInfo cannot hold max_samples of them
        if sample_info.count(",") >= cfg.max_samples or len(sample_info) > 32 * cfg.max_samples:
            raise LimitExceeded("max_samples", where, f"{ref[:80]}: more than {cfg.max_samples} samples")
        times = self._times(sample_info) if sample_info.strip() else np.empty(0, np.int64)
        if times is None:
            self._warn(f"{where}: {ref}: unreadable sampleInfo")
            return
        ent = self.entities.get(ref)
        if ent is not None and len(ent.times) and not np.array_equal(ent.times, times):
            if len(times) <= len(ent.times):
                return  # the same dump from another host, or a shorter copy: first one wins
            ent = None
        if ent is None:
            if len(self.entities) >= cfg.max_perf_entities:
                raise LimitExceeded("max_perf_entities", where, f"more than {cfg.max_perf_entities} perf entities")
            ent = PerfEntity(ref, etype, eid, times)
            self.entities[ref] = ent
        n = len(times)
        todo = [v for v in values if v[0] not in ent.metrics and len(v[0]) <= MAX_NAME_CHARS] if n else []
        self.n_values += n * len(todo)
        if self.n_values > cfg.max_perf_values:
            raise LimitExceeded("max_perf_values", where, f"more than {cfg.max_perf_values} perf samples x metrics")
        parsed = parse_series([text for _, text, _ in todo], n, parse_values)
        for (label, _text, interval), arr in zip(todo, parsed, strict=True):
            if label in ent.metrics:  # the same label twice in one entity: the first readable one wins
                continue
            if arr is None:
                self.bad_values += 1
                self._warn(f"{where}: {ref}/{label}: values do not match sampleInfo")
                continue
            ent.metrics[label] = arr
            if interval and ent.interval is None:
                ent.interval = interval

    # ------------------------------------------------------------------ the two forms, streamed
    def feed_dump(self, lines: Iterable[bytes], where: str) -> None:
        """SOAP text form, one document per item of `lines` (the bundle reader streams instead)."""
        from pipeline.parse.perfstream import feed_dump_lines

        feed_dump_lines(self, lines, where)

    def feed_json(self, data: Any, where: str) -> None:
        if not isinstance(data, list):
            return
        self.new_source()
        for ent in data:
            self.json_item(ent, where)

    def new_source(self) -> None:
        self._records = 0

    def record(self, where: str) -> None:
        """One entity record read from the current source: a dump names each entity once, so more
        records than max_perf_entities in one file is a flood, refused before it costs time."""
        self._records += 1
        if self._records > self.cfg.max_perf_entities:
            raise LimitExceeded("max_perf_entities", where, f"more than {self.cfg.max_perf_entities} entity records")

    def json_item(self, ent: Any, where: str) -> None:
        self.record(where)
        if not isinstance(ent, dict) or not isinstance(ent.get("entityRefId"), str):
            self._warn(f"{where}: list item without entityRefId")
            return
        vals: list[tuple[str, str, int | None]] = []
        for v in ent.get("value") or []:
            if not isinstance(v, dict):
                continue
            mid = v.get("metricId")
            label = mid.get("label") if isinstance(mid, dict) else None
            text = v.get("values")
            if isinstance(text, list):
                text = ",".join("" if x is None else str(x) for x in text)
            if isinstance(label, str) and isinstance(text, str):
                iv = mid.get("metricsCollectInterval") if isinstance(mid, dict) else None
                vals.append((label, text, iv if isinstance(iv, int) else None))
        si = ent.get("sampleInfo")
        self.add(ent["entityRefId"], si if isinstance(si, str) else "", vals, where)


def _int(text: str | None) -> int | None:
    try:
        return int((text or "").strip())
    except ValueError:
        return None


def sniff_dump(head: bytes) -> bool:
    s = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return s.startswith(HEAD.encode()) or (s.startswith(b"<") and b"VsanPerfEntityMetricCSV" in s[:65536])


def sniff_json(head: bytes) -> bool:
    s = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return s.startswith(b"[") and b'"entityRefId"' in s


def load_json(data: bytes) -> Any:
    """Small JSON documents only: the bundle reader streams the perf JSON form (perfstream)."""
    try:
        return json.loads(data.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return None
