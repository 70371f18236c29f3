"""What a diagnosis rests on, host by host: which hosts of the cluster sent a support bundle, esxtop
captures and logs. Read from the host static features the pipeline sets (pipeline.static); a host
whose feature is unknown counts as without. The `coverage` object of a vsandx.diagnosis/1 document."""

from __future__ import annotations

from typing import Any

from pipeline.channels import KIND_STATIC
from pipeline.tensors import BundleTensors

MAX_NAMES = 50  # host names listed per gap (host names come from the bundle)
SOURCES = (("bundle", "has_bundle"), ("esxtop", "has_esxtop"), ("logs", "has_logs"))


def coverage(bt: BundleTensors) -> dict[str, Any]:
    """{"hosts": n, "with_bundle": n, "with_esxtop": n, "with_logs": n, "without_bundle": [names],
    "without_esxtop": [names], "without_logs": [names]} (names sorted, at most MAX_NAMES each)."""
    kt = bt.kinds["host"]
    names = [cid.removeprefix("host:") for cid in kt.ids]
    out: dict[str, Any] = {"hosts": len(names)}
    for source, feature in SOURCES:
        j = KIND_STATIC["host"].index(feature)
        have = (kt.static_mask[:, j] & (kt.static[:, j] > 0.5)).tolist() if len(names) else []
        out[f"with_{source}"] = sum(have)
        out[f"without_{source}"] = sorted(n for n, h in zip(names, have, strict=True) if not h)[:MAX_NAMES]
    return out
