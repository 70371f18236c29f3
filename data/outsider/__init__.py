"""Outsider: an independent generator of simulated vSAN diagnosis bundles, written clean-room from the
shared spec (bundle-format.md, faults.md) and the real public format samples alone, to stand in for an
outside producer of bundles the project's models never learned from, so that generalisation can be
measured.

Modelling choices (its own, not the project simulator's):

- Physics first: the I/O path is a small closed queueing network solved per sample (guest outstanding
  I/Os per host; reads served by one replica, RAID-1 writes by the slower of a random pair of hosts;
  owner service = LSOM overhead + device latency growing with utilisation + CPU ready delay; network =
  round trip + wire time + loss/saturation penalty). Throughput follows from Little's law, so every
  fault moves latency, iops, oio, device and network counters together.
- Production workloads are partly open loop (they hold more I/Os in flight when latency rises),
  benchmarks fully closed loop (HCIBench-style VMs x disks x threads, in phases).
- Each fault is driven through a named real-world cause that decides which counters and log lines show
  it (e.g. packet loss from a bad optic carries CRC errors, from switch overruns only loss and
  retransmits, from an injected every-N-th drop a flat rate); severities run from the mild edge an
  engineer would still call up to blatant.
- The write buffer is integrated over time (fill = writes in - destage) with LSOM back-pressure, so
  congestion settles where throttled writes equal the destage limit; log lines only above 200.
- Fields a fault does not determine are random: window (20-300 s samples, 1-48 h), 3-8 hosts, 1-3 disk
  groups of 1-6 capacity devices, hybrid or all-flash, NIC generations and port layouts, which host
  folders and optional files are present, dump dialect, log style (ESXi 7 or 8), esxtop/vscsiStats
  side captures.
"""

from __future__ import annotations

from data.outsider.bundle import outsider_bundle, write_outsider

__all__ = ["outsider_bundle", "write_outsider"]
