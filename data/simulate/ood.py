"""Bundles deliberately outside the training ranges, for the out-of-distribution check (issue 20,
"Never seen this"): a model trained on the lab and field profiles has never seen any of these, and a
diagnosis of one should say so (models.ood) rather than pass its verdicts off as usual.

    b = simulate_ood("hosts64", seed=5, index=0)   # a data.simulate.generate.Bundle, files and labels

Each variant is a field-profile bundle of the same (seed, index) with one thing moved past what the
profiles draw (topology.py: 3-16 hosts, 1-5 disk groups of 1-7 capacity devices, 10 or 25 GbE):

- `link100`: the vSAN design's uplinks negotiated 100 GbE (nicinfo Speed 100000, a 100 GbE NIC
  model); the physics carries the faster links. What should be named: NICs, their speed.
- `hosts64`: a 64-host cluster, each host built like the drawn one but with at most 2 disk groups of
  3 capacity devices, of which the upload holds the support bundles of UPLOADED hosts (every host is
  still in CMMDS and the cluster-wide perf dump): escalations of large clusters rarely carry every
  host's bundle, and each carries the whole perf dump (64 of them make a 600 MB upload and 1.8 GB to
  check). What should be named: the cluster, its host, NIC and device counts.
- `device`: an unseen storage device type: EDSFF (E3.S) NVMe shelves, 12 devices of a model no
  profile draws per disk group, with a cache device of the same model (the profiles' groups hold 1-7
  capacity devices of five known models). What should be named: disk groups (their capacity count).
- `units`: a collector's unit error: every latency counter of the perf dump written in nanoseconds
  where the dump carries microseconds (x1000, perturb.rescale_latency). What should be named: the
  latency channels, on every kind that has them.

Labels stay those of the simulation (the faults drawn still happen): the check is about whether the
bundle is like the training data, not about the verdicts. Every variant passes check_bundle.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

import numpy as np

from data.simulate import perturb
from data.simulate.generate import Bundle, simulate_bundle
from data.simulate.topology import Cluster, DeviceModel, Host, _host

__all__ = ["EXPECTED", "VARIANTS", "names_variant", "simulate_ood"]

LINK_100G: Final = 100_000
HOSTS: Final = 64
UPLOADED: Final = 4
SHELF: Final = DeviceModel("nvme", "SAMSUNG MZ3LO7T6HBLT-00A07", "5002538b", 0.02, 6500.0, 128.0)
SHELF_CAPACITY: Final = 12
_NIC_100G: Final = ("nmlx5_core", "Mellanox Technologies ConnectX-6 Dx EN NIC; 100GbE; dual-port QSFP56")

# Per variant: the component kind ("*": any) and what the channels (pipeline channel or static names)
# an out-of-distribution report should name contain; the benchmark and the tests score reasons by it.
EXPECTED: Final[dict[str, tuple[str, tuple[str, ...]]]] = {
    "link100": ("nic", ("speed_gbps",)),
    "hosts64": ("cluster", ("n_hosts", "n_host_bundles", "n_nics", "n_diskgroups", "n_disks", "n_vms")),
    "device": ("diskgroup", ("n_capacity",)),
    "units": ("*", ("lat",)),  # latencyAvgRead, latencyDevDAvg, latAvgResyncRead, ...
}


def names_variant(variant: str, reasons: Sequence[Mapping[str, Any]]) -> bool:
    """Whether some reason (models.ood's) names the variant's kind and one of its channels."""
    kind, want = EXPECTED[variant]
    return any(kind in ("*", r["kind"]) and any(w in c.lower() for c in r["channels"] for w in want) for r in reasons)


def _link100(cluster: Cluster) -> Cluster:
    """Every up port at the design speed moves to 100 GbE (a 1 GbE management port stays)."""
    drv, desc = _NIC_100G
    for h in cluster.hosts:
        h.nics = [
            replace(n, speed_mbps=LINK_100G, driver=drv, description=desc)
            if n.link_up and n.speed_mbps == cluster.link_mbps
            else n
            for n in h.nics
        ]
    cluster.link_mbps = LINK_100G
    return cluster


def _name(template: str, i: int) -> str:
    """The i-th host's name in the drawn host's style: its first number replaced, width kept."""
    m = re.search(r"\d+", template)
    if m is None:
        return f"{template}-{i}"
    return template[: m.start()] + f"{i:0{len(m.group())}d}" + template[m.end() :]


def _hosts64(rng: np.random.Generator) -> Callable[[Cluster], Cluster]:
    def hook(cluster: Cluster) -> Cluster:
        h0 = cluster.hosts[0]
        n_dg = min(len(h0.disk_groups), 2)
        caps = [min(len(h0.disk_groups[0].capacity), 3)] * n_dg
        up = sum(n.link_up for n in h0.nics)
        hw = {d.hw.model: d.hw for d in h0.disks}
        a, b = h0.vmk_ip.split(".")[:2]
        same = (cluster.storage, cluster.dedup, n_dg, caps, up, h0.vsan_nic, h0.standby_nic, cluster.link_mbps)
        rest = (cluster.mtu, h0.esxi_major, h0.n_cpus)
        cluster.hosts = [
            _host(rng, _name(h0.name, i + 1), *same, *rest, f"{a}.{b}.{i // 200}.{10 + i % 200}", len(h0.nics) - up, hw)
            for i in range(HOSTS)
        ]
        return cluster

    return hook


def _shelf(h: Host) -> None:
    for g in h.disk_groups:
        g.cache = replace(g.cache, hw=SHELF, dev=f"naa.{SHELF.vendor_prefix}{g.cache.dev[-8:]}")
        caps = [replace(d, hw=SHELF, dev=f"naa.{SHELF.vendor_prefix}{d.dev[-8:]}") for d in g.capacity]
        while len(caps) < SHELF_CAPACITY:  # more devices: the group's own, renumbered
            d = caps[len(caps) % len(g.capacity)]
            caps.append(replace(d, uuid=f"{d.uuid[:-4]}{len(caps):04x}", dev=f"{d.dev[:-4]}{len(caps):04x}"))
        g.capacity = caps[:SHELF_CAPACITY]
        g.destage_mbs = 0.5 * SHELF.bw_mbs * len(g.capacity)


def _device(cluster: Cluster) -> Cluster:
    for h in cluster.hosts:
        _shelf(h)
    cluster.storage = "nvme"
    return cluster


def simulate_ood(variant: str, seed: int, index: int, issue_rate: float | None = None) -> Bundle:
    """Field bundle `index` of `seed` as the variant makes it (see the module's docstring)."""
    if variant == "units":
        b = simulate_bundle("field", seed, index, issue_rate)
        return replace(b, files=perturb.rescale_latency(b.files, 1000.0))
    rng = np.random.default_rng([seed, index, 0x0D64])
    hooks: dict[str, Callable[[Cluster], Cluster]] = {
        "link100": _link100,
        "hosts64": _hosts64(rng),
        "device": _device,
    }
    if variant not in hooks:
        raise ValueError(f"unknown variant {variant!r}; one of {', '.join(VARIANTS)}")
    b = simulate_bundle("field", seed, index, issue_rate, cluster_hook=hooks[variant])
    if variant != "hosts64":
        return b
    files = _upload_of(b.files, UPLOADED, rng)
    return replace(b, files=files, hosts_present=len({p.split("/", 1)[0] for p in files if p.startswith("esx-")}))


def _upload_of(files: dict[str, bytes], k: int, rng: np.random.Generator) -> dict[str, bytes]:
    """The upload with the folders of at most k of its hosts (drawn by rng); the rest as they were."""
    tops = sorted({p.split("/", 1)[0] for p in files if p.startswith("esx-") and "/" in p})
    keep = set(rng.choice(tops, size=min(k, len(tops)), replace=False).tolist())
    return {p: b for p, b in files.items() if not (p.startswith("esx-") and "/" in p) or p.split("/", 1)[0] in keep}


VARIANTS: Final = tuple(EXPECTED)
