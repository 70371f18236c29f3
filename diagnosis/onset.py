"""The onset of a fault in a series: the first sustained departure of the faulty component from its own
early baseline, measured against its peers. Applied in the tensor's own scale (log1p for heavy-tailed
channels, so that one spike does not set the threshold):

1. Excess e_t = direction × (x_t − median of the peers at t); with no peers, e_t = direction × x_t.
2. Baseline: the component's own first 15 % of observed steps (at least 5): level b = median(e),
   noise n = 1.4826 × MAD(e).  Extent h = 95th percentile of e over the window.
3. If the component already stands out from its peers in the baseline (b above 3 robust spreads of
   the peers and at least half of h), the fault predates the window: onset = first step, flagged.
4. Otherwise the threshold is b + max(4 n, 0.2 (h − b)); the onset is the first step from which e stays
   above it for 3 consecutive observed steps (a sustained departure, not a spike). When h − b does
   not clear the noise, there is no departure to date and no onset is drawn.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np


@dataclass
class Onset:
    step: int
    at_start: bool  # the fault was already there when the window began


def estimate_onset(x: np.ndarray, peers: np.ndarray, direction: int = 1) -> Onset | None:
    """First sustained departure of x (T,) from its own early baseline, relative to peers (n, T)."""
    has_peers = peers.size > 0 and not np.isnan(peers).all()
    with warnings.catch_warnings():  # steps where no peer has data are expected: they count as 0
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = np.nanmedian(peers, axis=0) if has_peers else np.zeros_like(x)
    ref = np.where(np.isnan(ref), 0.0, ref)
    e = direction * (x - ref)
    obs = np.flatnonzero(~np.isnan(e))
    if obs.size < 6:
        return None
    ev = e[obs]
    nb = max(5, int(0.15 * obs.size))
    base = ev[:nb]
    b = float(np.median(base))
    noise = 1.4826 * float(np.median(np.abs(base - b)))
    h = float(np.percentile(ev, 95))
    if has_peers:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            spread = np.nanmedian(1.4826 * np.nanmedian(np.abs(peers - ref), axis=0))
        spread = 0.0 if np.isnan(spread) else float(spread)
        if b > 3 * spread + 1e-3 and b >= 0.5 * h > 0:
            return Onset(int(obs[0]), True)
    threshold = b + max(4 * noise, 0.2 * (h - b))
    if h - b <= max(4 * noise, 1e-3):
        return None
    above = ev > threshold
    for k in range(above.size - 2):
        if above[k : k + 3].all():
            return Onset(int(obs[k]), False)
    return None


def _duration(seconds: int) -> str:
    """A span in words, to the minute: "40 min", "1 h 40 min", "2 h"; under a minute "less than a minute"."""
    minutes = round(seconds / 60)
    if minutes < 1:
        return "less than a minute"
    h, m = divmod(minutes, 60)
    return " ".join(part for part in (f"{h} h" if h else "", f"{m} min" if m else "") if part)


_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]  # not the locale's


def _clock(t: int) -> str:
    """An instant as people say it: "14:20 UTC on 25 Nov" (to the nearest minute)."""
    stamp = time.gmtime(round(t / 60) * 60)
    return f"{stamp.tm_hour:02d}:{stamp.tm_min:02d} UTC on {stamp.tm_mday} {_MONTHS[stamp.tm_mon - 1]}"


def describe(onset: Onset | None, start: int, step_s: int) -> str:
    """The onset as a sentence for people (the web page, the emailed report): "Onset: started about 14:20
    UTC on 25 Nov, 1 h 40 min into the capture." `start`: epoch seconds of step 0."""
    if onset is None:
        return "Onset: none found in the capture (the departure is gradual, or present throughout)."
    at = start + onset.step * step_s
    if onset.at_start:
        return f"Onset: already present when the capture began ({_clock(at)}); it started earlier."
    return f"Onset: started about {_clock(at)}, {_duration(at - start)} into the capture."
