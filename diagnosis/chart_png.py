"""The PNG of a `diagnosis.charts.Chart`, for reports sent by email and the UI's download: the same
panels, colours, peer band, onset and "what drove it" span as the page's SVG (diagnosis.chart_render)."""

from __future__ import annotations

import io
import threading
from typing import TYPE_CHECKING

from diagnosis.chart_render import (
    BAND,
    DRIVE,
    DRIVE_ALPHA,
    MAX_PEER_LINES,
    ONSET,
    PEER,
    REF,
    SUBJECT,
    extent,
    peer_stats,
)
from diagnosis.charts import Chart

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _plain(text: str, limit: int = 60) -> str:
    """A bundle's name as a PNG label: one line, cut to `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def chart_png(chart: Chart, dpi: int = 100) -> bytes:
    """The same chart as one PNG (panels two by two), for reports sent by email and the UI's download.

    Names from the bundle are data, never markup: every text is drawn with mathtext parsing and TeX off,
    whatever matplotlibrc says (a device named `$a^{$` would otherwise be parsed as math, and fail the
    whole chart). Drawn with matplotlib's object API on its own Agg canvas: no pyplot state."""
    import matplotlib

    # rcParams are global: the lock keeps two threads' charts (and their restore) from interleaving
    with _PNG_LOCK, matplotlib.rc_context({"text.usetex": False, "text.parse_math": False}):
        buf = io.BytesIO()
        figure(chart).savefig(buf, format="png", dpi=dpi)
        return buf.getvalue()


_PNG_LOCK = threading.Lock()


def figure(chart: Chart) -> Figure:
    """The PNG's matplotlib Figure (panels two by two). Each panel's legend sits below its axes, under
    the time labels, never over the data; the constrained layout makes room for it."""
    from datetime import UTC, datetime

    import matplotlib.dates as mdates
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.transforms import offset_copy

    plain = {"parse_math": False, "usetex": False}  # and so for every text made here, tick labels included
    cols = 2 if len(chart.panels) > 1 else 1
    rows = -(-len(chart.panels) // cols)
    fig = Figure(figsize=(5.6 * cols, 3.5 * rows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False)
    n = len(chart.panels[0].subject) if chart.panels else 0
    ts = [datetime.fromtimestamp(chart.time_of(i), UTC) for i in range(n)]
    first, last = extent(chart)  # the time axis spans the samples, without margins past them
    nan = float("nan")
    for ax, p in zip(axes.flat, chart.panels, strict=False):
        if len(p.peers) > MAX_PEER_LINES:
            plo, pmed, phi = peer_stats(p.peers)
            ax.fill_between(ts, [nan if v is None else v for v in plo], [nan if v is None else v for v in phi],
                            color=BAND, label=_plain(f"{p.peer_label}, middle half"))  # fmt: skip
            ax.plot(ts, [nan if v is None else v for v in pmed], color=PEER, ls="--", lw=1, label="peer median")
        else:
            for k, row in enumerate(p.peers):
                ax.plot(ts, [nan if v is None else v for v in row], color=PEER, lw=0.8, alpha=0.7,
                        label=_plain(p.peer_label) if k == 0 else None)  # fmt: skip
        ax.plot(ts, [nan if v is None else v for v in p.subject], color=SUBJECT, lw=1.8, label=_plain(p.subject_label))
        if p.ref is not None:
            ax.axhline(p.ref, color=REF, ls=":", lw=1.5, label=_plain(p.ref_label))
        if chart.onset is not None:
            ax.axvline(ts[chart.onset.step], color=ONSET, ls="--", lw=1.5, label="onset")
        if chart.span is not None and n:
            a, b = max(0, chart.span[0]), min(n - 1, chart.span[1] - 1)
            ax.axvspan(ts[a], ts[b], color=DRIVE, alpha=DRIVE_ALPHA, lw=0, label="what drove the verdict")
        ax.set_title(_plain(p.title), fontsize=10, loc="left", **plain)
        ax.set_ylabel(_plain(p.unit, 30), fontsize=9, **plain)
        if n and last > first:
            ax.set_xlim(ts[first], ts[last])
        ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M", tz=UTC))
        ax.tick_params(labelsize=8)
        below = offset_copy(ax.transAxes, fig=fig, y=-16, units="points")  # under the time labels
        legend = ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0, 0), bbox_transform=below, ncols=2,
                           frameon=False, borderaxespad=0, handlelength=1.8, columnspacing=1.2)  # fmt: skip
        for text in legend.get_texts():
            text.set_parse_math(False)
            text.set_usetex(False)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(chart.panels) :]:
        ax.set_visible(False)
    fig.suptitle(_plain(f"{chart.title} (time in UTC)", 120), fontsize=11, **plain)
    return fig
