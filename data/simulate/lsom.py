"""LSOM's write buffer and the queueing that physics.solve iterates on: the buffer's fill and destage
sample by sample (with LSOM throttling writers as a group fills), the M/M/1 stretch of a busy device or
uplink, and the congestion and per-write delay a filling buffer brings."""

from __future__ import annotations

import numpy as np

US = 1e-6


def write_buffer(
    in_b: np.ndarray, wb: np.ndarray, cap: np.ndarray, dt: float, fill0: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Buffer fill and destage rate per sample. Destage chases the writes and drains toward 30 %
    over ~15 minutes, but never faster than the capacity tier absorbs."""
    fill, drained = np.empty_like(in_b), np.empty_like(in_b)
    f = fill0.copy()
    pull = wb / 900.0
    step = dt / wb
    want = np.empty_like(f)
    for t in range(in_b.shape[0]):
        # plain ufuncs with out=: this loop runs T x iterations times, np.clip's overhead shows
        np.multiply(f - 0.3, pull, out=want)
        want += in_b[t]
        d = drained[t]
        np.minimum(np.maximum(want, 0.0, out=d), cap[t], out=d)
        f += (in_b[t] - d) * step
        np.minimum(np.maximum(f, 0.0, out=f), 1.0, out=f)
        fill[t] = f
    return fill, drained


def throttled_buffer(
    other: np.ndarray,
    demand: np.ndarray,
    g_e: np.ndarray,
    f_e: np.ndarray,
    wb: np.ndarray,
    cap: np.ndarray,
    dt: float,
    fill0: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """As write_buffer, with LSOM throttling writers sample by sample: writer group e (demand (E, T, G)
    bytes/s onto every group) is slowed as its own group's fill nears f_e. Also returns (T, E) throttle."""
    n = other.shape[0]
    fill, drained = np.empty_like(other), np.empty_like(other)
    thr = np.empty((n, len(g_e)))
    f = fill0.copy()
    pull = wb / 900.0
    # long samples (300 s) are cut into sub-steps so that the throttle cannot overshoot within one
    jump = float(np.max((other + demand.sum(0)) / wb)) * dt
    sub = int(min(12, max(1, np.ceil(jump / 0.04))))
    step = dt / sub / wb
    dem = np.ascontiguousarray(demand.transpose(1, 0, 2))  # (T, E, G)
    d, inflow = np.empty_like(f), np.empty_like(f)
    for t in range(n):
        o_t, dm_t, c_t = other[t], dem[t], cap[t]
        k_sum, d_sum = np.zeros(len(g_e)), np.zeros_like(f)
        for _ in range(sub):
            k = np.minimum(np.exp(30.0 * (f_e - f[g_e])), 1.0)
            np.add(o_t, k @ dm_t, out=inflow)
            np.multiply(f - 0.3, pull, out=d)
            d += inflow
            np.minimum(np.maximum(d, 0.0, out=d), c_t, out=d)
            f += (inflow - d) * step
            np.minimum(np.maximum(f, 0.0, out=f), 1.0, out=f)
            k_sum += k
            d_sum += d
        thr[t], fill[t], drained[t] = k_sum / sub, f, d_sum / sub
    return fill, drained, thr


def queue_factor(rho: np.ndarray) -> np.ndarray:
    """M/M/1 stretch 1/(1-rho), continued steeply past 95 % so that demand above capacity is
    throttled by latency (closed loops and oio caps then settle at the capacity)."""
    return 1.0 / (1.0 - np.minimum(rho, 0.95)) + 400.0 * np.clip(rho - 0.95, 0, None)


def congestion(fill: np.ndarray) -> np.ndarray:
    """LSOM log congestion (0-255) from write-buffer fill: none below ~70 %, 255 when full."""
    return 255.0 * np.clip((fill - 0.7) / 0.27, 0.0, 1.0) ** 1.6


def congestion_delay(cong: np.ndarray) -> np.ndarray:
    """Per-write delay LSOM injects to slow writers down (s): ~0.2 ms at 100, ~3 ms at 200, ~12 ms at 255."""
    return 20 * US * (np.exp(cong / 40.0) - 1.0)
