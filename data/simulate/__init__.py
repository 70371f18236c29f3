"""Fault-injection simulator that writes realistic, labelled vSAN diagnosis bundles."""

# Bump when the physical model, the fault injection or a writer changes what a seed produces:
# cached datasets key on it.
# 5: an under-driven cluster is never drawn beside another fault (faults.md: "no congestion, no errors
# anywhere: the system is healthy but under-driven").
# 6: net.link_degraded's MTU mismatch (an uplink at MTU 1500 in a jumbo-frame cluster).
# 7: vscsiStats captures (data.simulate.vscsi) in a third of lab and a quarter of field bundles.
# 8: a VM's measurement noise keeps Little's law at three quarters of the noisy sites (data.simulate.sitevar):
# its latency wiggles and a closed loop's iops follow inversely, where they had wiggled apart.
SIMULATOR_VERSION = "8"
