"""Fault-injection simulator that writes realistic, labelled vSAN diagnosis bundles."""

# Bump when the physical model, the fault injection or a writer changes what a seed produces:
# cached datasets key on it.
# 5: an under-driven cluster is never drawn beside another fault (faults.md: "no congestion, no errors
# anywhere: the system is healthy but under-driven").
# 6: net.link_degraded's MTU mismatch (an uplink at MTU 1500 in a jumbo-frame cluster).
# 7: vscsiStats captures (data.simulate.vscsi) in a third of lab and a quarter of field bundles.
# 8: a VM's counters that keep Little's law, tried and reverted (README): its datasets are not these.
# 9: a hot spot's reads take 1-8x the device's service time on their one channel, so the hot device
# serves from about its siblings' I/O to many times it, mostly under 4x (v7: mostly over 10x;
# data.simulate.conditions).
# 10: field windows drawn log-uniform over 1-48 h, down to 12 samples: tried and reverted (README), so
# its datasets are not these.
SIMULATOR_VERSION = "9"
