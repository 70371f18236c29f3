"""Draw `diagnosis.charts.Chart`s as inline SVG for the web UI (no script, nothing fetched); the PNG for
reports and downloads is diagnosis.chart_png's.

One SVG per panel, each standing alone: title, legend, axes with units, UTC time labels, the onset
line, and an accessible <title>/<desc>. Everything that comes from a bundle is escaped.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import replace
from html import escape

from diagnosis.charts import Chart, Panel

W, H = 560, 250
LEFT, RIGHT, TOP, BOTTOM = 62, 14, 48, 36
SUBJECT, PEER, BAND, ONSET, REF = "#c0392b", "#6b7280", "#d9dde3", "#1d4ed8", "#b7791f"
MAX_PEER_LINES = 6  # beyond this, peers are drawn as their range and median
DRIVE, DRIVE_ALPHA = "#f59e0b", 0.18  # the span of time that drove the verdict, shaded behind the data


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About n round tick values covering [lo, hi]."""
    if not math.isfinite(lo) or not math.isfinite(hi):
        return [0.0, 1.0]
    if hi - lo < 1e-12:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / max(1, n)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step) * step
    out, v = [], first
    while v < hi + step * 0.999:
        out.append(round(v, 12))
        v += step
    return out


def fmt_value(v: float) -> str:
    a = abs(v)
    if a >= 10_000:
        return f"{v / 1000:.0f}k"
    if a >= 100 or v == int(v):
        return f"{v:.0f}"
    return f"{v:.2g}" if a < 1 else f"{v:.3g}"


