"""How often the expert rule for net.link_degraded (models/rules_margins.py) finds each of its causes, and
how often it fires on a NIC that is not degraded (issue 17: the held-out 1 GbE cause was missed).

    nice .venv/bin/python benchmarks/bench_link_rule.py [N]

Per cause, N field bundles (seed 41) with one net.link_degraded of that cause: a hit when the rule's
margin is > 0 on every degraded NIC; a miss is printed with the NIC's speed, design speed, rated speed,
throughput top (MB/s) and whether its host's support bundle is in the upload. Then the rule's fires on
every other NIC of N field bundles as simulated (seed 43). Nothing is learnt: the named THRESHOLDS.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from data.simulate.archive import tar_bytes  # noqa: E402
from data.simulate.generate import simulate_bundle  # noqa: E402
from models.rules_evidence import bundle_evidence  # noqa: E402
from models.rules_margins import THRESHOLDS, rule_margins  # noqa: E402
from pipeline import load_bundle  # noqa: E402

CAUSES = ("speed_1g", "speed_100m", "half_duplex")


def main(n: int) -> None:
    for cause in CAUSES:
        hits, misses = 0, []
        for i in range(n):
            b = simulate_bundle("field", 41, i, faults=["net.link_degraded"], causes=[f"net.link_degraded:{cause}"])
            y = b.labels["components"]
            assert isinstance(y, dict)
            bt = load_bundle(tar_bytes(b.files))
            m = rule_margins(bt, THRESHOLDS)["net.link_degraded"]
            bad = [j for j, cid in enumerate(bt.kinds["nic"].ids) if y.get(cid) == "net.link_degraded"]
            if bad and (m[bad] > 0).all():
                hits += 1
                continue
            ev = bundle_evidence(bt)["nic"]
            for j in bad:
                host = bt.kinds["nic"].ids[j].split(":", 1)[1].split("/")[0]
                uploaded = any(p.startswith(f"esx-{host}-") for p in b.files)
                misses.append(
                    (i, *(round(float(ev[k][j]), 1) for k in ("speed_gbps", "design_gbps", "rated_gbps")),
                     round(float(ev["tput_top_mbs"][j]), 1), "host bundle" if uploaded else "no host bundle")
                )  # fmt: skip
        print(f"{cause}: {hits} of {n}; misses (bundle, speed, design, rated, top MB/s, host): {misses}")
    fires = total = 0
    for i in range(n):
        b = simulate_bundle("field", 43, i)
        y = b.labels["components"]
        assert isinstance(y, dict)
        bt = load_bundle(tar_bytes(b.files))
        m = rule_margins(bt, THRESHOLDS)["net.link_degraded"]
        for j, cid in enumerate(bt.kinds["nic"].ids):
            if y.get(cid) != "net.link_degraded":
                total += 1
                fires += int(m[j] > 0)
    print(f"fires on other NICs: {fires} of {total}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 24)
