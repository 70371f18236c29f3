"""Cluster hardware: hosts, disk groups, devices, uplinks and VMs, drawn at random."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

Rng = np.random.Generator

# (driver, description, designed speed Mb/s, BASE-T (can fall back to 1G/100M))
FAST_NICS: tuple[tuple[str, str, int, bool], ...] = (
    ("ixgben", "Intel(R) 82599 10 Gigabit Dual Port Network Connection", 10000, False),
    ("ixgben", "Intel(R) Ethernet Controller X540-AT2", 10000, True),
    ("ixgben", "Intel(R) Ethernet Controller 10G X550T", 10000, True),
    ("i40en", "Intel(R) Ethernet Controller X710 for 10GbE SFP+", 10000, False),
    ("i40en", "Intel(R) Ethernet Controller XXV710 for 25GbE SFP28", 25000, False),
    ("icen", "Intel(R) Ethernet Controller E810-XXV for SFP", 25000, False),
    ("nmlx5_core", "Mellanox Technologies MT27800 Family [ConnectX-5]", 25000, False),
    ("nmlx5_core", "Mellanox Technologies MT28908 Family [ConnectX-6]", 100000, False),
    ("bnxtnet", "Broadcom BCM57414 NetXtreme-E 10Gb/25Gb RDMA Ethernet Controller", 25000, False),
    ("bnxtnet", "Broadcom BCM57416 NetXtreme-E Dual-Media 10G RDMA Ethernet Controller", 10000, True),
    ("qedentv", "QLogic FastLinQ QL41xxx 10/25 GbE Ethernet Adapter", 25000, False),
)
SLOW_NICS: tuple[tuple[str, str, int, bool], ...] = (
    ("igbn", "Intel Corporation I350 Gigabit Network Connection", 1000, True),
    ("ntg3", "Broadcom Corporation NetXtreme BCM5720 Gigabit Ethernet", 1000, True),
)
DOMAINS = ("lab.local", "corp.example.com", "vsan.internal", "dc1.example.net", "prod.acme.test", "")
PREFIXES = ("esx-{:02d}", "esxi{:02d}", "vsan-node{}", "hv{:03d}", "esx{}-r2", "node-{:02d}-a")


@dataclass
class Disk:
    uuid: str
    dev: str
    kind: str  # nvme | sas_ssd | sata_ssd | hdd
    cache: bool
    suffix: str  # CMMDS devName partition suffix
    size_gb: int

    @property
    def ssd(self) -> bool:
        return self.kind != "hdd"


@dataclass
class DiskGroup:
    cache: Disk
    caps: list[Disk]
    all_flash: bool
    dedup: bool
    compression: bool
    wb_bytes: float  # write buffer size
    drain_cap: float  # destage limit of the capacity tier, B/s
    iops_cap: float  # small-block IOPS the group can serve


@dataclass
class Nic:
    name: str
    pci: str
    driver: str
    desc: str
    speed: int
    duplex: str
    mtu: int
    mac: str
    up: bool
    role: str  # vsan | standby | mgmt | vm | vmotion | unused
    base_t: bool
    background: float = 0.0  # non-vSAN bytes/s each way


@dataclass
class Vm:
    name: str
    uuid: str
    host: int
    ndisks: int


@dataclass
class Host:
    name: str
    uuid: str
    dgs: list[DiskGroup]
    nics: list[Nic]
    cores: int
    vmk: str
    vsan_nic: int = 0  # index into nics of the active vSAN uplink

    @property
    def disks(self) -> list[Disk]:
        return [d for g in self.dgs for d in (g.cache, *g.caps)]


@dataclass
class Cluster:
    uuid: str
    hosts: list[Host]
    all_flash: bool
    mtu: int
    vms: list[Vm] = field(default_factory=list)
    esx8: bool = True
    portset: str = "DvsPortset-0"


def hexs(rng: Rng, n: int) -> str:
    return "".join(f"{int(x):x}" for x in rng.integers(0, 16, n))


def uuid(rng: Rng, first: str = "") -> str:
    h = first + hexs(rng, 32 - len(first))
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def mac(rng: Rng, oui: str) -> str:
    return oui + ":" + ":".join(f"{int(x):02x}" for x in rng.integers(0, 256, 3))


def device_name(rng: Rng, kind: str) -> str:
    if kind == "nvme":
        model = str(rng.choice(["INTEL_SSDPE2KX040T8", "Dell_Ent_NVMe_P5600_MU_U.2_1.6TB", "SAMSUNG_MZWLJ3T8HBLS"]))
        if rng.random() < 0.5:
            return "eui." + hexs(rng, 16)
        return f"t10.NVMe____{model}{'_' * int(rng.integers(2, 9))}{hexs(rng, 16).upper()}"
    prefix = {
        "hdd": ("5000c500", "5000cca0"),
        "sas_ssd": ("5000cca0", "58ce38ee"),
        "sata_ssd": ("55cd2e41", "5002538e"),
    }
    return "naa." + str(rng.choice(prefix[kind])) + hexs(rng, 8)


def make_cluster(rng: Rng, nhosts: int, *, all_flash: bool, dedup: bool, base_t: bool, esx8: bool) -> Cluster:
    dom = str(rng.choice(DOMAINS))
    pat = str(rng.choice(PREFIXES))
    first = int(rng.integers(1, 12))
    ngroups = int(rng.choice([1, 1, 2, 2, 2, 3]))
    ncap = int(rng.integers(1, 5)) if ngroups > 1 else int(rng.integers(2, 7))
    cache_kind = str(rng.choice(["nvme", "sas_ssd", "sata_ssd"], p=[0.45, 0.35, 0.2]))
    cap_kind = "hdd" if not all_flash else str(rng.choice(["sata_ssd", "sas_ssd", "nvme"], p=[0.5, 0.3, 0.2]))
    fast = [n for n in FAST_NICS if n[3]] if base_t else list(FAST_NICS)
    nic_model = fast[int(rng.integers(len(fast)))]
    mtu = 9000 if rng.random() < 0.6 else 1500
    layout = int(rng.integers(0, 3))
    cores = int(rng.choice([16, 20, 24, 28, 32, 48, 64]))
    hosts: list[Host] = []
    for i in range(nhosts):
        short = pat.format(first + i)
        name = f"{short}.{dom}" if dom else short
        groups = []
        for _ in range(ngroups):
            cache = Disk(
                uuid(rng, "52"), device_name(rng, cache_kind), cache_kind, True, str(rng.choice([":2", ":1", ""])), 800
            )
            caps = [
                Disk(
                    uuid(rng, "52"),
                    device_name(rng, cap_kind),
                    cap_kind,
                    False,
                    str(rng.choice([":2", ":1", ""])),
                    3840,
                )
                for _ in range(ncap)
            ]
            per_dev = {"hdd": 90e6, "sata_ssd": 320e6, "sas_ssd": 600e6, "nvme": 1100e6}[cap_kind]
            drain = per_dev * ncap * float(rng.uniform(0.5, 0.9))
            iops_dev = {"hdd": 250.0, "sata_ssd": 45e3, "sas_ssd": 70e3, "nvme": 150e3}[cap_kind]
            cache_iops = {"nvme": 200e3, "sas_ssd": 90e3, "sata_ssd": 60e3}[cache_kind]
            iops_cap = min(cache_iops, iops_dev * ncap * 1.3) if all_flash else cache_iops * 0.5
            groups.append(
                DiskGroup(
                    cache,
                    caps,
                    all_flash,
                    dedup,
                    dedup or (all_flash and rng.random() < 0.2),
                    float(rng.uniform(60e9, 600e9)),
                    drain,
                    iops_cap,
                )
            )
        nics = make_nics(rng, nic_model, layout, mtu)
        vsan = next(k for k, n in enumerate(nics) if n.role == "vsan")
        hosts.append(Host(name, uuid(rng), groups, nics, cores, str(rng.choice(["vmk1", "vmk2", "vmk3"])), vsan))
    return Cluster(uuid(rng, "52"), hosts, all_flash, mtu, [], esx8, str(rng.choice(["DvsPortset-0", "vSwitch1"])))


def make_nics(rng: Rng, model: tuple[str, str, int, bool], layout: int, mtu: int) -> list[Nic]:
    slow = SLOW_NICS[int(rng.integers(len(SLOW_NICS)))]
    oui_fast, oui_slow = str(rng.choice(["3c:fd:fe", "b4:96:91", "0c:42:a1", "00:0a:f7"])), "a0:36:9f"
    out: list[Nic] = []
    if layout == 0:  # two onboard 1G for management, two add-in ports for vSAN
        roles = [
            ("mgmt", slow),
            ("unused" if rng.random() < 0.5 else "mgmt", slow),
            ("vsan", model),
            ("standby", model),
        ]
    elif layout == 1:  # two fast ports carry everything
        roles = [("mgmt", model), ("vsan", model)]
    else:
        roles = [("mgmt", model), ("vm", model), ("vsan", model), ("vmotion", model)]
    if rng.random() < 0.3 and layout != 0:
        roles.append(("unused", slow))
    if layout != 0 and rng.random() < 0.5:  # vSAN uplink not always on the same port number
        k = [r[0] for r in roles].index("vsan")
        j = int(rng.integers(0, len(roles)))
        roles[k], roles[j] = roles[j], roles[k]
    bus = int(rng.choice([0x01, 0x04, 0x18, 0x3B, 0x81]))
    for i, (role, (drv, desc, speed, bt)) in enumerate(roles):
        up = role != "unused" or rng.random() < 0.3
        nm = mtu if role in ("vsan", "standby") else 1500
        out.append(
            Nic(
                f"vmnic{i}",
                f"0000:{bus + i // 2:02x}:00.{i % 2}",
                drv,
                desc,
                speed if up else 0,
                "Full" if up else "Half",
                nm,
                mac(rng, oui_slow if speed == 1000 else oui_fast),
                up,
                role,
                bt,
            )
        )
    return out


def place_vms(rng: Rng, cl: Cluster, nvms: int, ndisks: int, bench: bool) -> None:
    names = ("app", "db", "web", "sql", "exch", "vdi", "file", "k8s-w")
    for i in range(nvms):
        h = i % len(cl.hosts)
        nm = f"hci-vdb-{chr(97 + h)}-{i // len(cl.hosts) + 1:02d}" if bench else f"{names[i % len(names)]}{i + 1:02d}"
        nd = ndisks if bench else int(rng.integers(1, 5))
        cl.vms.append(Vm(nm, uuid(rng), h, nd))
