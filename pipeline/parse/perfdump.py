"""vSAN performance service dump: the SOAP text form (one XML document per line) and its JSON form."""

from __future__ import annotations

import json
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from pipeline.parse.numbers import parse_series

HEAD: Final = "--------------SOAP stats dump--------------"
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
        if len(self._cache) < 64:
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

    def __init__(self) -> None:
        self.entities: dict[str, PerfEntity] = {}
        self.warnings: list[str] = []
        self._times = _Times()
        self.bad_values = 0

    def _warn(self, msg: str) -> None:
        if len(self.warnings) < 50:
            self.warnings.append(msg)

    def add(self, ref: str, sample_info: str, values: Iterable[tuple[str, str, int | None]], where: str) -> None:
        etype, sep, eid = ref.partition(":")
        if not sep or not etype or not eid:
            self._warn(f"{where}: entity id {ref[:80]!r} is not <type>:<id>")
            return
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
            ent = PerfEntity(ref, etype, eid, times)
            self.entities[ref] = ent
        n = len(times)
        todo = [v for v in values if v[0] not in ent.metrics] if n else []
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

    # ------------------------------------------------------------------ SOAP text form
    def feed_dump(self, lines: Iterator[bytes], where: str) -> None:
        for lineno, raw in enumerate(lines, start=1):
            s = raw.strip()
            if not s or s.startswith(b"-----"):
                continue
            if not s.startswith(b"<"):
                self._warn(f"{where}:{lineno}: not an XML document")
                continue
            if b"<!DOCTYPE" in s or b"<!ENTITY" in s:
                self._warn(f"{where}:{lineno}: document with a DTD ignored")
                continue
            try:
                root = ET.fromstring(s)
            except ET.ParseError as e:
                self._warn(f"{where}:{lineno}: XML does not parse ({e})")
                continue
            self._doc(root, f"{where}:{lineno}")

    def _doc(self, root: ET.Element, where: str) -> None:
        items = [root] if _local(root.tag) == "VsanPerfEntityMetricCSV" else list(root)
        for item in items:
            if _local(item.tag) != "VsanPerfEntityMetricCSV":
                continue
            ref = si = None
            vals: list[tuple[str, str, int | None]] = []
            for ch in item:
                tag = _local(ch.tag)
                if tag == "entityRefId":
                    ref = (ch.text or "").strip()
                elif tag == "sampleInfo":
                    si = ch.text or ""
                elif tag == "value":
                    label = text = None
                    interval = None
                    for v in ch:
                        vt = _local(v.tag)
                        if vt == "metricId":
                            for mm in v:
                                mt = _local(mm.tag)
                                if mt == "label":
                                    label = (mm.text or "").strip()
                                elif mt == "metricsCollectInterval":
                                    interval = _int(mm.text)
                        elif vt == "values":
                            text = v.text or ""
                    if label and text is not None:
                        vals.append((label, text, interval))
            if ref is None or si is None:
                self._warn(f"{where}: entity without entityRefId/sampleInfo")
                continue
            self.add(ref, si, vals, where)

    # ------------------------------------------------------------------ JSON form
    def feed_json(self, data: Any, where: str) -> None:
        if not isinstance(data, list):
            return
        for ent in data:
            if not isinstance(ent, dict) or not isinstance(ent.get("entityRefId"), str):
                self._warn(f"{where}: list item without entityRefId")
                continue
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
    try:
        return json.loads(data.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return None
