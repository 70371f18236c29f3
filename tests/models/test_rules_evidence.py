"""What the rules read off a bundle (models/rules_evidence.py): measures in physical units."""

from __future__ import annotations

import numpy as np

from models.rules_evidence import _cap


def _ceiling(t: np.ndarray) -> tuple[float, float, float, float]:
    """_cap of one (T,) series: (cap, share, held, before)."""
    got = _cap(t[None])
    cap, share, held, before = (float(got[k][0]) for k in ("cap_mbs", "cap_share", "cap_held", "cap_before"))
    return cap, share, held, before


def test_ceiling_reads_a_step_down_to_a_line_rate() -> None:
    """A vSAN uplink at 200-540 MB/s that renegotiated to 1 GbE at step 100 of 180, its last 20 samples
    not collected: the ceiling is 1 GbE's payload, held from the step on, and it carried 4.6x before."""
    rng = np.random.default_rng(0)
    t = np.concatenate([rng.uniform(200, 540, 100), np.full(60, 117.5), np.full(20, np.nan)])
    t[50] = 540.0
    cap, share, held, before = _ceiling(t)
    assert abs(cap - 117.5) < 0.1
    assert abs(share - 60 / 160) < 1e-9 and held == 1.0
    assert abs(before - 540 / 117.5) < 1e-6


def test_ceiling_of_a_wandering_or_a_level_flow() -> None:
    """A guest mix that rarely repeats its rate spends little of the window at any one rate; a flow level
    for the whole window has a ceiling but carried nothing more before it; one that leaves the ceiling
    again holds it for part of the time."""
    rng = np.random.default_rng(1)
    cap, share, _, _ = _ceiling(rng.uniform(50, 300, 180))
    assert np.isnan(cap) or share < 0.05
    cap, share, held, before = _ceiling(np.full(180, 113.0))
    assert cap == 113.0 and share == 1.0 and held == 1.0 and before == 0.0
    t = np.concatenate([rng.uniform(200, 300, 40), np.full(40, 117.5), rng.uniform(200, 300, 100)])
    _, share, held, before = _ceiling(t)
    assert abs(share - 40 / 180) < 1e-9 and abs(held - 40 / 140) < 1e-9 and before > 1.5
