"""Fault-injection simulator that writes realistic, labelled vSAN diagnosis bundles."""

# Bump when the physical model, the fault injection or a writer changes what a seed produces:
# cached datasets key on it.
SIMULATOR_VERSION = "4"
