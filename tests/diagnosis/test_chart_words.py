"""What a report says of a chart: the onset in words, and the PNG's legends outside the data area."""

from __future__ import annotations

import matplotlib

from diagnosis.chart_png import chart_png, figure
from diagnosis.charts import Chart
from diagnosis.onset import Onset, describe
from tests.service.kit import hostile_chart

START = 1_732_537_200  # 2024-11-25 12:20:00 UTC


def test_onset_in_words() -> None:
    assert describe(Onset(300, False), START, 20) == (
        "Onset: started about 14:00 UTC on 25 Nov, 1 h 40 min into the capture."
    )
    assert describe(Onset(360, False), START, 20).endswith("14:20 UTC on 25 Nov, 2 h into the capture.")
    assert describe(Onset(2, False), START, 20).endswith("12:21 UTC on 25 Nov, 1 min into the capture.")
    assert describe(Onset(1, False), START, 20).endswith("less than a minute into the capture.")
    assert describe(Onset(120, False), START, 20).endswith(", 40 min into the capture.")
    assert describe(Onset(0, True), START, 20) == (
        "Onset: already present when the capture began (12:20 UTC on 25 Nov); it started earlier."
    )
    assert describe(None, START, 20).startswith("Onset: none found in the capture")
    next_day = describe(Onset(4 * 180, False), START + 12 * 3600, 60)
    assert next_day.endswith("12:20 UTC on 26 Nov, 12 h into the capture.")


def _overlap(a: object, b: object) -> bool:
    return bool(a.overlaps(b))  # type: ignore[attr-defined]


def test_png_legends_never_cover_the_data() -> None:
    chart = hostile_chart()
    wide = Chart(chart.component, chart.fault, chart.start, chart.step_s, chart.panels * 2, chart.onset)  # 2 x 2
    for c in (chart, wide):
        with matplotlib.rc_context({"text.usetex": False, "text.parse_math": False}):
            fig = figure(c)
            fig.canvas.draw()  # the constrained layout is made at drawing
            renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
            axes = [ax for ax in fig.axes if ax.get_visible()]
            assert len(axes) == len(c.panels)
            for ax in axes:
                legend = ax.get_legend()
                assert legend is not None and len(legend.get_texts()) >= 2
                box = legend.get_window_extent(renderer)
                data = ax.get_window_extent(renderer)
                assert box.y1 < data.y0, "the legend is below the axes"
                for other in axes:  # nor over another panel's data, nor off the figure
                    assert not _overlap(box, other.get_window_extent(renderer))
                assert box.y0 >= 0 and box.x1 <= fig.bbox.x1 + 1
                ticks = [t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text()]
                assert ticks and all(not _overlap(box, t) for t in ticks)  # under the time labels
        assert chart_png(c).startswith(b"\x89PNG")
