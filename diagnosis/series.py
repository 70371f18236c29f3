"""A finding's numbers, shared by its words (diagnosis.findings) and its charts (diagnosis.charts): a
channel decoded to its unit, the unit people read it in, and the peers a component is held against.

Peers are components of the same kind in the same role, so that the evidence's "peers" and the chart's
grey lines are the same components: the vSAN uplinks of the other hosts for a NIC (on each host, the
NICs carrying most of its vSAN traffic: an idle or VM-network vmnic is no uplink to compare with), disks
of the same tier (cache or capacity, flash or not), disk groups of the same tier (all-flash or hybrid),
the other hosts. The cluster has no peers.
"""

from __future__ import annotations

import numpy as np

from pipeline.channels import KIND_CHANNEL_DEFS, KIND_CHANNELS
from pipeline.tensors import BundleTensors, KindTensors

UPLINK_SHARE = 0.5  # a NIC carrying at least this share of its host's busiest NIC's vSAN traffic is an uplink


def decoded(kt: KindTensors, channel: str) -> np.ndarray:
    """(n, T) channel values in its unit (log1p undone), NaN where not observed."""
    c = KIND_CHANNELS[kt.kind].index(channel)
    x = kt.values[:, c, :].astype(float)
    if KIND_CHANNEL_DEFS[kt.kind][c].log:
        x = np.expm1(x)
    return np.where(kt.mask[:, c, :], x, np.nan)


def display(unit: str) -> tuple[str, float]:
    """Channel unit -> (unit shown to people, factor from the decoded value)."""
    return {
        "fraction": ("%", 100.0),
        "fraction of 255": ("of 255", 255.0),
        "percent": ("%", 1.0),
        "1/s": ("/s", 1.0),
        "events/step": ("events per step", 1.0),
    }.get(unit, (unit, 1.0))


def _static(kt: KindTensors, name: str, j: int) -> float | None:
    s = kt.static_names.index(name)
    return float(kt.static[j, s]) if kt.static_mask[j, s] else None


def vsan_uplinks(kt: KindTensors) -> set[int]:
    """NIC rows that carry their host's vSAN traffic (static traffic_share): on each host, those with at
    least UPLINK_SHARE of its busiest NIC's share; a host whose shares are all unknown or 0 has none."""
    out: set[int] = set()
    for h in set(kt.host_index.tolist()):
        rows = [(j, _static(kt, "traffic_share", j) or 0.0) for j in range(len(kt.ids)) if kt.host_index[j] == h]
        top = max((s for _, s in rows), default=0.0)
        if top > 0:
            out.update(j for j, s in rows if s >= UPLINK_SHARE * top)
    return out


def _same(kt: KindTensors, names: tuple[str, ...], i: int, j: int) -> bool:
    """Rows i and j agree on every static flag of `names` that both know."""
    for name in names:
        a, b = _static(kt, name, i), _static(kt, name, j)
        if a is not None and b is not None and a != b:
            return False
    return True


def peers_of(bt: BundleTensors, kind: str, i: int) -> list[int]:
    """Rows of the same kind and role as row i (see the module docstring); for a NIC, never a NIC of its
    own host. Where no row shares the role as far as the bundle tells, every other row."""
    kt = bt.kinds[kind]
    others = [j for j in range(len(kt.ids)) if j != i]
    if kind == "nic":
        up = vsan_uplinks(kt)
        return [j for j in others if j in up and kt.host_index[j] != kt.host_index[i]] or others
    if kind == "disk":
        return [j for j in others if _same(kt, ("is_cache", "is_ssd"), i, j)] or others
    if kind == "diskgroup":
        return [j for j in others if _same(kt, ("all_flash",), i, j)] or others
    if kind == "cluster":
        return []
    return others
