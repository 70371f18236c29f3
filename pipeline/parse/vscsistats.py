"""vscsiStats `-p all -c` output: CSV histograms, each headed by `Histogram: <title>,…`."""

from __future__ import annotations

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
