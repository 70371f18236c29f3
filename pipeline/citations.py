"""The log lines behind each component's event channels, for a finding to cite: for every event kind
of a component, its first few events (in time, as the channels count them: vmkwarning copies and echoed
link transitions collapsed) with the file inside the upload, the line number and the line.

Kept beside the tensors (`BundleTensors.citations`), never in them: no model sees them, and the dataset
cache (training.tensorstore) does not store them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from pipeline.fill import _event_target  # the one mapping of an event to the components it counts for
from pipeline.parse.logs import LogEvent
from pipeline.topology import Topology

PER_KIND: Final = 3  # lines per component and event kind
# vmkernel's line before vmkwarning's copy of it, and vobd's VOB (the line an engineer searches for)
_SOURCE_ORDER: Final = {"vmkernel": 0, "vobd": 1, "vmkwarning": 2}


@dataclass(frozen=True)
class Citation:
    file: str  # the log file inside the upload; a rotated `.N.gz` one is numbered once decompressed
    line: int  # 1-based
    text: str  # the line, cut to pipeline.parse.logcite.CITE_CHARS
    event: str  # the event kind (pipeline.parse.logs.EVENT_KINDS)
    t: float  # epoch seconds UTC

    def to_dict(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "text": self.text, "event": self.event}


def cite(topo: Topology, events: dict[str, list[LogEvent]]) -> dict[str, tuple[Citation, ...]]:
    """Component id -> its cited lines, PER_KIND per event kind at most, in time order. `events`: each
    host's events as pipeline.fill.host_events gives them (time-sorted, duplicates collapsed)."""
    out: dict[str, list[Citation]] = {}
    counts: dict[tuple[str, str], int] = {}
    for hn, evs in events.items():
        where: dict[LogEvent, tuple[str, int, str]] = {}
        for lf in sorted(topo.logs.get(hn, []), key=lambda f: _SOURCE_ORDER.get(f.source, 3)):
            for ev, (line, text) in lf.cited.items():
                where.setdefault(ev, (lf.path, line, text))
        if not where:
            continue
        for ev in evs:
            got = where.get(ev)
            if got is None:
                continue
            for _, cid in _event_target(ev, hn, topo):
                n = counts.get((cid, ev.kind), 0)
                if n < PER_KIND:
                    counts[(cid, ev.kind)] = n + 1
                    out.setdefault(cid, []).append(Citation(got[0], got[1], got[2], ev.kind, ev.t))
    return {cid: tuple(c) for cid, c in out.items()}