def time_ticks(start: int, span_s: int) -> list[int]:
    """Round UTC instants across [start, start + span_s], 4 to 8 of them."""
    steps = (60, 120, 300, 600, 900, 1200, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800)
    step = next((s for s in steps if span_s / s <= 7), steps[-1])
    first = -(-start // step) * step
    return list(range(first, start + span_s + 1, step))


def hhmm(t: int, with_date: bool = False) -> str:
    return time.strftime("%m-%d %H:%M" if with_date else "%H:%M", time.gmtime(t))


def _values(panel: Panel) -> list[float]:
    """What the value axis must show: the subject, the reference line, and the peers as drawn (their
    quartiles where they are a band: a wild peer outside it does not stretch the axis)."""
    vals = [v for v in panel.subject if v is not None] + ([panel.ref] if panel.ref is not None else [])
    rows = list(peer_stats(panel.peers)) if len(panel.peers) > MAX_PEER_LINES else panel.peers
    vals += [v for row in rows for v in row if v is not None]
    return vals or [0.0]


def _path(xs: Sequence[float], ys: Sequence[float | None]) -> str:
    """SVG path data; a missing sample breaks the line instead of bridging the gap."""
    out, pen = [], False
    for x, y in zip(xs, ys, strict=True):
        if y is None:
            pen = False
            continue
        out.append(f"{'L' if pen else 'M'}{x:.1f},{y:.1f}")
        pen = True
    return "".join(out)


def peer_stats(peers: list[list[float | None]]) -> tuple[list[float | None], list[float | None], list[float | None]]:
    """Per step, the peers' lower quartile, median and upper quartile: the band is their middle half, so
    that one wild peer (a second faulty component) does not widen it until the subject hides inside."""
    lo: list[float | None] = []
    med: list[float | None] = []
    hi: list[float | None] = []
    for col in zip(*peers, strict=True):
        vals = sorted(v for v in col if v is not None)
        if not vals:
            lo.append(None)
            med.append(None)
            hi.append(None)
            continue
        # inclusive: interpolated between the samples, as numpy's default percentile
        q1, q2, q3 = statistics.quantiles(vals, n=4, method="inclusive") if len(vals) > 1 else vals * 3
        lo.append(q1)
        med.append(q2)
        hi.append(q3)
    return lo, med, hi


def extent(chart: Chart) -> tuple[int, int]:
    """(first, last) step with a sample in any panel: the time axis runs from the first to the last, not
    over the stretch of the window where nothing was measured. (0, 0) for a chart without samples."""
    seen = [i for p in chart.panels for row in (p.subject, *p.peers) for i, v in enumerate(row) if v is not None]
    return (min(seen), max(seen)) if seen else (0, 0)


def _band(xs: Sequence[float], lo: Sequence[float | None], hi: Sequence[float | None]) -> list[str]:
    """Polygons of the peers' range, one per run of steps with data."""
    polys: list[str] = []
    run: list[tuple[float, float, float]] = []
    for x, a, b in [*zip(xs, lo, hi, strict=True), (0.0, None, None)]:
        if a is None or b is None:
            if len(run) > 1:
                pts = [f"{px:.1f},{pb:.1f}" for px, _, pb in run] + [f"{px:.1f},{pa:.1f}" for px, pa, _ in run[::-1]]
                polys.append(" ".join(pts))
            run = []
        else:
            run.append((x, a, b))
    return polys


def _legend(chart: Chart, panel: Panel) -> tuple[list[str], int]:
    """Legend entries laid out left to right, wrapping to a second row; (svg parts, rows)."""
    line = '<line x1="0" y1="0" x2="18" y2="0" stroke="{}" {}/>'
    items = [(line.format(SUBJECT, 'stroke-width="2.5"'), panel.subject_label)]
    if len(panel.peers) > MAX_PEER_LINES:
        band = f'<rect x="0" y="-5" width="18" height="10" fill="{BAND}"/>'
        items.append((band, f"{panel.peer_label} ({len(panel.peers)}), middle half"))
        items.append((line.format(PEER, 'stroke-dasharray="4 3"'), "their median"))
    elif panel.peers:
        items.append((line.format(PEER, 'stroke-width="1"'), panel.peer_label))
    if panel.ref is not None:
        items.append((line.format(REF, 'stroke-width="1.5" stroke-dasharray="2 2"'), panel.ref_label))
    if chart.onset is not None:
        items.append((f'<line x1="9" y1="-6" x2="9" y2="6" stroke="{ONSET}" stroke-width="2"/>', "onset"))
    if chart.span is not None:
        items.append((f'<rect x="0" y="-5" width="18" height="10" fill="{DRIVE}" opacity="{DRIVE_ALPHA}"/>',
                      "what drove the verdict"))  # fmt: skip
    out, lx, ly, rows = [], float(LEFT - 54), 34, 1
    for sym, label in items:
        short = label if len(label) <= 44 else label[:43] + "…"
        width = 34 + 6.4 * len(short)
        if lx + width > W - RIGHT + 20 and lx > LEFT:
            lx, ly, rows = float(LEFT - 54), ly + 16, rows + 1
        text = f'<text x="24" y="4" class="cl">{escape(short)}</text>'
        out.append(f'<g transform="translate({lx:.0f},{ly})">{sym}{text}</g>')
        lx += width
    return out, rows


def panel_svg(chart: Chart, panel: Panel, uid: str) -> str:
    """One panel as a standalone <svg> element (uid keeps its ids unique on the page). The time axis spans
    the chart's samples (`extent`), the same for every panel of the chart."""
    a, b = extent(chart)
    panel = replace(panel, subject=panel.subject[a : b + 1], peers=[row[a : b + 1] for row in panel.peers])
    t0 = chart.time_of(a)
    n = len(panel.subject)
    legend, rows = _legend(chart, panel)
    top = TOP + 16 * (rows - 1)  # a second legend row takes from the plot, not from the page
    pw, ph = W - LEFT - RIGHT, H - top - BOTTOM
    vals = _values(panel)
    yt = nice_ticks(min(0.0, min(vals)), max(vals))
    y0, y1 = yt[0], yt[-1]
    y1 += 0.03 * (y1 - y0)  # headroom: a series pinned at the top tick stays clear of the frame

    def sx(i: float) -> float:
        return LEFT + pw * i / max(1, n - 1)

    def sy(v: float) -> float:
        return top + ph * (1 - (v - y0) / ((y1 - y0) or 1))

    xs = [sx(i) for i in range(n)]
    span = chart.step_s * max(1, n - 1)
    unit = escape(panel.unit)
    desc = f"{panel.subject_label} against {panel.peer_label or 'its own history'}, in {panel.unit}"
    if chart.onset is not None:
        desc += f"; onset {'at or before the window start' if chart.onset.at_start else 'at'} " + time.strftime(
            "%Y-%m-%d %H:%M UTC", time.gmtime(chart.time_of(chart.onset.step))
        )
    out = [
        f'<svg class="chart" viewBox="0 0 {W} {H}" role="img" aria-labelledby="{uid}-t {uid}-d" '
        f'xmlns="http://www.w3.org/2000/svg" data-channel="{escape(panel.channel)}">',
        f'<title id="{uid}-t">{escape(panel.title)} — {escape(chart.title)}</title>',
        f'<desc id="{uid}-d">{escape(desc)}</desc>',
        f'<text class="ct" x="{LEFT - 54}" y="16">{escape(panel.title)}<tspan class="cu"> ({unit})</tspan></text>',
    ]
    out += legend
    # axes and grid
    for v in yt:
        y = sy(v)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{W - RIGHT}" y2="{y:.1f}" class="cg"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" class="ca">{fmt_value(v)}</text>')
    prev_day = None
    for t in time_ticks(t0, span):
        x = sx((t - t0) / chart.step_s)
        day = time.gmtime(t).tm_yday
        label = hhmm(t, with_date=prev_day is None or day != prev_day)
        prev_day = day
        out.append(f'<line x1="{x:.1f}" y1="{top + ph}" x2="{x:.1f}" y2="{top + ph + 4}" class="ck"/>')
        anchor = "end" if x > W - RIGHT - 20 else "middle"
        out.append(f'<text x="{x:.1f}" y="{top + ph + 16}" text-anchor="{anchor}" class="ca">{label}</text>')
    out.append(f'<text x="{W - RIGHT}" y="{H - 4}" text-anchor="end" class="cu">time (UTC)</text>')
    out.append(f'<rect x="{LEFT}" y="{top}" width="{pw}" height="{ph}" class="cf"/>')
    if chart.span is not None and chart.span[1] - 1 >= a and chart.span[0] <= b:  # the steps that drove it
        x0, x1 = sx(max(chart.span[0] - a, 0)), sx(min(chart.span[1] - 1 - a, n - 1))
        out.append(f'<rect class="drivers-span" x="{x0:.1f}" y="{top}" width="{max(x1 - x0, 2.0):.1f}" '
                   f'height="{ph}" fill="{DRIVE}" opacity="{DRIVE_ALPHA}"/>')  # fmt: skip
    # peers
    if len(panel.peers) > MAX_PEER_LINES:
        plo, pmed, phi = peer_stats(panel.peers)
        for poly in _band(xs, [None if v is None else sy(v) for v in plo], [None if v is None else sy(v) for v in phi]):
            out.append(f'<polygon points="{poly}" fill="{BAND}"/>')
        d = _path(xs, [None if v is None else sy(v) for v in pmed])
        out.append(f'<path d="{d}" fill="none" stroke="{PEER}" stroke-width="1.2" stroke-dasharray="4 3"/>')
    else:
        for row in panel.peers:
            d = _path(xs, [None if v is None else sy(v) for v in row])
            out.append(f'<path d="{d}" fill="none" stroke="{PEER}" stroke-width="1" opacity="0.7"/>')
    if panel.ref is not None:
        y = sy(panel.ref)
        out.append(f'<line class="ref" x1="{LEFT}" y1="{y:.1f}" x2="{W - RIGHT}" y2="{y:.1f}" stroke="{REF}" '
                   f'stroke-width="1.5" stroke-dasharray="2 2"/>')  # fmt: skip
    d = _path(xs, [None if v is None else sy(v) for v in panel.subject])
    out.append(f'<path class="subject" d="{d}" fill="none" stroke="{SUBJECT}" stroke-width="2"/>')
    if chart.onset is not None:
        x = sx(min(max(chart.onset.step - a, 0), n - 1))  # an onset before the first sample: at the axis
        label = "before window" if chart.onset.at_start else "onset " + hhmm(chart.time_of(chart.onset.step))
        anchor = "start" if x < LEFT + pw * 0.75 else "end"
        dx = 4 if anchor == "start" else -4
        out.append(f'<line class="onset" x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}" stroke="{ONSET}" '
                   f'stroke-width="2" stroke-dasharray="6 3"/>')  # fmt: skip
        out.append(f'<text x="{x + dx:.1f}" y="{top + 12}" text-anchor="{anchor}" class="co">{label}</text>')
    out.append("</svg>")
    return "".join(out)


def chart_svgs(chart: Chart, uid: str) -> list[str]:
    return [panel_svg(chart, p, f"{uid}-{k}") for k, p in enumerate(chart.panels)]
