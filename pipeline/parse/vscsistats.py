"""vscsiStats `-p all -c` output: CSV histograms, each headed by `Histogram: <title>,…`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class Histogram:
    title: str  # "IO lengths of Read commands"
    target: str  # the rest of the heading: world group / handle / disk
    stats: dict[str, float] = field(default_factory=dict)  # min, max, mean, count
    buckets: list[tuple[float, int]] = field(default_factory=list)  # (upper limit, frequency)


def sniff(head: bytes) -> bool:
    return head.lstrip(b"\xef\xbb\xbf").startswith(b"Histogram: ")


def parse_vscsistats(text: str) -> list[Histogram]:
    out: list[Histogram] = []
    cur: Histogram | None = None
    in_buckets = False
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("Histogram: "):
            title, _, target = line[len("Histogram: ") :].partition(",")
            cur = Histogram(title.strip(), target.strip())
            out.append(cur)
            in_buckets = False
            continue
        if cur is None:
            continue
        a, _, b = line.partition(",")
        if a == "Frequency":
            in_buckets = True
            continue
        try:
            if in_buckets:
                cur.buckets.append((float(b), int(float(a))))
            else:
                cur.stats[a.strip()] = float(b)
        except ValueError:
            continue
    return out


OIO_TITLE = "number of outstanding IOs when a new IO is issued"
MIN_IOS = 100  # a virtual disk that issued fewer during the capture says nothing of its load


def _median(h: Histogram) -> float | None:
    """The histogram's median as grouped data, else (no buckets) its `mean` line. vscsiStats counts
    outstanding I/Os in whole numbers and a bucket limited by L holds those after the previous limit up to
    L (the first, 1 and below; the repeated last limit, everything past it), so (previous + 0.5, L + 0.5]
    is its class and the median is interpolated in the class that holds it (the textbook median of
    grouped data): every I/O at 2 reads 2.0, at 3 or 4 reads 3.5, and a spread capture reads where in
    its bucket the middle I/O falls, not the bucket's top (half of them at 2 or below and the rest just
    past it read 2.5, not 4). Not the mean: vscsiStats prints it truncated to an integer, so a disk whose
    I/Os go out beside two others reads 2, and a burst or two lifts an idle guest's far past its typical
    issue."""
    total = sum(max(f, 0) for _, f in h.buckets)
    if total <= 0:
        mean = h.stats.get("mean")
        return mean if mean is not None and math.isfinite(mean) and mean >= 0 else None
    seen, prev = 0, None
    for limit, f in h.buckets:
        if not (math.isfinite(limit) and limit >= 0):
            return None
        f = max(f, 0)
        if f and 2 * (seen + f) >= total:
            if prev is not None and limit <= prev:  # the overflow bucket: past the last limit, no top
                return limit
            lo = max(0.0, limit - 0.5) if prev is None else prev + 0.5
            return lo + (total / 2 - seen) / f * (limit + 0.5 - lo)
        seen, prev = seen + f, limit
    return None


def disk_oio(files: list[tuple[str, list[Histogram]]]) -> float | None:
    """Outstanding I/Os per virtual disk, the median over every captured disk that issued at least
    MIN_IOS: each disk's typical count of I/Os outstanding when it issued one, itself included, as its
    histogram's median (`_median`). A benchmark with one thread per disk reads 1, two threads 2, three or
    four 3.5 (faults.md's "threads per disk"); None without a capture. Reads the all-I/O histogram only
    (not its Read or Write halves)."""
    typical = []
    for _, hists in files:
        for h in hists:
            if h.title.strip().lower() != OIO_TITLE.lower() or not h.stats.get("count", MIN_IOS) >= MIN_IOS:
                continue  # (a NaN count is no count)
            m = _median(h)
            if m is not None:
                typical.append(m)
    if not typical:
        return None
    typical.sort()
    mid = len(typical) // 2
    return typical[mid] if len(typical) % 2 else (typical[mid - 1] + typical[mid]) / 2
