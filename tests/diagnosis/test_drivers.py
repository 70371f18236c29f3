"""A finding's drivers in the document: the members' attributions averaged by weight, the sources that
pushed towards the verdict, the span in UTC, one sentence; nothing for models without CNNs or when the
CNNs did not push towards the verdict."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from diagnosis import drivers as drv
from diagnosis.digest import drivers_sentence
from models.attribution import Attribution
from models.features import feature_names
from pipeline.channels import KIND_CHANNELS


class _Bt:  # the two fields drivers() reads of a BundleTensors
    start = 1_700_000_000  # 2023-11-14T22:13:20Z
    step_s = 300


def _attr(kind: str, gain: float, channel: int = 0, steps: tuple[int, int] = (4, 8)) -> Attribution:
    series = np.zeros((len(KIND_CHANNELS[kind]), 12))
    series[channel, steps[0] : steps[1]] = 1.0
    return Attribution(f"{kind}:x", kind, "disk.latency", series, np.zeros(len(feature_names(kind))), gain, 0.1)


def test_drivers_name_the_sources_and_the_span(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(drv, "combined", lambda *a, **k: _attr("disk", 2.0, channel=1))
    monkeypatch.setattr(drv, "cnn_members", lambda m: [(object(), 1.0)])
    got: dict[str, Any] | None = drv.drivers(object(), _Bt(), "disk:x", "disk.latency")  # type: ignore[arg-type]
    assert got is not None
    assert got["sources"] == [{"source": KIND_CHANNELS["disk"][1], "share": 1.0}]
    # the shortest window with 60 % of the push: 3 of the 4 steps 4..7, from step 4 (ties: the first)
    assert got["span"] == {"start": "2023-11-14T22:33:20Z", "end": "2023-11-14T22:48:20Z"}
    assert got["gain"] == 2.0 and got["members"] == 1 and "integrated gradients" in got["method"]
    text = drivers_sentence(got)
    assert (
        text == f"What drove it: {KIND_CHANNELS['disk'][1]} (100 %), mostly between 22:33 and 22:48 UTC on 2023-11-14."
    )


def test_no_drivers_without_cnns_or_without_a_push(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(drv, "combined", lambda *a, **k: None)
    assert drv.drivers(object(), _Bt(), "disk:x", "disk.latency") is None  # type: ignore[arg-type]
    monkeypatch.setattr(drv, "combined", lambda *a, **k: _attr("disk", -0.5))
    assert drv.drivers(object(), _Bt(), "disk:x", "disk.latency") is None  # type: ignore[arg-type]
    assert drivers_sentence(None) is None


def test_a_cluster_gets_sources_but_no_span(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(drv, "combined", lambda *a, **k: _attr("cluster", 1.0))
    monkeypatch.setattr(drv, "cnn_members", lambda m: [(object(), 1.0)])
    got = drv.drivers(object(), _Bt(), "cluster", "cluster.low_oio")  # type: ignore[arg-type]
    assert got is not None and got["span"] is None and got["sources"]
    assert drivers_sentence(got) == f"What drove it: {KIND_CHANNELS['cluster'][0]} (100 %)."


def test_words_across_midnight() -> None:
    d = {
        "sources": [{"source": "a", "share": 0.5}],
        "span": {"start": "2026-01-01T23:00:00Z", "end": "2026-01-02T01:00:00Z"},
    }
    assert drivers_sentence(d) == "What drove it: a (50 %), mostly between 2026-01-01 23:00 and 2026-01-02 01:00 UTC."


def test_combined_weighs_the_members(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = _attr("disk", 1.0, channel=0), _attr("disk", 3.0, channel=1)
    monkeypatch.setattr(drv, "cnn_members", lambda m: [("a", 0.75), ("b", 0.25)])
    monkeypatch.setattr(drv, "integrated_gradients", lambda cnn, *args, **k: a if cnn == "a" else b)
    got = drv.combined(object(), _Bt(), "disk:x", "disk.latency")  # type: ignore[arg-type]
    assert got is not None
    assert got.gain == pytest.approx(1.5)
    np.testing.assert_allclose(got.series[0], 0.75 * a.series[0])
    np.testing.assert_allclose(got.series[1], 0.25 * b.series[1])
