"""Cluster hardware and VM placement for one simulated bundle.

Two profiles: `lab` is a fixed 4-node cluster (PerfPsychic's hybrid test bed, plus the all-flash
dedup bed of the same lab for the hotspot experiments); `field` varies everything the way customer
escalations do (3-16 hosts, 1-5 disk groups, hybrid / all-flash / NVMe, 10 or 25 GbE, dedup).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from data.simulate.events import NicInfo

Rng = np.random.Generator


@dataclass(frozen=True)
class DeviceModel:
    media: str  # hdd | ssd | nvme
    model: str
    vendor_prefix: str  # naa OUI-ish prefix
    svc_ms: float  # 4 KiB random service time
    bw_mbs: float  # streaming bandwidth, MB/s
    par: float  # requests served in parallel (SSD channels; ~1 for a spindle)


HDD = DeviceModel("hdd", "ST1200MM0099", "5000c500", 5.5, 190.0, 1.6)
HDD_NL = DeviceModel("hdd", "ST4000NM0295", "5000c500", 7.5, 160.0, 1.3)
SAS_SSD = DeviceModel("ssd", "PX05SMB040", "58ce38ee", 0.09, 900.0, 24.0)
SATA_SSD = DeviceModel("ssd", "INTEL SSDSC2KG019T8", "55cd2e40", 0.11, 520.0, 16.0)
NVME = DeviceModel("nvme", "Dell Ent NVMe P5600 MU", "5cd2e4b1", 0.035, 3000.0, 64.0)


@dataclass
class Disk:
    uuid: str
    dev: str  # naa.… (no partition)
    tier: str  # cache | capacity
    hw: DeviceModel
    size_gb: int


@dataclass
class DiskGroup:
    cache: Disk
    capacity: list[Disk]
    wb_bytes: float  # write-buffer size
    destage_mbs: float  # how fast the capacity tier absorbs destaged data

    @property
    def uuid(self) -> str:
        return self.cache.uuid


@dataclass
class Host:
    name: str
    uuid: str
    esxi_major: int
    build: str
    n_cpus: int
    disk_groups: list[DiskGroup]
    nics: list[NicInfo]
    vsan_nic: int  # index into nics of the uplink that carries vSAN traffic
    standby_nic: int | None
    vmk_ip: str
    boot_dev: str

    @property
    def disks(self) -> list[Disk]:
        return [d for g in self.disk_groups for d in (g.cache, *g.capacity)]


@dataclass
class Cluster:
    profile: str
    uuid: str
    storage: str  # hybrid | allflash | nvme
    dedup: bool
    link_mbps: int
    mtu: int
    hosts: list[Host]
    vm_uuids: list[str] = field(default_factory=list)

    @property
    def disk_groups(self) -> list[tuple[int, DiskGroup]]:
        return [(h, g) for h, host in enumerate(self.hosts) for g in host.disk_groups]


def _uuid(rng: Rng, head: str = "") -> str:
    raw = head + rng.bytes(16).hex()
    raw = raw[:32]
    return f"{raw[:8]}-{raw[8:12]}-{raw[12:16]}-{raw[16:20]}-{raw[20:32]}"


def _naa(rng: Rng, hw: DeviceModel) -> str:
    return f"naa.{hw.vendor_prefix}{rng.bytes(4).hex()}"


def _mac(rng: Rng) -> str:
    return "00:" + ":".join(f"{b:02x}" for b in rng.bytes(5))


_NIC_HW = {
    1000: ("igbn", "Intel Corporation I350 Gigabit Network Connection"),
    10000: ("ixgben", "Intel(R) Ethernet Controller X710 for 10GbE SFP+"),
    25000: ("nmlx5_core", "Mellanox Technologies ConnectX-4 Lx EN NIC; 25GbE; dual-port SFP28"),
}


def _nics(rng: Rng, n: int, vsan_idx: int, standby: int | None, link: int, mtu: int, down: int = 0) -> list[NicInfo]:
    """n ports in use, then `down` unused ports without a cable (nicinfo: Link Down, Speed 0, Half)."""
    out = []
    for i in range(n):
        # vmnic0 is the on-board management port: 1 GbE on many servers, which is benign.
        speed = 1000 if i == 0 and rng.random() < 0.5 else link
        drv, desc = _NIC_HW[speed if speed in _NIC_HW else 10000]
        bus = 2 + i // 2
        out.append(
            NicInfo(
                name=f"vmnic{i}",
                pci=f"0000:{bus:02x}:00.{i % 2}",
                driver=drv,
                mac=_mac(rng),
                speed_mbps=speed,
                duplex="Full",
                mtu=mtu if i in (vsan_idx, standby) else 1500,
                description=desc,
            )
        )
    for i in range(n, n + down):
        drv, desc = _NIC_HW[1000 if rng.random() < 0.5 else link]
        mac = _mac(rng)
        out.append(NicInfo(f"vmnic{i}", f"0000:{2 + i // 2:02x}:00.{i % 2}", drv, mac, 0, "Half", 1500, desc, False))
    return out


def to_jumbo(cluster: Cluster) -> None:
    """Move a cluster's vSAN network to jumbo frames: MTU 9000 on every host's vSAN uplink and standby
    (a cluster where one host was missed in that change is net.link_degraded's MTU mismatch)."""
    cluster.mtu = 9000
    for host in cluster.hosts:
        for i in (host.vsan_nic, host.standby_nic):
            if i is not None:
                host.nics[i] = replace(host.nics[i], mtu=9000)


def _disk_group(rng: Rng, storage: str, n_cap: int, dedup: bool, hw: dict[str, DeviceModel] | None = None) -> DiskGroup:
    if storage == "hybrid":
        cache_hw, cap_hw = SAS_SSD, (HDD if rng.random() < 0.7 else HDD_NL)
        cache_gb = int(rng.choice([400, 800]))
        wb = 0.3 * cache_gb * 1e9  # hybrid: 70 % read cache, 30 % write buffer
    elif storage == "allflash":
        cache_hw, cap_hw = SAS_SSD, SATA_SSD
        cache_gb = int(rng.choice([400, 800, 1600]))
        wb = min(cache_gb, 600) * 1e9
    else:
        cache_hw, cap_hw = NVME, NVME
        cache_gb = int(rng.choice([800, 1600]))
        wb = min(cache_gb, 600) * 1e9
    if hw:  # this site's models of the same class: somewhat faster or slower than the reference ones
        cache_hw, cap_hw = hw.get(cache_hw.model, cache_hw), hw.get(cap_hw.model, cap_hw)
    cache = Disk(_uuid(rng, "52"), _naa(rng, cache_hw), "cache", cache_hw, cache_gb)
    caps = [
        Disk(_uuid(rng, "52"), _naa(rng, cap_hw), "capacity", cap_hw, int(rng.choice([1200, 1920, 3840])))
        for _ in range(n_cap)
    ]
    # Destage is partly sequential: a spindle absorbs ~35 % of its streaming rate, flash ~50 %
    # (less with dedup/compression, which does the work inline on destage).
    eff = 0.35 if cap_hw.media == "hdd" else (0.3 if dedup else 0.5)
    destage = eff * cap_hw.bw_mbs * n_cap
    return DiskGroup(cache, caps, wb, destage)


_NAME_STYLES = (
    "esx-{i:02d}.{dom}",
    "esx{i:02d}.{dom}",
    "vsan-node-{i:02d}.{dom}",
    "hv{i:03d}.{dom}",
    "{site}-esx-{i:02d}.{dom}",
)
_DOMAINS = ("corp.example.com", "dc1.example.net", "vmware.lab", "prod.example.org", "cloud.example.io")
_BUILDS = {7: ("7.0.3-21686933", "7.0.3-22348816", "7.0.3-23794027"), 8: ("8.0.2-22380479", "8.0.3-24022510")}


def build_cluster(profile: str, rng: Rng, dedup_flash: bool = False) -> Cluster:
    """A cluster of the profile; `dedup_flash` insists on all-flash with deduplication."""
    if profile == "lab":
        return _lab(rng, dedup_flash)
    if profile == "field":
        return _field(rng, dedup_flash)
    raise ValueError(f"unknown profile {profile!r}")


def _host(
    rng: Rng,
    name: str,
    storage: str,
    dedup: bool,
    n_dg: int,
    caps: list[int],
    n_nics: int,
    vsan_idx: int,
    standby: int | None,
    link: int,
    mtu: int,
    esxi: int,
    n_cpus: int,
    ip: str,
    down: int = 0,
    hw: dict[str, DeviceModel] | None = None,
) -> Host:
    return Host(
        name=name,
        uuid=_uuid(rng),
        esxi_major=esxi,
        build=str(rng.choice(_BUILDS[esxi])),
        n_cpus=n_cpus,
        disk_groups=[_disk_group(rng, storage, caps[i], dedup, hw) for i in range(n_dg)],
        nics=_nics(rng, n_nics, vsan_idx, standby, link, mtu, down),
        vsan_nic=vsan_idx,
        standby_nic=standby,
        vmk_ip=ip,
        boot_dev=f"naa.600508b1{rng.bytes(4).hex()}",
    )


def _lab(rng: Rng, dedup_flash: bool) -> Cluster:
    # The lab's two fixed beds: the 4-node hybrid cluster, and the same nodes rebuilt all-flash
    # with deduplication for the dedup/hotspot experiments (about a third of the lab's runs).
    allflash = rng.random() < 0.3 or dedup_flash
    storage, dedup = ("allflash", True) if allflash else ("hybrid", False)
    hosts = [
        _host(
            rng,
            f"esx-{i + 1:02d}.lab.local",
            storage,
            dedup,
            2,
            [3, 3],
            4,
            1,
            2,
            10000,
            9000,
            7,
            24,
            f"192.168.50.{11 + i}",
        )
        for i in range(4)
    ]
    return Cluster("lab", _uuid(rng, "52"), storage, dedup, 10000, 9000, hosts)


def _field(rng: Rng, dedup_flash: bool) -> Cluster:
    n_hosts = int(rng.choice(np.arange(3, 17), p=_field_host_p()))
    storage = str(rng.choice(["hybrid", "allflash", "nvme"], p=[0.35, 0.45, 0.2]))
    dedup = storage != "hybrid" and rng.random() < 0.45
    if dedup_flash:
        storage, dedup = ("nvme" if storage == "nvme" else "allflash"), True
    link = 10000 if rng.random() < 0.6 else 25000
    mtu = 9000 if rng.random() < 0.6 else 1500
    n_dg = int(rng.choice([1, 2, 3, 4, 5], p=[0.25, 0.4, 0.15, 0.12, 0.08]))
    n_cap = int(rng.choice([1, 2, 3, 4, 5, 6, 7], p=[0.1, 0.2, 0.25, 0.2, 0.1, 0.1, 0.05]))
    n_nics = int(rng.choice([2, 3, 4, 6], p=[0.2, 0.2, 0.45, 0.15]))
    vsan_idx = int(rng.integers(1, n_nics))
    standby = next((i for i in range(1, n_nics) if i != vsan_idx), None) if rng.random() < 0.6 else None
    esxi = 7 if rng.random() < 0.5 else 8
    n_cpus = int(rng.choice([16, 24, 32, 48, 64]))
    style = str(rng.choice(_NAME_STYLES))
    dom = str(rng.choice(_DOMAINS))
    site = str(rng.choice(["ams", "fra", "nyc", "sjc", "sg"]))
    net = int(rng.integers(10, 250))
    down = int(rng.choice([0, 1, 2], p=[0.65, 0.2, 0.15]))  # unused ports without a cable
    hw = {  # device speeds vary from site to site (model, firmware, controller)
        m.model: replace(m, svc_ms=m.svc_ms * rng.uniform(0.75, 1.35), bw_mbs=m.bw_mbs * rng.uniform(0.75, 1.3))
        for m in (HDD, HDD_NL, SAS_SSD, SATA_SSD, NVME)
    }
    hosts = [
        _host(
            rng,
            style.format(i=i + 1, dom=dom, site=site),
            storage,
            dedup,
            n_dg,
            [n_cap] * n_dg,
            n_nics,
            vsan_idx,
            standby,
            link,
            mtu,
            esxi,
            n_cpus,
            f"10.{net}.{i // 200}.{10 + i % 200}",
            down,
            hw,
        )
        for i in range(n_hosts)
    ]
    if link == 25000:
        _older_generation(hosts, rng.spawn(1)[0])
    return Cluster("field", _uuid(rng, "52"), storage, dedup, link, mtu, hosts)


OLDER_GENERATION_P = 0.25  # 25 GbE field clusters that still hold 10 GbE hosts


def _older_generation(hosts: list[Host], rng: Rng) -> None:
    """A cluster grown with 25 GbE hosts keeps some of its 10 GbE ones (up to half): their ports run
    at their own rated 10 Gb/s, which is the hardware, not a link that negotiated down. A child
    stream (spawning draws nothing from `rng`), so every other bundle stays as it was drawn."""
    if rng.random() >= OLDER_GENERATION_P:
        return
    k = int(rng.integers(1, max(1, len(hosts) // 2) + 1))
    drv, desc = _NIC_HW[10000]
    for h in rng.choice(len(hosts), size=k, replace=False):
        host = hosts[int(h)]
        host.nics = [
            replace(n, speed_mbps=10000, driver=drv, description=desc) if n.link_up and n.speed_mbps == 25000 else n
            for n in host.nics
        ]


def _field_host_p() -> np.ndarray:
    w = np.array([8, 10, 7, 6, 5, 6, 3, 3, 2, 2, 2, 1, 1, 2], dtype=float)  # 3..16 hosts
    return w / w.sum()
