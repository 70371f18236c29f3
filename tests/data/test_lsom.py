"""LSOM's write buffer and queueing primitives (data/simulate/lsom.py), on the properties the physics
relies on: destage never beats the capacity tier, the buffer fills only when writes outrun it, LSOM's
throttle holds a writer's group near its fill limit, congestion is 0 below 70 % and 255 when full."""

from __future__ import annotations

import numpy as np

from data.simulate.lsom import congestion, congestion_delay, queue_factor, throttled_buffer, write_buffer

GB = 1e9


def test_the_buffer_fills_only_when_writes_outrun_the_capacity_tier() -> None:
    T, wb = 120, np.array([100 * GB, 100 * GB])
    cap = np.full((T, 2), 200e6)  # the capacity tier absorbs 200 MB/s
    writes = np.column_stack([np.full(T, 150e6), np.full(T, 600e6)])  # under it, three times over it
    fill, drained = write_buffer(writes, wb, cap, 60.0, np.array([0.3, 0.3]))
    assert (drained <= cap + 1e-6).all() and (drained >= 0).all()
    assert abs(fill[-1, 0] - 0.3) < 0.05  # destage keeps pace: the fill stays near its 30 % target
    assert fill[-1, 1] > 0.9 and (np.diff(fill[:, 1]) >= -1e-12).all()  # fills, never drains
    # a full buffer: drained at exactly the capacity, fill 0..1 throughout
    assert drained[-1, 1] == cap[-1, 1] and fill.min() >= 0 and fill.max() <= 1


def test_lsom_throttles_a_writer_as_its_group_nears_the_limit() -> None:
    T, wb = 200, np.array([50 * GB, 50 * GB])
    cap = np.full((T, 2), 100e6)
    other = np.zeros((T, 2))
    demand = np.zeros((1, T, 2))
    demand[0, :, 0] = 800e6  # one writer, eight times the capacity tier, onto group 0
    fill, drained, thr = throttled_buffer(
        other, demand, np.array([0]), np.array([0.9]), wb, cap, 300.0, np.full(2, 0.3)
    )
    unthrottled, _ = write_buffer(demand[0], wb, cap, 300.0, np.full(2, 0.3))
    assert unthrottled[-1, 0] == 1.0  # left alone it fills the buffer
    # throttled from its limit on, to what destage drains: 1/8 of the demand, a little past the limit
    assert 0.9 < fill[-1, 0] < 0.99 and abs(thr[-1, 0] - 1 / 8) < 0.02
    assert (drained <= cap + 1e-6).all() and fill[:, 1].max() <= 0.3 + 1e-9


def test_congestion_and_queueing() -> None:
    fill = np.array([0.0, 0.69, 0.7, 0.85, 0.97, 1.0])
    c = congestion(fill)
    assert c[:3].tolist() == [0.0, 0.0, 0.0] and c[-2] == c[-1] == 255.0 and 0 < c[3] < 255
    d = congestion_delay(np.array([0.0, 100.0, 200.0, 255.0]))
    assert d[0] == 0 and 1e-4 < d[1] < 3e-4 and 2e-3 < d[2] < 4e-3 and 1e-2 < d[3] < 1.4e-2
    rho = np.linspace(0, 1.2, 25)
    q = queue_factor(rho)
    assert q[0] == 1.0 and (np.diff(q) > 0).all() and q[-1] > 80  # past capacity, latency throttles demand
