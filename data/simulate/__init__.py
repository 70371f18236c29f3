"""Fault-injection simulator that writes realistic, labelled vSAN diagnosis bundles."""

# Bump when the physical model, the fault injection or a writer changes what a seed produces:
# cached datasets key on it.
# 5: an under-driven cluster is never drawn beside another fault (faults.md: "no congestion, no errors
# anywhere: the system is healthy but under-driven").
# 6: net.link_degraded's MTU mismatch (an uplink at MTU 1500 in a jumbo-frame cluster).
# 7: vscsiStats captures (data.simulate.vscsi) in a third of lab and a quarter of field bundles.
SIMULATOR_VERSION = "7"
