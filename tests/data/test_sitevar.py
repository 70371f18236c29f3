"""data/simulate/sitevar.py: a site's measurement noise. A VM's iops and latency are one stream of I/Os,
so at most noisy sites their wiggle keeps Little's law (a closed loop's in-flight level holds, a paced
one's iops hold); the rest keep independent noise, so no model leans on the law holding exactly."""

from __future__ import annotations

import numpy as np

from data.simulate.sitevar import site_metrics

T = 48


def _metrics() -> dict[str, dict[str, dict[str, np.ndarray]]]:
    steady = {"iopsRead": np.full(T, 800.0), "iopsWrite": np.full(T, 200.0),
              "throughputRead": np.full(T, 800.0 * 4096), "throughputWrite": np.full(T, 200.0 * 4096),
              "latencyRead": np.full(T, 600.0), "latencyWrite": np.full(T, 900.0)}  # fmt: skip
    cluster = {"iopsRead": np.full(T, 1600.0), "latencyAvgRead": np.full(T, 600.0), "oio": np.full(T, 2.0)}
    return {
        "cluster-domclient": {"c": cluster},
        "virtual-machine": {"threads": dict(steady), "paced": dict(steady)},
    }


def _inflight(s: dict[str, np.ndarray]) -> np.ndarray:
    return s["iopsRead"] * s["latencyRead"] + s["iopsWrite"] * s["latencyWrite"]


def _spread(x: np.ndarray) -> float:
    return float(np.ptp(np.log(x)))


def test_a_vms_noise_keeps_littles_law_at_most_noisy_sites() -> None:
    closed = {"threads": np.ones(T, dtype=bool), "paced": np.zeros(T, dtype=bool)}
    kinds = {"quiet": 0, "littles": 0, "apart": 0}
    for seed in range(200):
        m = _metrics()
        site_metrics(m, np.random.default_rng(seed), closed)
        th, pa = m["virtual-machine"]["threads"], m["virtual-machine"]["paced"]
        if _spread(th["latencyRead"]) == 0:  # a site without measurement noise
            assert _spread(_inflight(th)) == 0 and _spread(pa["iopsRead"]) == 0
            kinds["quiet"] += 1
        elif _spread(_inflight(th)) < 1e-9:
            # threads: the in-flight level holds while iops follow the latency; paced: iops hold
            assert _spread(th["iopsRead"]) > 0 and _spread(pa["iopsRead"]) < 1e-9
            assert _spread(_inflight(pa)) > 0
            # throughput stays iops x block size
            assert np.allclose(th["throughputRead"], th["iopsRead"] * 4096)
            kinds["littles"] += 1
        else:
            assert _spread(pa["iopsRead"]) > 0  # independent noise on every counter
            kinds["apart"] += 1
        assert _spread(m["cluster-domclient"]["c"]["oio"]) == 0  # the cluster's oio is no rate: never noised
    noisy = kinds["littles"] + kinds["apart"]
    assert 0.2 <= kinds["quiet"] / 200 <= 0.4
    assert 0.65 <= kinds["littles"] / noisy <= 0.85, kinds


def test_without_the_loops_every_noisy_site_keeps_independent_noise() -> None:
    for seed in range(40):
        m = _metrics()
        site_metrics(m, np.random.default_rng(seed))
        th = m["virtual-machine"]["threads"]
        assert _spread(th["latencyRead"]) == 0 or _spread(_inflight(th)) > 1e-9
