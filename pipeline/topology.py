"""Records -> the canonical components of bundle-format.md section 6, with every source attached.

Host names come from CMMDS HOSTNAME; a host folder's name is only a hint (host names contain
dashes). Disks and disk groups come from CMMDS DISK entries (the storage list fills in when CMMDS
lacks them); NICs from vsan-pnic-net entities and nicinfo rows.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pipeline.errors import LimitExceeded
from pipeline.parse.bundle import HostFolder, ParsedBundle
from pipeline.parse.esxcli import NicRow, StorageDevice
from pipeline.parse.esxtop import EsxtopCapture
from pipeline.parse.logs import LogFile
from vsandx.components import CLUSTER_ID, disk_id, diskgroup_id, host_id, nic_id, strip_partition

KIND_ORDER = ("cluster", "host", "nic", "diskgroup", "disk")


@dataclass
class Component:
    id: str
    kind: str
    host: str | None = None  # hostname (None for the cluster)
    uuid: str | None = None  # host UUID, disk UUID, or the cache disk UUID for a disk group
    device: str | None = None  # disk device / a group's cache device
    vmnic: str | None = None
    group: str | None = None  # disk: its disk group's component id
    is_cache: bool | None = None
    is_ssd: bool | None = None
    storage: StorageDevice | None = None
    nicinfo: NicRow | None = None


@dataclass
class Topology:
    components: dict[str, Component] = field(default_factory=dict)  # id -> component, KIND_ORDER order
    host_uuid: dict[str, str] = field(default_factory=dict)  # hostname -> host UUID
    host_of_uuid: dict[str, str] = field(default_factory=dict)  # host UUID -> hostname
    disk_of_uuid: dict[str, str] = field(default_factory=dict)  # disk UUID -> component id
    dg_of_uuid: dict[str, str] = field(default_factory=dict)  # cache disk UUID -> diskgroup id
    disk_of_dev: dict[tuple[str, str], str] = field(default_factory=dict)  # (host, device) -> id
    folder_host: dict[str, str] = field(default_factory=dict)  # host folder -> hostname
    logs: dict[str, list[LogFile]] = field(default_factory=dict)  # hostname -> its log files
    esxtop: dict[str, list[EsxtopCapture]] = field(default_factory=dict)  # hostname -> captures
    collected: dict[str, int] = field(default_factory=dict)  # hostname -> bundle collection time
    unattached: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def of_kind(self, kind: str) -> list[Component]:
        return [c for c in self.components.values() if c.kind == kind]

    @property
    def hosts(self) -> list[str]:
        return [c.host for c in self.of_kind("host") if c.host]

    def add(self, c: Component) -> Component:
        return self.components.setdefault(c.id, c)


def _folder_host(f: HostFolder, pb: ParsedBundle, names: set[str]) -> str | None:
    owners = Counter(pb.cmmds.disks[d.uuid].owner for d in f.storage if d.uuid and d.uuid in pb.cmmds.disks)
    for owner, _n in owners.most_common(1):
        hn = pb.cmmds.hosts.get(owner)
        if hn:
            return hn
    hint = f.name_hint
    for cand in (hint, hint.lower()):
        if cand in names:
            return cand
    short = [n for n in names if n.split(".")[0] == hint.split(".")[0]]
    return short[0] if len(short) == 1 else None


def build_topology(pb: ParsedBundle) -> Topology:
    topo = Topology()
    topo.add(Component(CLUSTER_ID, "cluster"))
    cm = pb.cmmds
    for u, hn in sorted(cm.hosts.items(), key=lambda kv: kv[1]):
        topo.host_uuid.setdefault(hn, u)
        topo.host_of_uuid[u] = hn
    names = set(topo.host_uuid)
    for path, f in sorted(pb.folders.items()):
        got = _folder_host(f, pb, names)
        if got is None:
            if cm.hosts:
                topo.warnings.append(f"{path}: host folder matches no CMMDS host; using its name {f.name_hint!r}")
            got = f.name_hint
        topo.folder_host[path] = got
    all_hosts = sorted(set(topo.host_uuid) | set(topo.folder_host.values()))
    for hn in all_hosts:
        topo.add(Component(host_id(hn), "host", host=hn, uuid=topo.host_uuid.get(hn)))

    _nics(topo, pb)
    _disks(topo, pb)
    _attach_captures(topo, pb)
    # final order: by kind, then id
    topo.components = dict(sorted(topo.components.items(), key=lambda kv: (KIND_ORDER.index(kv[1].kind), kv[0])))
    return topo


def check_components(topo: Topology, limit: int, where: str) -> None:
    """Tensors are (components x channels x T) per kind: a bundle naming more components of a kind
    than `limit` (max_components) is refused before any is allocated."""
    for kind, n in Counter(c.kind for c in topo.components.values()).items():
        if n > limit:
            raise LimitExceeded("max_components", where, f"{n} {kind} components, more than {limit}")


def _nics(topo: Topology, pb: ParsedBundle) -> None:
    found: set[tuple[str, str]] = set()
    for ent in pb.perf.values():
        if ent.etype != "vsan-pnic-net":
            continue
        hu, _, nic = ent.eid.partition("|")
        hn = topo.host_of_uuid.get(hu)
        if hn is None or not nic:
            topo.warnings.append(f"perf entity {ent.ref}: host UUID not in CMMDS")
            continue
        found.add((hn, nic))
    rows: dict[tuple[str, str], NicRow] = {}
    for path, f in pb.folders.items():
        for r in f.nics:
            rows[(topo.folder_host[path], r.name)] = r
    for hn, nic in sorted(found | set(rows)):
        topo.add(
            Component(
                nic_id(hn, nic),
                "nic",
                host=hn,
                vmnic=nic,
                uuid=topo.host_uuid.get(hn),
                nicinfo=rows.get((hn, nic)),
            )
        )


def _disks(topo: Topology, pb: ParsedBundle) -> None:
    cm = pb.cmmds
    storage: dict[str, StorageDevice] = {}  # disk UUID -> row
    by_dev: dict[tuple[str, str], StorageDevice] = {}
    for path, f in pb.folders.items():
        for d in f.storage:
            if d.uuid:
                storage[d.uuid] = d
            by_dev[(topo.folder_host[path], d.device)] = d
    # (uuid, host, device, cache uuid, is_ssd)
    disks: list[tuple[str, str, str, str, bool | None]] = []
    for u, cd in cm.disks.items():
        owner = topo.host_of_uuid.get(cd.owner)
        if owner is None:
            topo.warnings.append(f"CMMDS disk {cd.device}: owner {cd.owner} has no HOSTNAME entry")
            continue
        disks.append((u, owner, cd.device, cd.ssd_uuid, cd.is_ssd))
    known = {u for u, *_ in disks}
    for (hn, dev), s in sorted(by_dev.items()):
        if s.uuid and s.uuid not in known and s.dg_uuid:
            disks.append((s.uuid, hn, dev, s.dg_uuid, s.is_ssd))
            known.add(s.uuid)
    dev_of = {u: (hn, dev) for u, hn, dev, _c, _s in disks}
    for u, hn, dev, cache, ssd in sorted(disks, key=lambda x: (x[1], x[2])):
        is_cache = cache == u
        if cache not in dev_of:
            topo.warnings.append(f"disk {hn}/{dev}: its cache disk {cache} is unknown")
            group = None
        else:
            gid = diskgroup_id(*dev_of[cache])
            group = gid
            topo.add(
                Component(
                    gid,
                    "diskgroup",
                    host=dev_of[cache][0],
                    uuid=cache,
                    device=dev_of[cache][1],
                    storage=storage.get(cache) or by_dev.get(dev_of[cache]),
                )
            )
            topo.dg_of_uuid[cache] = gid
        did = disk_id(hn, dev)
        topo.add(
            Component(
                did,
                "disk",
                host=hn,
                uuid=u,
                device=strip_partition(dev),
                group=group,
                is_cache=is_cache,
                is_ssd=ssd,
                storage=storage.get(u) or by_dev.get((hn, dev)),
            )
        )
        topo.disk_of_uuid[u] = did
        topo.disk_of_dev[(hn, strip_partition(dev))] = did


def _attach_captures(topo: Topology, pb: ParsedBundle) -> None:
    devs_of: dict[str, set[str]] = {}
    for hn, dev in topo.disk_of_dev:
        devs_of.setdefault(hn, set()).add(dev)
    for path, f in pb.folders.items():
        hn = topo.folder_host[path]
        topo.logs.setdefault(hn, []).extend(f.logs)
        if f.collected is not None:
            topo.collected[hn] = max(topo.collected.get(hn, 0), f.collected)
        topo.esxtop.setdefault(hn, []).extend(f.esxtop)
    names = set(topo.hosts)
    for path, cap in pb.loose_esxtop:
        found = _match_capture(cap.host_label, set(cap.disk), names, devs_of)
        if found is None:
            topo.unattached.append(f"{path}: esxtop capture of {cap.host_label!r} matches no host")
        else:
            topo.esxtop.setdefault(found, []).append(cap)
    for path, lf in pb.loose_logs:
        devs = {e.device for e in lf.events if e.device}
        found = _match_capture("", devs, names, devs_of)
        if found is None:
            topo.unattached.append(f"{path}: log outside a host folder, host unknown")
        else:
            topo.logs.setdefault(found, []).append(lf)


def _match_capture(label: str, devices: set[str], names: set[str], devs_of: dict[str, set[str]]) -> str | None:
    """The host a loose capture belongs to: by name, else by the device names it shares."""
    if label in names:
        return label
    short = [n for n in names if label and n.split(".")[0] == label.split(".")[0]]
    if len(short) == 1:
        return short[0]
    scores = sorted(((len(devices & ds), hn) for hn, ds in devs_of.items()), reverse=True)
    if scores and scores[0][0] > 0 and (len(scores) == 1 or scores[1][0] < scores[0][0]):
        return scores[0][1]
    return None
