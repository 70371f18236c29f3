"""Cluster layout: hosts, disk groups, devices, uplinks and VMs, with the identifiers a real cluster shows."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

Rng = np.random.Generator

DOMAINS = ("lab.local", "corp.example.com", "vsan.example.org", "dc1.example.net", "prod.local")
HOST_STYLES = ("esx-{i:02d}", "esxi-{i:02d}", "esx{i:02d}", "node{i:02d}-vsan", "hv-{r}{i:02d}", "esxi{i}")
# (driver, description, speed Mb/s); the vSAN uplinks of real clusters are 10/25 GbE.
FAST_NICS = (
    ("ixgben", "Intel(R) 82599 10 Gigabit Dual Port Network Connection", 10000),
    ("i40en", "Intel(R) Ethernet Controller X710 for 10GbE SFP+", 10000),
    ("bnxtnet", "Broadcom BCM57414 NetXtreme-E 10Gb/25Gb RDMA Ethernet Controller", 25000),
    ("nmlx5_core", "Mellanox Technologies MT27710 Family [ConnectX-4 Lx]", 25000),
    ("qedentv", "QLogic FastLinQ QL41xxx 10/25GbE Ethernet Adapter", 25000),
)
SLOW_NICS = (
    ("igbn", "Intel Corporation Ethernet Server Adapter I350-T2", 1000),
    ("ntg3", "Broadcom Corporation NetXtreme BCM5720 Gigabit Ethernet", 1000),
)
SSD_PREFIX = ("naa.55cd2e41", "naa.5002538b", "naa.58ce38ee", "naa.500a0751")
HDD_PREFIX = ("naa.5000c500", "naa.5000cca2", "naa.50014ee2")


def vuuid(rng: Rng, prefix: str = "") -> str:
    h = prefix + "".join(f"{b:02x}" for b in rng.integers(0, 256, 16))[len(prefix) :]
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


@dataclass
class Disk:
    uuid: str
    dev: str
    host: int
    dg: int
    is_cache: bool
    is_ssd: bool
    read_us: float  # unloaded device service time
    write_us: float
    max_iops: float
    path: str
    seq_bps: float = 5e8  # sequential write bandwidth, what destaging is bounded by


@dataclass
class DiskGroup:
    idx: int
    host: int
    cache: Disk
    capacity: list[Disk]
    all_flash: bool
    destage_bps: float  # what the capacity tier can absorb
    rc_hit: float  # read-cache hit share on hybrid groups


@dataclass
class Nic:
    name: str
    pci: str
    driver: str
    desc: str
    speed: int
    duplex: str
    link_up: bool
    mtu: int
    mac: str
    role: str  # vsan-active, vsan-standby, mgmt, unused


@dataclass
class Host:
    idx: int
    name: str
    uuid: str
    dgs: list[int]
    nics: list[Nic]
    cores: int
    ip: str
    client_iops: float = 1e5  # what the DOM client and vSCSI path can push before queueing on CPU

    def nic(self, role: str) -> Nic | None:
        return next((n for n in self.nics if n.role == role), None)


@dataclass
class Vm:
    uuid: str
    name: str
    host: int
    ndisks: int
    read_frac: float
    block: float  # bytes per I/O
    replicas: tuple[int, int]  # disk-group indices; equal for FTT=0 objects
    oio: float = 0.0  # per VM disk, closed loop
    peak_iops: float = 0.0  # open-loop demand
    spread: float = 0.35  # share of its I/O on other objects (swap, namespace, other disks) striped cluster-wide


@dataclass
class Cluster:
    uuid: str
    hosts: list[Host]
    dgs: list[DiskGroup]
    vms: list[Vm] = field(default_factory=list)
    all_flash: bool = True
    dedup: bool = False
    mtu: int = 9000
    esxi8: bool = False

    def disks(self) -> list[Disk]:
        return [d for g in self.dgs for d in (g.cache, *g.capacity)]


def _dev(rng: Rng, ssd: bool) -> str:
    pre = str(rng.choice(SSD_PREFIX if ssd else HDD_PREFIX))
    return pre + "".join(f"{b:02x}" for b in rng.integers(0, 256, 4))


def _nics(rng: Rng, mtu: int) -> list[Nic]:
    drv, desc, speed = FAST_NICS[int(rng.integers(len(FAST_NICS)))]
    sdrv, sdesc, _ = SLOW_NICS[int(rng.integers(len(SLOW_NICS)))]
    mac = ":".join(f"{b:02x}" for b in rng.integers(0, 256, 5))
    bus = int(rng.integers(2, 0x90))
    layout = int(rng.integers(3))
    out: list[Nic] = []
    # Some builds put vSAN on the second port pair, so the vSAN uplink is not always vmnic0/1.
    roles = [("mgmt", False), ("mgmt", False), ("vsan-active", True), ("vsan-standby", True)]
    if layout == 1:
        roles = [("vsan-active", True), ("vsan-standby", True)]
    elif layout == 2:
        roles = [("vsan-active", True), ("vsan-standby", True), ("unused", False), ("unused", False)]
    for i, (role, fast) in enumerate(roles):
        up = role != "unused" or rng.random() < 0.3
        nic_speed = speed if fast else 1000
        d, ds = (drv, desc) if fast else (sdrv, sdesc)
        if layout == 1 and role.startswith("vsan"):
            d, ds = drv, desc
        out.append(
            Nic(
                name=f"vmnic{i}",
                pci=f"0000:{bus + i // 2:02x}:00.{i % 2}",
                driver=d,
                desc=ds,
                speed=nic_speed if up else 0,
                duplex="Full" if up else "Half",
                link_up=up,
                mtu=mtu if role.startswith("vsan") else 1500,
                mac=f"{mac}:{(i * 7) % 256:02x}",
                role=role,
            )
        )
    return out


def build_cluster(rng: Rng, *, all_flash: bool, dedup: bool) -> Cluster:
    n_hosts = int(rng.choice([3, 4, 4, 4, 5, 6, 6, 8]))
    n_dg = int(rng.choice([1, 2, 2, 3]))
    n_cap = int(rng.integers(2, 6))
    # Keeps a bundle cheap to make: at most 72 devices.
    while n_hosts * n_dg * (n_cap + 1) > 72:
        if n_cap > 2:
            n_cap -= 1
        elif n_dg > 1:
            n_dg -= 1
        else:
            n_hosts -= 1
    mtu = 9000 if rng.random() < 0.6 else 1500
    cl = Cluster(uuid=vuuid(rng, "52"), hosts=[], dgs=[], all_flash=all_flash, dedup=dedup, mtu=mtu)
    cl.esxi8 = bool(rng.random() < 0.5)
    dom = str(rng.choice(DOMAINS))
    style = str(rng.choice(HOST_STYLES))
    rack = "abcd"[int(rng.integers(4))]
    first = int(rng.integers(1, 12))
    net = int(rng.integers(10, 200))
    cache_read, cache_write = (40.0, 25.0) if rng.random() < 0.5 else (90.0, 60.0)  # NVMe or SAS cache
    cap_read = float(rng.uniform(90, 180)) if all_flash else float(rng.uniform(4500, 7500))
    for i in range(n_hosts):
        name = style.format(i=first + i, r=rack) + "." + dom
        host = Host(i, name, vuuid(rng, "5"), [], _nics(rng, mtu), int(rng.choice([16, 20, 24, 28, 32])), "")
        host.client_iops = float(rng.uniform(6e4, 1.2e5)) * host.cores / 24
        host.ip = f"172.{net % 32 + 16}.{net}.{11 + first + i}"
        for _ in range(n_dg):
            gi = len(cl.dgs)
            cdev = _dev(rng, True)
            cu = vuuid(rng, "52")
            hba = int(rng.integers(1, 4))
            cache = Disk(cu, cdev, i, gi, True, True, cache_read, cache_write, 150000.0, f"vmhba{hba}:C0:T0:L0")
            caps = []
            for k in range(n_cap):
                caps.append(
                    Disk(
                        vuuid(rng, "52"),
                        _dev(rng, all_flash),
                        i,
                        gi,
                        False,
                        all_flash,
                        cap_read * float(rng.uniform(0.9, 1.1)),
                        cap_read * 1.3 if all_flash else cap_read * 0.9,
                        90000.0 if all_flash else 220.0,
                        f"vmhba{hba}:C0:T{k + 1}:L0",
                        float(rng.uniform(450e6, 900e6)) if all_flash else float(rng.uniform(140e6, 200e6)),
                    )
                )
            # Destage limit: sequential writes into the capacity tier, per device.
            per_dev = float(rng.uniform(250e6, 500e6)) if all_flash else float(rng.uniform(60e6, 110e6))
            dg = DiskGroup(gi, i, cache, caps, all_flash, per_dev * n_cap, float(rng.uniform(88, 98.5)))
            cl.dgs.append(dg)
            host.dgs.append(gi)
        cl.hosts.append(host)
    return cl


def add_vms(rng: Rng, cl: Cluster, per_host: tuple[int, int], disks: tuple[int, int]) -> None:
    n_dg = len(cl.dgs)
    for h in cl.hosts:
        for j in range(int(rng.integers(per_host[0], per_host[1] + 1))):
            a = int(rng.integers(n_dg))
            others = [g for g in range(n_dg) if cl.dgs[g].host != cl.dgs[a].host]
            b = int(rng.choice(others)) if others else a
            cl.vms.append(
                Vm(
                    uuid=vuuid(rng, "50"),
                    name=f"vm-{h.idx:02d}{j:02d}",
                    host=h.idx,
                    ndisks=int(rng.integers(disks[0], disks[1] + 1)),
                    read_frac=float(rng.uniform(0.5, 0.8)),
                    block=float(rng.choice([4096, 8192, 16384, 32768, 65536])),
                    replicas=(a, b),
                )
            )
