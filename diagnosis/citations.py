"""The log lines a finding cites: of the faulty component's lines kept when the bundle was read
(pipeline.citations, a few per event kind), those of the event kinds that speak of its fault.

Each is the file inside the upload, the 1-based line number, the line (cut to 300 characters) and the
event kind: `{"file": "esx-…/var/run/log/vmkernel.log", "line": 74, "text": "2026-… Device naa.… performance
has deteriorated …", "event": "deteriorated"}`. A rotated `.N.gz` log is numbered once decompressed.
"""

from __future__ import annotations

from typing import Any, Final

from pipeline.tensors import BundleTensors

MAX_LINES: Final = 12  # per finding
# The event kinds that speak of each fault, the most telling first (they are kept first when a
# finding has more than MAX_LINES lines). Benign SCSI failures (unsupported pages, unit attentions) are
# routine on healthy devices, and no cluster fault has log lines of its own.
FAULT_EVENTS: Final[dict[str, tuple[str, ...]]] = {
    "net.packet_loss": ("link_down", "link_up", "vob"),
    "net.link_degraded": ("link_speed", "link_down", "link_up", "vob"),  # link_speed: "Link is Up 1000 Mbps"
    "disk.latency": (
        "scsi_fail_medium",
        "scsi_fail_host",
        "deteriorated",
        "perm_error",
        "scsi_fail_other",
        "improved",
        "vob",
    ),
    "disk.hotspot": ("deteriorated", "scsi_fail_other", "improved", "vob"),
    "dg.write_buffer": ("lsom_congestion", "lsom_congestion_clear", "vob"),
    "host.cpu_contention": ("vob",),
    "cluster.low_oio": (),
    "cluster.resync": (),
}


def cited_lines(bt: BundleTensors, component: str, fault: str) -> list[dict[str, Any]]:
    """The lines behind a finding, in time order: at most 3 per event kind (as kept when reading) and
    MAX_LINES in all, the kinds most telling of the fault kept first."""
    kinds = FAULT_EVENTS.get(fault, ())
    have = [c for c in bt.citations.get(component, ()) if c.event in kinds]
    kept = sorted(have, key=lambda c: kinds.index(c.event))[:MAX_LINES]
    return [c.to_dict() for c in sorted(kept, key=lambda c: (c.t, c.file, c.line))]
